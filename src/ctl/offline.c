/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * offline.c: synchroctl canonicalize and fingerprint. They run offline, with no database.
 *
 * Layer: middle of src/ctl (doc/hacking.md).
 * Rules: doc/contract.md#offline-tools (what the two commands print).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/commands.h"
#include "synchro/alloc.h"
#include "synchro/fingerprint.h"
#include "synchro/jcs.h"
#include "synchro/json.h"
#include "synchro/push.h"

/* One line on stderr, whatever the message holds. */
static void complain(const char *cmd, const char *msg)
{
	fprintf(stderr, "synchroctl: %s: ", cmd);
	for (const char *p = msg; *p != '\0'; p++)
		fputc(*p == '\n' || *p == '\r' ? ' ' : *p, stderr);
	fputc('\n', stderr);
}

/* Exit status of a library error: bad input is a usage error, anything else a failure. */
static int status_of(const sy_error *err)
{
	return err->code == SY_ERR_NOMEM ? SY_CTL_EXIT_FAILURE : SY_CTL_EXIT_USAGE;
}

/*
 * Reads standard input, at most max + 1 octets so the caller can tell an
 * oversized input without reading it all. Returns a malloc()ed buffer or NULL
 * (message already printed).
 */
static char *read_stdin(const char *cmd, size_t max, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	if (buf == NULL)
		goto nomem;
	for (;;) {
		if (n == cap) {
			size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			char *p = realloc(buf, ncap);
			if (p == NULL)
				goto nomem;
			buf = p;
			cap = ncap;
		}
		size_t r = fread(buf + n, 1, cap - n, stdin);
		n += r;
		if (n > max)
			break;
		if (r == 0) {
			if (ferror(stdin)) {
				char msg[128];
				snprintf(msg, sizeof msg, "cannot read standard input: %s",
				         strerror(errno));
				complain(cmd, msg);
				free(buf);
				return NULL;
			}
			break;
		}
	}
	*len = n;
	return buf;
nomem:
	complain(cmd, "out of memory");
	free(buf);
	return NULL;
}

static int write_stdout(const char *cmd, const char *data, size_t len)
{
	if ((len > 0 && fwrite(data, 1, len, stdout) != len) || fflush(stdout) != 0) {
		complain(cmd, "cannot write standard output");
		return SY_CTL_EXIT_FAILURE;
	}
	return SY_CTL_EXIT_OK;
}

int sy_ctl_canonicalize(int argc, char **argv)
{
	const char *cmd = "canonicalize";
	sy_error err;
	sy_buf out = SY_BUF_INIT;
	sy_json_doc *doc = NULL;
	size_t len = 0;
	int status = SY_CTL_EXIT_USAGE;
	(void)argv;
	if (argc != 1) {
		fputs("usage: synchroctl canonicalize < FILE\n", stderr);
		return SY_CTL_EXIT_USAGE;
	}
	sy_error_clear(&err);
	char *in = read_stdin(cmd, SY_PUSH_MAX_BODY, &len);
	if (in == NULL)
		return SY_CTL_EXIT_FAILURE;
	if (len > SY_PUSH_MAX_BODY) {
		complain(cmd, "input exceeds 1048576 octets");
		goto done;
	}
	doc = sy_json_parse(in, len, &err);
	if (doc == NULL || !sy_jcs_write(&out, sy_json_doc_root(doc), &err)) {
		complain(cmd, err.message);
		status = status_of(&err);
		goto done;
	}
	status = write_stdout(cmd, out.data, out.len);
done:
	sy_buf_free(&out);
	sy_json_doc_free(doc);
	free(in);
	return status;
}

static int fingerprint_usage(void)
{
	fputs("usage: synchroctl fingerprint --user USER [--preimages] < PUSH.json\n", stderr);
	return SY_CTL_EXIT_USAGE;
}

