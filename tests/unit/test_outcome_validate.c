/* SPDX-License-Identifier: BSD-2-Clause */
/* The response validator, and every allocation of the outcome module failing (test_outcome.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/fingerprint.h"
#include "synchro/outcome.h"
#include "test_outcome.h"
#include "testutil.h"

/* ---- the validator ---- */

static void assert_valid(const char *req_text, const char *resp_text)
{
	sy_push_request *req = request(req_text);
	sy_error err;
	bool ok = validate_text(req, resp_text, &err);
	if (!ok)
		fprintf(stderr, "\nrefused: %s\n", err.message);
	CU_ASSERT_TRUE(ok);
	sy_push_request_free(req);
}

void test_validate_valid(void)
{
	assert_valid(request_text, response_text);
	assert_valid(atomic_text, atomic_ok_text);
	assert_valid(atomic_text, atomic_conflict_text);
	assert_valid(atomic_text, atomic_invalid_text);
	/* the pk value is compared by its JCS bytes: 4.2e1 echoes 42 */
	char *s = strdup(response_text);
	replace_all(&s, PK("n", "42"), PK("n", "4.2e1"));
	CU_ASSERT_PTR_NULL(strstr(s, PK("n", "42")));
	assert_valid(request_text, s);
	free(s);
	/* member order is free: a client validates what it parsed */
	assert_valid(request_text,
	             "{\"server_time\":\"" TIME "\",\"rejected\":[" E_R2 "," E_R4 "," E_R5 "," E_R6
	             "],\"batch_id\":\"" BATCH "\",\"accepted\":[" E_A1 "," E_A3 "]}");
	/* everything rejected, and everything accepted, are both partitions */
	static const char one_req[] =
	        "{\"client_id\":\"" CLIENT "\",\"client_generation\":1,\"batch_id\":\"" BATCH "\","
	        "\"schema\":" S2 ",\"mutations\":[" MUT(M6, "todo", "id", "\"" K9 "\"", S2,
	                                                "insert", ",\"columns\":{}") "]}";
	assert_valid(one_req, "{\"accepted\":[],\"batch_id\":\"" BATCH "\",\"rejected\":[" E_R6
	                      "],\"server_time\":\"" TIME "\"}");
}

/* One rule broken: replace `from` (which occurs exactly once) in `base` by `to`. */
typedef struct {
	const char *base;
	const char *from;
	const char *to;
	const char *message;
} negative;

#define NA response_text
#define AC atomic_conflict_text
#define AI atomic_invalid_text
#define AO atomic_ok_text

