/* SPDX-License-Identifier: BSD-2-Clause */
/* Outcome encoding, response and error bodies, and the atomic group (test_outcome.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/fingerprint.h"
#include "synchro/outcome.h"
#include "test_outcome.h"
#include "testutil.h"

void test_encode_kinds(void)
{
	fixture f;
	fixture_init(&f);
	assert_encodes(&f.o[0], E_A1); /* applied, live row */
	assert_encodes(&f.o[2], E_A3); /* applied, the row is gone after the unit */
	assert_encodes(&f.o[1], E_R2); /* conflict with the live row */
	assert_encodes(&f.o[3], E_R4); /* schema_incompatible: ids sorted and unique */
	assert_encodes(&f.o[4], E_R5); /* conflict, fence-only delete */
	assert_encodes(&f.o[5], E_R6); /* terminal rejection */

	/* conflict, true absence */
	sy_outcome o = f.o[2];
	o.status = SY_STATUS_CONFLICT;
	o.code = SY_CODE_ROW_NOT_FOUND;
	o.message = "no such row";
	o.server_version = NULL;
	assert_encodes(&o, "{\"code\":\"row_not_found\",\"message\":\"no such row\"," IDENT(
	                           M3, "delete", S2, "id",
	                           Q(K3)) ",\"status\":\"conflict\",\"table\":\"todo\"}");

	/* atomic_batch_rejected: fixed message, request schema, nothing else */
	sy_schema_ref s2 = ref_of(2, HA);
	sy_outcome_init_atomic_rejected(&o, &f.req->mutations[2], &s2);
	assert_encodes(&o, E_AR(M3, "delete", K3));

	/* schema_incompatible without ids (a table that left the schema) */
	o = f.o[3];
	o.incompatible_count = 0;
	o.incompatible_field_ids = NULL;
	o.message = "a \"quoted\"\nmessage";
	assert_encodes(&o, "{\"authored_schema\":" S1 ",\"code\":\"schema_incompatible\","
	                   "\"current_schema\":" S2 ",\"incompatible_field_ids\":[],\"message\":"
	                   "\"a \\\"quoted\\\"\\nmessage\"," IDENT(
	                           M4, "update", S2, "n",
	                           "42") ",\"retryable\":false,\"status\":\"rejected_terminal\","
	                                 "\"table\":\"note\"}");
	fixture_free(&f);
}

void test_encode_checksum(void)
{
	fixture f;
	fixture_init(&f);
	char hex[SY_FP_HEX_LEN + 1];
	row_checksum(1, hex);
	sy_outcome o = f.o[1];
	o.row_checksum = hex; /* the right one: same bytes */
	assert_encodes(&o, E_R2);

	sy_buf out = SY_BUF_INIT;
	sy_error err;
	o.row_checksum = HB; /* well-formed, not this row's */
	CU_ASSERT_FALSE(sy_outcome_write(&out, &o, &err));
	CU_ASSERT_EQUAL(err.code, SY_ERR_TEMPORARY_UNAVAILABLE);
	CU_ASSERT_STRING_EQUAL(err.message,
	                       "outcome " M2 ": row_checksum does not match server_row");
	/* a row holding the pk is not a canonical row: no checksum exists for it */
	o.row_checksum = NULL;
	o.server_row = fixture_json(&f, "{\"id\":\"x\",\"title\":\"z\"}");
	CU_ASSERT_FALSE(sy_outcome_write(&out, &o, &err));
	CU_ASSERT_EQUAL(err.code, SY_ERR_TEMPORARY_UNAVAILABLE);
	CU_ASSERT_EQUAL(strncmp(err.message, "outcome " M2 ": server_row is not a canonical row (",
	                        strlen("outcome " M2 ": server_row is not a canonical row (")),
	                0);
	CU_ASSERT_EQUAL(out.len, 0);
	sy_buf_free(&out);
	fixture_free(&f);
}