/* {"batch_fingerprint":hex,"mutations":[{"fingerprint":hex,"mutation_id":id},...]} as JCS. */
static bool write_fingerprints(sy_buf *out, const sy_push_request *req, const sy_fingerprint *batch,
                               const sy_fingerprint *fps, sy_error *err)
{
	char hex[SY_FP_HEX_LEN + 1];
	bool ok = false;
	sy_json_doc *doc = sy_json_doc_new();
	sy_json *root = sy_json_new_object(doc);
	sy_json *list = sy_json_new_array(doc);
	sy_fp_hex(batch->digest, hex);
	if (!sy_json_object_put(doc, root, "batch_fingerprint", sy_json_new_cstring(doc, hex)) ||
	    !sy_json_object_put(doc, root, "mutations", list))
		goto nomem;
	for (size_t i = 0; i < req->mutation_count; i++) {
		sy_json *item = sy_json_new_object(doc);
		sy_fp_hex(fps[i].digest, hex);
		if (!sy_json_object_put(doc, item, "mutation_id",
		                        sy_json_new_cstring(doc, req->mutations[i].mutation_id)) ||
		    !sy_json_object_put(doc, item, "fingerprint", sy_json_new_cstring(doc, hex)) ||
		    !sy_json_array_push(doc, list, item))
			goto nomem;
	}
	ok = sy_jcs_write(out, root, err);
	sy_json_doc_free(doc);
	return ok;
nomem:
	sy_json_doc_free(doc);
	return sy_error_set(err, SY_ERR_NOMEM, "out of memory");
}

/* The batch preimage, then each mutation-scope preimage, one per line (JCS has no raw newline). */
static bool write_preimages(sy_buf *out, const sy_push_request *req, const char *user,
                            sy_error *err)
{
	if (!sy_fp_batch_preimage(req, user, strlen(user), out, err))
		return false;
	if (!sy_buf_putc(out, '\n'))
		return sy_error_set(err, SY_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < req->mutation_count; i++) {
		if (!sy_fp_mutation_preimage(req, &req->mutations[i], user, strlen(user), out, err))
			return false;
		if (!sy_buf_putc(out, '\n'))
			return sy_error_set(err, SY_ERR_NOMEM, "out of memory");
	}
	return true;
}

int sy_ctl_fingerprint(int argc, char **argv)
{
	const char *cmd = "fingerprint";
	const char *user = NULL;
	bool preimages = false;
	sy_error err;
	sy_buf out = SY_BUF_INIT;
	sy_push_request *req = NULL;
	sy_fingerprint batch, *fps = NULL;
	char *in = NULL;
	size_t len = 0;
	int status = SY_CTL_EXIT_USAGE;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--user") == 0 && i + 1 < argc)
			user = argv[++i];
		else if (strncmp(argv[i], "--user=", 7) == 0)
			user = argv[i] + 7;
		else if (strcmp(argv[i], "--preimages") == 0)
			preimages = true;
		else
			return fingerprint_usage();
	}
	if (user == NULL)
		return fingerprint_usage();
	sy_error_clear(&err);
	if (!sy_fp_user_valid(user, strlen(user), &err)) {
		complain(cmd, err.message);
		return SY_CTL_EXIT_USAGE;
	}
	/* one octet past the limit is enough for sy_push_parse() to refuse, as /v3/push does */
	in = read_stdin(cmd, SY_PUSH_MAX_BODY, &len);
	if (in == NULL)
		return SY_CTL_EXIT_FAILURE;
	req = sy_push_parse(in, len, &err);
	if (req == NULL)
		goto fail;
	if (preimages) {
		if (!write_preimages(&out, req, user, &err))
			goto fail;
	} else {
		fps = calloc(req->mutation_count, sizeof *fps);
		if (fps == NULL) {
			sy_error_set(&err, SY_ERR_NOMEM, "out of memory");
			goto fail;
		}
		if (!sy_fp_push(req, user, strlen(user), &batch, fps, &err) ||
		    !write_fingerprints(&out, req, &batch, fps, &err))
			goto fail;
	}
	status = write_stdout(cmd, out.data, out.len);
	goto done;
fail:
	complain(cmd, err.message);
	status = status_of(&err);
done:
	sy_buf_free(&out);
	free(fps);
	sy_push_request_free(req);
	free(in);
	return status;
}