static const negative negatives[] = {
        /* envelope */
        {NA,
         "\"server_time\":", "\"extra\":1,\"server_time\":", "response: unknown member \"extra\""},
        {NA, ",\"server_time\":\"" TIME "\"", "", "response: missing member \"server_time\""},
        {NA, "\"batch_id\":\"" BATCH "\"", "\"batch_id\":\"" ABATCH "\"",
         "batch_id: does not echo the request"},
        {NA, "\"server_time\":\"" TIME "\"", "\"server_time\":\"2026-07-18T10:00:00.123Z\"",
         "server_time: not a server time"},
        {NA, "\"rejected\":[" E_R2 "," E_R4 "," E_R5 "," E_R6 "]", "\"rejected\":{}",
         "rejected: not an array"},
        {NA, "\"accepted\":[" E_A1, "\"accepted\":[7", "accepted[0]: not an object"},
        /* partition */
        {NA, "\"status\":\"applied\",\"table\":\"todo\"}]",
         "\"status\":\"conflict\","
         "\"table\":\"todo\"}]",
         "accepted[1].status: accepted holds only applied"},
        {NA, "\"server_version\":\"v-14\",\"status\":\"conflict\"",
         "\"server_version\":\"v-14\",\"status\":\"applied\"",
         "rejected[2].status: rejected holds only conflict or rejected_terminal"},
        {NA, "\"status\":\"rejected_terminal\",\"table\":\"todo\"",
         "\"status\":\"rejected_retryable\",\"table\":\"todo\"",
         "rejected[3].status: not a status"},
        {NA, "\"mutation_id\":\"" M6 "\"",
         "\"mutation_id\":\"06000000-0000-4000-8000-000000000099\"",
         "rejected[3].mutation_id: not in the request"},
        {NA, "\"mutation_id\":\"" M3 "\"", "\"mutation_id\":\"" M1 "\"",
         "accepted[1].mutation_id: appears more than once"},
        {NA, "," E_R6 "]", "]", "mutations[5] (" M6 "): missing from the response"},
        {NA, "\"rejected\":[" E_R2 "," E_R4, "\"rejected\":[" E_R4 "," E_R2,
         "rejected[1].mutation_id: out of request order"},
        /* echo */
        {NA, "\"table\":\"note\"", "\"table\":\"notes\"",
         "rejected[1].table: does not echo the request"},
        {NA, PK("n", "42"), PK("m", "42"), "rejected[1].pk.field: does not echo the request"},
        {NA, PK("n", "42"), PK("n", "\"42\""), "rejected[1].pk.value: does not echo the request"},
        {NA, PK("n", "42"), "\"pk\":{\"field\":\"n\",\"value\":42,\"type\":\"int32\"}",
         "rejected[1].pk: must be {\"field\", \"value\"}"},
        {NA, "\"operation\":\"insert\",\"outcome_schema\":" S2 "," PK("id", "\"" K1 "\""),
         "\"operation\":\"upsert\",\"outcome_schema\":" S2 "," PK("id", "\"" K1 "\""),
         "accepted[0].operation: does not echo the request"},
        {NA, "\"operation\":\"delete\",\"outcome_schema\":" S1 ",", "\"operation\":\"delete\",",
         "rejected[2]: missing member \"outcome_schema\""},
        {NA, "\"operation\":\"delete\",\"outcome_schema\":" S1,
         "\"operation\":\"delete\",\"outcome_schema\":{\"hash\":\"" HB "\",\"version\":0}",
         "rejected[2].outcome_schema: not a valid schema reference"},
        {NA, "\"message\":\"row is deleted\",", "\"message\":\"row is deleted\",\"note\":1,",
         "rejected[2]: unknown member \"note\""},
        /* applied */
        {NA, "\"server_version\":\"v-12\",", "", "accepted[1]: missing member \"server_version\""},
        {NA, "\"row_checksum\":\"@A1@\",", "",
         "accepted[0].row_checksum: required with server_row"},
        {NA, "\"server_row\":{\"done\":false,\"title\":\"a\"},", "",
         "accepted[0].server_row: required with row_checksum"},
        {NA, "\"server_version\":\"v-12\",",
         "\"code\":\"row_deleted\",\"server_version\":\"v-12\",",
         "accepted[1].code: not allowed with status applied"},
        {NA, "\"server_version\":\"v-12\",", "\"message\":\"ok\",\"server_version\":\"v-12\",",
         "accepted[1].message: not allowed with status applied"},
        {NA, "\"server_version\":\"v-12\"", "\"server_version\":\"\"",
         "accepted[1].server_version: not an opaque version"},
        {NA, "\"row_checksum\":\"@A1@\"", "\"row_checksum\":\"" HB "\"",
         "accepted[0].row_checksum: does not match server_row"},
        {NA, "\"server_row\":{\"done\":false,\"title\":\"a\"}",
         "\"server_row\":{\"done\":true,\"title\":\"a\"}",
         "accepted[0].row_checksum: does not match server_row"},
        {NA, "\"row_checksum\":\"@A1@\"",
         "\"row_checksum\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"",
         "accepted[0].row_checksum: not a lowercase hex SHA-256"},
        {NA, "\"server_row\":{\"done\":false,\"title\":\"a\"}", "\"server_row\":[]",
         "accepted[0].server_row: not an object"},
        /* conflict */
        {NA, "\"code\":\"version_conflict\"", "\"code\":\"policy_rejected\"",
         "rejected[0].code: not a conflict code"},
        {NA, "\"code\":\"row_deleted\",\"message\":\"row is deleted\",",
         "\"code\":\"row_deleted\",", "rejected[2]: missing member \"message\""},
        {NA, "\"message\":\"row is deleted\"", "\"message\":\"\"",
         "rejected[2].message: must be a non-empty string"},
        {NA, "\"server_version\":\"v-11\",", "",
         "rejected[0].server_version: required with server_row"},
        {NA, "\"code\":\"row_deleted\",", "\"code\":\"row_deleted\",\"retryable\":false,",
         "rejected[2].retryable: only allowed with code schema_incompatible"},
        /* rejected_terminal */
        {NA, "\"code\":\"policy_rejected\"", "\"code\":\"row_not_found\"",
         "rejected[3].code: not a terminal code"},
        {NA, "\"code\":\"policy_rejected\"", "\"code\":\"server_retryable\"",
         "rejected[3].code: not a terminal code"},
        {NA, "\"status\":\"rejected_terminal\",\"table\":\"todo\"",
         "\"server_version\":\"v-1\",\"status\":\"rejected_terminal\",\"table\":\"todo\"",
         "rejected[3].server_version: not allowed with status rejected_terminal"},
        {NA, "\"code\":\"policy_rejected\",\"message\":\"write policy denies\"",
         "\"code\":\"atomic_batch_rejected\",\"message\":\"atomic batch rejected\"",
         "rejected[3].code: atomic_batch_rejected in a non-atomic response"},
        /* schema_incompatible */
        {NA, "\"retryable\":false,", "", "rejected[1]: missing member \"retryable\""},
        {NA, "\"retryable\":false", "\"retryable\":true", "rejected[1].retryable: must be false"},
        {NA, "\"authored_schema\":" S1, "\"authored_schema\":" S2,
         "rejected[1].authored_schema: does not echo the request"},
        {NA, "\"current_schema\":" S2 ",", "", "rejected[1]: missing member \"current_schema\""},
        {NA, "[\"gone\",\"zeta\"]", "[\"zeta\",\"gone\"]",
         "rejected[1].incompatible_field_ids: must be sorted unique strings"},
        {NA, "[\"gone\",\"zeta\"]", "[\"gone\",\"gone\"]",
         "rejected[1].incompatible_field_ids: must be sorted unique strings"},
        {NA, "[\"gone\",\"zeta\"]", "[\"gone\",1]",
         "rejected[1].incompatible_field_ids: must be sorted unique strings"},
        /* atomic groups */
        {AC, "\"accepted\":[]", "\"accepted\":[" E_X1_APPLIED "]",
         "rejected[0].mutation_id: appears more than once"},
        {AC,
         "\"accepted\":[],\"batch_id\":\"" ABATCH "\",\"rejected\":[" E_AR(X1, "insert", K6) ",",
         "\"accepted\":[" E_X1_APPLIED "],\"batch_id\":\"" ABATCH "\",\"rejected\":[",
         "atomic response: accepted must be empty when a mutation did not apply"},
        {AI,
         "\"code\":\"atomic_batch_rejected\",\"message\":\"atomic batch rejected\","
         "\"mutation_id\":\"" X1 "\"",
         "\"code\":\"policy_rejected\",\"message\":\"denied\",\"mutation_id\":\"" X1 "\"",
         "atomic response: 2 outcomes carry a code other than atomic_batch_rejected, "
         "not exactly one"},
        {AI, E_X3_INVALID, E_AR(X3, "delete", K8),
         "atomic response: 0 outcomes carry a code other than atomic_batch_rejected, "
         "not exactly one"},
        {AC, "\"message\":\"atomic batch rejected\",\"mutation_id\":\"" X3 "\"",
         "\"message\":\"rejected\",\"mutation_id\":\"" X3 "\"",
         "rejected[2].message: must be \"atomic batch rejected\""},
        {AC, "\"mutation_id\":\"" X1 "\",\"operation\":\"insert\",\"outcome_schema\":" S2,
         "\"mutation_id\":\"" X1 "\",\"operation\":\"insert\",\"outcome_schema\":" S1,
         "rejected[0].outcome_schema: must be the request schema in an atomic response"},
        {AC, "\"mutation_id\":\"" X3 "\",",
         "\"mutation_id\":\"" X3 "\",\"server_version\":\"v-9\",",
         "rejected[2].server_version: not allowed with status rejected_terminal"},
        {AO, "," E_X3_APPLIED "],\"batch_id\":\"" ABATCH "\",\"rejected\":[]",
         "],\"batch_id\":\"" ABATCH "\",\"rejected\":[" E_X3_INVALID "]",
         "atomic response: accepted must be empty when a mutation did not apply"},
};