void test_outcome_check(void)
{
	fixture f;
	fixture_init(&f);
	static const char *const ids[] = {"a", NULL};
	char bad_id[SY_UUID_LEN + 1] = "C1000000-0000-4000-8000-000000000001";
	struct {
		sy_outcome o;
		const char *message;
	} cases[12];
	size_t n = 0;
	sy_outcome *o;

	o = &cases[n].o, *o = f.o[0], o->message = "ok";
	cases[n++].message = "a message goes with conflicts and rejections only";
	o = &cases[n].o, *o = f.o[0], o->server_version = NULL;
	cases[n++].message = "applied requires server_version";
	o = &cases[n].o, *o = f.o[1], o->message = "";
	cases[n++].message = "a message goes with conflicts and rejections only";
	o = &cases[n].o, *o = f.o[1], o->server_version = NULL;
	cases[n++].message = "server_row requires server_version";
	o = &cases[n].o, *o = f.o[5], o->server_version = "v-1";
	cases[n++].message = "rejected_terminal returns no row or version";
	o = &cases[n].o, *o = f.o[5], o->code = SY_CODE_ATOMIC_BATCH_REJECTED;
	cases[n++].message = "atomic_batch_rejected has the fixed message";
	o = &cases[n].o, *o = f.o[5], o->code = SY_CODE_ROW_DELETED;
	cases[n++].message = "code does not belong to status";
	o = &cases[n].o, *o = f.o[4], o->row_checksum = HA;
	cases[n++].message = "row_checksum without server_row";
	o = &cases[n].o, *o = f.o[4], o->server_version = "";
	cases[n++].message = "invalid server_version";
	o = &cases[n].o, *o = f.o[5], o->incompatible_field_ids = ids, o->incompatible_count = 1;
	cases[n++].message = "incompatible_field_ids only with schema_incompatible";
	o = &cases[n].o, *o = f.o[3], o->current_schema.version = 0;
	cases[n++].message = "schema_incompatible requires both schemas";
	o = &cases[n].o, *o = f.o[3], o->incompatible_field_ids = ids, o->incompatible_count = 2;
	cases[n++].message = "incompatible_field_ids missing";

	for (size_t i = 0; i < n; i++) {
		sy_error err;
		sy_error_clear(&err);
		CU_ASSERT_FALSE(sy_outcome_check(&cases[i].o, &err));
		CU_ASSERT_EQUAL(err.code, SY_ERR_TEMPORARY_UNAVAILABLE);
		/* "outcome <mutation_id>: <rule>" */
		const char *id = cases[i].o.mutation_id, *msg = err.message;
		bool same = strncmp(msg, "outcome ", 8) == 0 &&
		            strncmp(msg + 8, id, SY_UUID_LEN) == 0 &&
		            strncmp(msg + 8 + SY_UUID_LEN, ": ", 2) == 0 &&
		            strcmp(msg + 10 + SY_UUID_LEN, cases[i].message) == 0;
		if (!same)
			fprintf(stderr, "\ncase %zu: want \"%s\", got \"%s\"\n", i,
			        cases[i].message, msg);
		CU_ASSERT_TRUE(same);
		/* the encoder refuses what the check refuses */
		sy_buf out = SY_BUF_INIT;
		CU_ASSERT_FALSE(sy_outcome_write(&out, &cases[i].o, &err));
		sy_buf_free(&out);
	}
	sy_outcome bad = f.o[0];
	memcpy(bad.mutation_id, bad_id, sizeof bad.mutation_id);
	sy_error err;
	CU_ASSERT_FALSE(sy_outcome_check(&bad, &err));
	CU_ASSERT_STRING_EQUAL(err.message, "outcome: invalid mutation_id");
	for (size_t i = 0; i < 6; i++)
		CU_ASSERT_TRUE(sy_outcome_check(&f.o[i], &err));
	fixture_free(&f);
}

