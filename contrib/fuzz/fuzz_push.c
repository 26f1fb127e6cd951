/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target over the strict reader, the RFC 8785 writer, push
 * validation and the fingerprints. Properties checked beyond "no crash":
 * canonical output re-parses and is a fixed point, a valid push request
 * fingerprints without error, and the peek of its ids (request_digest.h)
 * answers nothing or the parsed ids, never others.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/fingerprint.h"
#include "synchro/jcs.h"
#include "synchro/json.h"
#include "synchro/manifest.h"
#include "synchro/push.h"
#include "synchro/request_digest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_canonical_fixed_point(const sy_json *root)
{
	sy_buf once = SY_BUF_INIT, twice = SY_BUF_INIT;
	sy_error err;
	if (!sy_jcs_write(&once, root, &err)) {
		/* Only overflowing numbers (1e400) may be refused. */
		if (err.code != SY_ERR_INVALID_REQUEST)
			abort();
		goto done;
	}
	sy_json_doc *again = sy_json_parse(once.data, once.len, &err);
	if (again == NULL)
		abort(); /* canonical output must be valid JSON */
	if (!sy_jcs_write(&twice, sy_json_doc_root(again), &err))
		abort();
	if (once.len != twice.len || memcmp(once.data, twice.data, once.len) != 0)
		abort(); /* JCS must be a fixed point */
	sy_json_doc_free(again);
done:
	sy_buf_free(&once);
	sy_buf_free(&twice);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sy_error err;
	sy_json_doc *doc = sy_json_parse((const char *)data, size, &err);
	if (doc != NULL) {
		check_canonical_fixed_point(sy_json_doc_root(doc));
		sy_json_doc_free(doc);
	} else if (err.code != SY_ERR_INVALID_REQUEST) {
		abort();
	}

	char client_id[SY_UUID_LEN + 1], batch_id[SY_UUID_LEN + 1];
	bool peeked = sy_request_peek_ids((const char *)data, size, client_id, batch_id);
	sy_push_request *req = sy_push_parse((const char *)data, size, &err);
	if (req != NULL) {
		/* a wrong peek would only lose the digest's short way; still, it never is */
		if (peeked && (strcmp(client_id, req->client_id) != 0 ||
		               strcmp(batch_id, req->batch_id) != 0))
			abort();
		sy_fingerprint batch;
		sy_fingerprint *muts = calloc(req->mutation_count, sizeof *muts);
		if (muts == NULL)
			abort();
		if (!sy_fp_push(req, "alice", 5, &batch, muts, &err))
			abort();
		free(muts);
		sy_push_request_free(req);
	} else if (err.code != SY_ERR_INVALID_REQUEST || err.message[0] == '\0') {
		abort();
	}

	sy_manifest *m = sy_manifest_parse((const char *)data, size, &err);
	sy_manifest_free(m);
	return 0;
}