void test_validate_negatives(void)
{
	CU_ASSERT(sizeof negatives / sizeof negatives[0] >= 25);
	sy_push_request *plain = request(request_text);
	sy_push_request *atomic = request(atomic_text);
	for (size_t i = 0; i < sizeof negatives / sizeof negatives[0]; i++) {
		const negative *n = &negatives[i];
		const char *first = strstr(n->base, n->from);
		CU_ASSERT_PTR_NOT_NULL_FATAL(first);
		/* the edit must be unambiguous */
		CU_ASSERT_PTR_NULL(strstr(first + 1, n->from));
		size_t head = (size_t)(first - n->base);
		size_t len = strlen(n->base) - strlen(n->from) + strlen(n->to);
		char *text = malloc(len + 1);
		CU_ASSERT_PTR_NOT_NULL_FATAL(text);
		memcpy(text, n->base, head);
		strcpy(text + head, n->to);
		strcat(text, first + strlen(n->from));
		const sy_push_request *req = n->base == response_text ? plain : atomic;
		sy_error err;
		bool ok = validate_text(req, text, &err);
		CU_ASSERT_FALSE(ok);
		if (ok || strcmp(err.message, n->message) != 0)
			fprintf(stderr, "\nnegative %zu: want \"%s\", got \"%s\"\n", i, n->message,
			        ok ? "(accepted)" : err.message);
		CU_ASSERT_STRING_EQUAL(err.message, n->message);
		CU_ASSERT_EQUAL(err.code, SY_ERR_TEMPORARY_UNAVAILABLE);
		free(text);
	}
	sy_push_request_free(plain);
	sy_push_request_free(atomic);
}