void test_response_bytes(void)
{
	fixture f;
	fixture_init(&f);
	sy_buf out = SY_BUF_INIT;
	sy_error err;
	sy_error_clear(&err);
	CU_ASSERT_TRUE_FATAL(sy_outcome_write_response(&out, BATCH, TIME, f.o, 6, &err));
	char *want = expand(response_text);
	CU_ASSERT_STRING_EQUAL(out.data, want);

	/* what the builder writes, the validator accepts */
	sy_json_doc *doc = parse(out.data);
	CU_ASSERT_TRUE(sy_outcome_validate_response(f.req, sy_json_doc_root(doc), &err));
	sy_json_doc_free(doc);

	/* a stored outcome (cross-batch replay) goes in verbatim, filed by its status */
	sy_outcome_response *r = sy_outcome_response_new(BATCH, TIME, &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	for (size_t i = 0; i < 6; i++) {
		if (i == 4) {
			const sy_json *stored = fixture_json(&f, E_R5);
			CU_ASSERT_TRUE(sy_outcome_response_add_json(r, stored, &err));
		} else {
			CU_ASSERT_TRUE(sy_outcome_response_add(r, &f.o[i], &err));
		}
	}
	sy_buf again = SY_BUF_INIT;
	CU_ASSERT_TRUE(sy_outcome_response_write(r, &again, &err));
	CU_ASSERT_STRING_EQUAL(again.data, want);
	CU_ASSERT_FALSE(
	        sy_outcome_response_add_json(r, fixture_json(&f, "{\"status\":\"ok\"}"), &err));
	CU_ASSERT_STRING_EQUAL(err.message, "response: a stored outcome has no valid status");
	/* an invalid outcome is refused and leaves the body unchanged */
	sy_outcome bad = f.o[0];
	bad.server_version = NULL;
	CU_ASSERT_FALSE(sy_outcome_response_add(r, &bad, &err));
	sy_buf_reset(&again);
	CU_ASSERT_TRUE(sy_outcome_response_write(r, &again, &err));
	CU_ASSERT_STRING_EQUAL(again.data, want);
	sy_outcome_response_free(r);

	/* add_write: the bytes it appends are the outcome's own encoding, and the body the same */
	r = sy_outcome_response_new(BATCH, TIME, &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	sy_buf one = SY_BUF_INIT, alone = SY_BUF_INIT;
	for (size_t i = 0; i < 6; i++) {
		if (i == 4) {
			CU_ASSERT_TRUE(
			        sy_outcome_response_add_json(r, fixture_json(&f, E_R5), &err));
			continue;
		}
		sy_buf_reset(&one);
		sy_buf_reset(&alone);
		CU_ASSERT_TRUE(sy_outcome_response_add_write(r, &f.o[i], &one, &err));
		CU_ASSERT_TRUE(sy_outcome_write(&alone, &f.o[i], &err));
		CU_ASSERT_EQUAL(one.len, alone.len);
		CU_ASSERT_STRING_EQUAL(one.data, alone.data);
	}
	sy_buf_reset(&again);
	CU_ASSERT_TRUE(sy_outcome_response_write(r, &again, &err));
	CU_ASSERT_STRING_EQUAL(again.data, want);
	/* the builder's own check: the validator's rules on the tree the bytes come from */
	CU_ASSERT_TRUE(sy_outcome_response_check(r, f.req, &err));
	sy_buf_free(&one);
	sy_buf_free(&alone);
	sy_outcome_response_free(r);
	sy_outcome_response_free(NULL);

	/* ... which refuses a body that does not partition the request */
	r = sy_outcome_response_new(BATCH, TIME, &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	for (size_t i = 0; i < 5; i++)
		if (i != 4)
			CU_ASSERT_TRUE(sy_outcome_response_add(r, &f.o[i], &err));
	CU_ASSERT_FALSE(sy_outcome_response_check(r, f.req, &err));
	CU_ASSERT_NOT_EQUAL(err.message[0], '\0');
	CU_ASSERT_TRUE(sy_outcome_response_add(r, &f.o[0], &err));
	CU_ASSERT_FALSE(sy_outcome_response_check(r, f.req, &err));
	sy_outcome_response_free(r);

	CU_ASSERT_PTR_NULL(sy_outcome_response_new("not-a-uuid", TIME, &err));
	CU_ASSERT_PTR_NULL(sy_outcome_response_new(BATCH, "2026-07-18T10:00:00Z", &err));
	CU_ASSERT_STRING_EQUAL(err.message, "response: invalid batch_id or server_time");

	free(want);
	sy_buf_free(&again);
	sy_buf_free(&out);
	fixture_free(&f);
}

void test_atomic_group(void)
{
	sy_push_request *req = request(atomic_text);
	sy_push_request *plain = request(request_text);
	sy_schema_ref s2 = ref_of(2, HA);
	sy_json_doc *row = parse("{\"title\":\"other\"}");
	sy_outcome failing, out[3];
	sy_error err;
	sy_error_clear(&err);

	/* the conflict of the second mutation, rebuilt from the row read after the rollback */
	sy_outcome_init(&failing, &req->mutations[1], &s2);
	failing.status = SY_STATUS_CONFLICT;
	failing.code = SY_CODE_VERSION_CONFLICT;
	failing.message = "base version is stale";
	failing.server_version = "v-40";
	failing.server_row = sy_json_doc_root(row);
	CU_ASSERT_TRUE_FATAL(sy_outcome_atomic_failed_group(req, 1, &failing, out, &err));
	sy_buf body = SY_BUF_INIT;
	CU_ASSERT_TRUE_FATAL(sy_outcome_write_response(&body, ABATCH, TIME, out, 3, &err));
	char *want = expand(atomic_conflict_text);
	CU_ASSERT_STRING_EQUAL(body.data, want);
	free(want);
	sy_json_doc *doc = parse(body.data);
	CU_ASSERT_TRUE(sy_outcome_validate_response(req, sy_json_doc_root(doc), &err));
	sy_json_doc_free(doc);

	/* a failed deferred check: validation_failed on the last mutation */
	sy_outcome_init(&failing, &req->mutations[2], &s2);
	failing.status = SY_STATUS_REJECTED_TERMINAL;
	failing.code = SY_CODE_VALIDATION_FAILED;
	failing.message = "deferred constraint failed";
	CU_ASSERT_TRUE_FATAL(sy_outcome_atomic_failed_group(req, 2, &failing, out, &err));
	sy_buf_reset(&body);
	CU_ASSERT_TRUE_FATAL(sy_outcome_write_response(&body, ABATCH, TIME, out, 3, &err));
	CU_ASSERT_STRING_EQUAL(body.data, atomic_invalid_text);

	/* misuse */
	CU_ASSERT_FALSE(sy_outcome_atomic_failed_group(req, 3, &failing, out, &err));
	CU_ASSERT_STRING_EQUAL(err.message, "atomic group: failing index 3 out of range");
	CU_ASSERT_FALSE(sy_outcome_atomic_failed_group(req, 1, &failing, out, &err));
	CU_ASSERT_STRING_EQUAL(err.message,
	                       "atomic group: the failing outcome belongs to another mutation");
	sy_outcome_init_atomic_rejected(&failing, &req->mutations[2], &s2);
	CU_ASSERT_FALSE(sy_outcome_atomic_failed_group(req, 2, &failing, out, &err));
	CU_ASSERT_STRING_EQUAL(err.message,
	                       "atomic group: the failing outcome must carry its own failure");
	sy_outcome_init(&failing, &req->mutations[2], &s2);
	failing.server_version = "v-1";
	CU_ASSERT_FALSE(sy_outcome_atomic_failed_group(req, 2, &failing, out, &err));
	CU_ASSERT_STRING_EQUAL(err.message,
	                       "atomic group: the failing outcome must carry its own failure");
	CU_ASSERT_FALSE(sy_outcome_atomic_failed_group(plain, 0, &failing, out, &err));
	CU_ASSERT_STRING_EQUAL(err.message, "atomic group: the request is not atomic");

	sy_buf_free(&body);
	sy_json_doc_free(row);
	sy_push_request_free(req);
	sy_push_request_free(plain);
}

/* ---- error bodies ---- */

static void assert_error_body(sy_errcode code, const char *message, const sy_schema_ref *cur,
                              const sy_schema_ref *rec, const char *expected)
{
	sy_buf out = SY_BUF_INIT;
	sy_error err;
	sy_error_clear(&err);
	CU_ASSERT_TRUE_FATAL(sy_outcome_error_body(&out, code, message, cur, rec, &err));
	CU_ASSERT_STRING_EQUAL(out.data, expected);
	sy_buf_free(&out);
}

void test_error_bodies(void)
{
	assert_error_body(SY_ERR_TEMPORARY_UNAVAILABLE, "request could not be committed", NULL,
	                  NULL,
	                  "{\"error\":{\"code\":\"temporary_unavailable\",\"message\":"
	                  "\"request could not be committed\",\"retryable\":true}}");
	assert_error_body(SY_ERR_NOMEM, "request could not be committed", NULL, NULL,
	                  "{\"error\":{\"code\":\"temporary_unavailable\",\"message\":"
	                  "\"request could not be committed\",\"retryable\":true}}");
	assert_error_body(SY_ERR_INVALID_REQUEST, "mutations[3].base_version: required for update",
	                  NULL, NULL,
	                  "{\"error\":{\"code\":\"invalid_request\",\"message\":"
	                  "\"mutations[3].base_version: required for update\","
	                  "\"retryable\":false}}");
	assert_error_body(SY_ERR_RETRY_LATER, "slow down", NULL, NULL,
	                  "{\"error\":{\"code\":\"retry_later\",\"message\":\"slow down\","
	                  "\"retryable\":true}}");
	assert_error_body(SY_ERR_IDEMPOTENCY_CONFLICT, "tab\there \"q\" \xc3\xa9", NULL, NULL,
	                  "{\"error\":{\"code\":\"idempotency_conflict\",\"message\":"
	                  "\"tab\\there \\\"q\\\" \xc3\xa9\",\"retryable\":false}}");
	sy_schema_ref cur = ref_of(2, HA), rec = ref_of(1, HB);
	assert_error_body(SY_ERR_SCHEMA_MISMATCH, "schema mismatch", &cur, &rec,
	                  "{\"error\":{\"code\":\"schema_mismatch\",\"current_schema\":" S2
	                  ",\"message\":\"schema mismatch\",\"received_schema\":" S1
	                  ",\"retryable\":false}}");

	sy_buf out = SY_BUF_INIT;
	sy_error err;
	CU_ASSERT_FALSE(sy_outcome_error_body(&out, SY_ERR_SCHEMA_MISMATCH, "m", &cur, NULL, &err));
	CU_ASSERT_STRING_EQUAL(err.message, "error body: current and received schemas go with "
	                                    "schema_mismatch only");
	CU_ASSERT_FALSE(sy_outcome_error_body(&out, SY_ERR_INVALID_REQUEST, "m", &cur, &rec, &err));
	CU_ASSERT_STRING_EQUAL(err.message, "error body: current and received schemas go with "
	                                    "schema_mismatch only");
	CU_ASSERT_FALSE(sy_outcome_error_body(&out, SY_ERR_NONE, "m", NULL, NULL, &err));
	CU_ASSERT_STRING_EQUAL(err.message, "error body: needs an error code and a message");
	CU_ASSERT_FALSE(
	        sy_outcome_error_body(&out, SY_ERR_INVALID_REQUEST, NULL, NULL, NULL, &err));
	rec.version = 0;
	CU_ASSERT_FALSE(sy_outcome_error_body(&out, SY_ERR_SCHEMA_MISMATCH, "m", &cur, &rec, &err));
	CU_ASSERT_STRING_EQUAL(err.message, "error body: invalid schema reference");
	CU_ASSERT_EQUAL(out.len, 0);
	sy_buf_free(&out);
}