/* Cases a parser cannot produce: a non-object body and repeated members (built by hand). */
void test_validate_built(void)
{
	sy_push_request *req = request(request_text);
	sy_error err;
	CU_ASSERT_FALSE(validate_text(req, "[]", &err));
	CU_ASSERT_STRING_EQUAL(err.message, "response: not an object");

	/* a row holding the pk is not a canonical row: it has no checksum */
	char *text = strdup(response_text);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	replace_all(&text, "{\"done\":false,\"title\":\"a\"}",
	            "{\"done\":false,\"id\":\"" K1 "\",\"title\":\"a\"}");
	CU_ASSERT_FALSE(validate_text(req, text, &err));
	static const char prefix[] = "accepted[0].server_row: not a canonical row (";
	CU_ASSERT_EQUAL(strncmp(err.message, prefix, strlen(prefix)), 0);
	free(text);

	char *full = expand(response_text);
	sy_json_doc *doc = parse(full);
	sy_json *root = (sy_json *)sy_json_doc_root(doc);
	/* a second batch_id member */
	sy_json *dup = sy_json_new_cstring(doc, BATCH);
	CU_ASSERT_TRUE_FATAL(sy_json_object_put(doc, root, "batch_id", dup));
	CU_ASSERT_FALSE(sy_outcome_validate_response(req, root, &err));
	CU_ASSERT_STRING_EQUAL(err.message, "response: duplicate member");
	root->u.object.count--;
	CU_ASSERT_TRUE(sy_outcome_validate_response(req, root, &err));
	/* a second status member in accepted[0] */
	sy_json *a0 = root->u.object.members[0].value->u.array.items[0];
	dup = sy_json_new_cstring(doc, "applied");
	CU_ASSERT_TRUE_FATAL(sy_json_object_put(doc, a0, "status", dup));
	CU_ASSERT_FALSE(sy_outcome_validate_response(req, root, &err));
	CU_ASSERT_STRING_EQUAL(err.message, "accepted[0]: duplicate member \"status\"");
	sy_json_doc_free(doc);
	free(full);
	sy_push_request_free(req);
}

/* ---- allocation failures ---- */

void test_alloc_failures(void)
{
	fixture f;
	fixture_init(&f);
	char *want = expand(response_text);
	sy_json_doc *resp = parse(want);
	sy_push_request *atomic = request(atomic_text);
	char *atext = expand(atomic_conflict_text);
	sy_json_doc *aresp = parse(atext);
	sy_schema_ref cur = ref_of(2, HA), rec = ref_of(1, HB);
	bool enc_done = false, val_done = false, err_done = false;
	long failures = 0; /* each of the three fails at least once */

	for (long n = 0; n < 100000 && !(enc_done && val_done && err_done); n++) {
		sy_error err;
		if (!enc_done) {
			sy_buf out = SY_BUF_INIT;
			sy_error_clear(&err);
			sy_test_alloc_install(n, true);
			bool ok = sy_outcome_write_response(&out, BATCH, TIME, f.o, 6, &err);
			sy_test_alloc_install(-1, false);
			if (ok) {
				CU_ASSERT_STRING_EQUAL(out.data, want);
				enc_done = true;
			} else {
				CU_ASSERT_EQUAL(err.code, SY_ERR_NOMEM);
				failures++;
			}
			sy_buf_free(&out);
		}
		if (!val_done) {
			sy_error_clear(&err);
			sy_test_alloc_install(n, true);
			const sy_json *r1 = sy_json_doc_root(resp), *r2 = sy_json_doc_root(aresp);
			bool ok = sy_outcome_validate_response(f.req, r1, &err) &&
			          sy_outcome_validate_response(atomic, r2, &err);
			sy_test_alloc_install(-1, false);
			if (ok) {
				val_done = true;
			} else {
				CU_ASSERT_EQUAL(err.code, SY_ERR_NOMEM);
				failures++;
			}
		}
		if (!err_done) {
			sy_buf out = SY_BUF_INIT;
			sy_error_clear(&err);
			sy_test_alloc_install(n, true);
			bool ok = sy_outcome_error_body(&out, SY_ERR_SCHEMA_MISMATCH, "mismatch",
			                                &cur, &rec, &err);
			sy_test_alloc_install(-1, false);
			if (ok) {
				err_done = true;
			} else {
				CU_ASSERT_EQUAL(err.code, SY_ERR_NOMEM);
				failures++;
			}
			sy_buf_free(&out);
		}
	}
	sy_test_alloc_remove();
	CU_ASSERT_TRUE(enc_done);
	CU_ASSERT_TRUE(val_done);
	CU_ASSERT_TRUE(err_done);
	CU_ASSERT(failures >= 3);
	sy_json_doc_free(resp);
	sy_json_doc_free(aresp);
	sy_push_request_free(atomic);
	free(atext);
	free(want);
	fixture_free(&f);
}
