/* SPDX-License-Identifier: BSD-2-Clause */
/* CUnit suite of outcome.h: the fixtures (requests, responses, the rows behind their
 * checksums), their helpers and the runner; the tests are in test_outcome_encode.c
 * (one outcome, the bodies, the atomic group) and test_outcome_validate.c. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/fingerprint.h"
#include "synchro/outcome.h"
#include "test_outcome.h"
#include "testutil.h"

/* The requests and responses below keep the layout of the JSON they spell. */
/* clang-format off */
/* A non-atomic request: insert, update, delete, a historical update, a delete, an insert. */
const char request_text[] =
    "{\"client_id\":\"" CLIENT "\",\"client_generation\":3,\"batch_id\":\"" BATCH "\","
    "\"schema\":" S2 ",\"mutations\":["
    MUT(M1, "todo", "id", "\"" K1 "\"", S2, "insert", ",\"columns\":{\"title\":\"a\"}") ","
    MUT(M2, "todo", "id", "\"" K2 "\"", S2, "update",
        ",\"base_version\":\"v-1\",\"columns\":{\"title\":\"b\"}") ","
    MUT(M3, "todo", "id", "\"" K3 "\"", S2, "delete", ",\"base_version\":\"v-2\"") ","
    MUT(M4, "note", "n", "42", S1, "update",
        ",\"base_version\":\"v-3\",\"columns\":{\"body\":\"x\",\"gone\":1}") ","
    MUT(M5, "todo", "id", "\"" K5 "\"", S1, "delete", ",\"base_version\":\"v-4\"") ","
    MUT(M6, "todo", "id", "\"" K9 "\"", S2, "insert", ",\"columns\":{}") "]}";

/* An atomic request of three mutations. */
const char atomic_text[] =
    "{\"client_id\":\"" CLIENT "\",\"client_generation\":3,\"batch_id\":\"" ABATCH "\","
    "\"schema\":" S2 ",\"atomic\":true,\"mutations\":["
    MUT(X1, "todo", "id", "\"" K6 "\"", S2, "insert", ",\"columns\":{\"title\":\"p\"}") ","
    MUT(X2, "todo", "id", "\"" K7 "\"", S2, "update",
        ",\"base_version\":\"v-20\",\"columns\":{\"title\":\"q\"}") ","
    MUT(X3, "todo", "id", "\"" K8 "\"", S2, "delete", ",\"base_version\":\"v-21\"") "]}";

/* The valid non-atomic response (R5 carries a historical outcome schema, as a replay does). */
const char response_text[] =
    "{\"accepted\":[" E_A1 "," E_A3 "],\"batch_id\":\"" BATCH "\","
    "\"rejected\":[" E_R2 "," E_R4 "," E_R5 "," E_R6 "],\"server_time\":\"" TIME "\"}";
const char atomic_ok_text[] =
    "{\"accepted\":[" E_X1_APPLIED "," E_X2_APPLIED "," E_X3_APPLIED "],"
    "\"batch_id\":\"" ABATCH "\",\"rejected\":[],\"server_time\":\"" TIME "\"}";
const char atomic_conflict_text[] =
    "{\"accepted\":[],\"batch_id\":\"" ABATCH "\",\"rejected\":["
    E_AR(X1, "insert", K6) "," E_X2_CONFLICT "," E_AR(X3, "delete", K8) "],"
    "\"server_time\":\"" TIME "\"}";
const char atomic_invalid_text[] =
    "{\"accepted\":[],\"batch_id\":\"" ABATCH "\",\"rejected\":["
    E_AR(X1, "insert", K6) "," E_AR(X2, "update", K7) "," E_X3_INVALID "],"
    "\"server_time\":\"" TIME "\"}";
/* clang-format on */

/* The rows behind the checksum tokens. */
static const struct {
	const char *token;
	const char *hash;
	uint64_t version;
	const char *table;
	const char *pk_field;
	const char *pk_value;
	const char *row;
} rows[] = {
        {"@A1@", HA, 2, "todo", "id", "\"" K1 "\"", "{\"title\":\"a\",\"done\":false}"},
        {"@R2@", HA, 2, "todo", "id", "\"" K2 "\"", "{\"title\":\"z\",\"done\":true}"},
        {"@X1@", HA, 2, "todo", "id", "\"" K6 "\"", "{\"title\":\"p\"}"},
        {"@X2@", HA, 2, "todo", "id", "\"" K7 "\"", "{\"title\":\"q\"}"},
        {"@X2C@", HA, 2, "todo", "id", "\"" K7 "\"", "{\"title\":\"other\"}"},
};

sy_json_doc *parse(const char *text)
{
	sy_error err;
	sy_json_doc *doc = sy_json_parse(text, strlen(text), &err);
	if (doc == NULL)
		fprintf(stderr, "fixture does not parse: %s\n", err.message);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	return doc;
}

void row_checksum(size_t i, char hex[SY_FP_HEX_LEN + 1])
{
	sy_schema_ref ref = {.version = rows[i].version};
	memcpy(ref.hash, rows[i].hash, sizeof ref.hash);
	sy_json_doc *pk = parse(rows[i].pk_value);
	sy_json_doc *row = parse(rows[i].row);
	sy_error err;
	bool ok = sy_fp_row_checksum(&ref, rows[i].table, strlen(rows[i].table), rows[i].pk_field,
	                             strlen(rows[i].pk_field), sy_json_doc_root(pk),
	                             sy_json_doc_root(row), hex, &err);
	CU_ASSERT_TRUE_FATAL(ok);
	sy_json_doc_free(pk);
	sy_json_doc_free(row);
}

/* Replaces every occurrence of from in *s (a malloc'd string) with to. */
void replace_all(char **s, const char *from, const char *to)
{
	size_t fl = strlen(from), tl = strlen(to);
	char *p;
	while ((p = strstr(*s, from)) != NULL) {
		size_t head = (size_t)(p - *s), len = strlen(*s);
		char *n = malloc(len - fl + tl + 1);
		CU_ASSERT_PTR_NOT_NULL_FATAL(n);
		memcpy(n, *s, head);
		memcpy(n + head, to, tl);
		memcpy(n + head + tl, p + fl, len - head - fl + 1);
		free(*s);
		*s = n;
	}
}

/* text with every checksum token replaced by its checksum; free() it. */
char *expand(const char *text)
{
	char *s = strdup(text);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		if (strstr(s, rows[i].token) == NULL)
			continue;
		char hex[SY_FP_HEX_LEN + 1];
		row_checksum(i, hex);
		replace_all(&s, rows[i].token, hex);
	}
	return s;
}

sy_push_request *request(const char *text)
{
	sy_error err;
	sy_push_request *req = sy_push_parse(text, strlen(text), &err);
	if (req == NULL)
		fprintf(stderr, "request fixture refused: %s\n", err.message);
	CU_ASSERT_PTR_NOT_NULL_FATAL(req);
	return req;
}

/* Validates text (tokens expanded) against req; returns the verdict, message in err. */
bool validate_text(const sy_push_request *req, const char *text, sy_error *err)
{
	char *full = expand(text);
	sy_json_doc *doc = parse(full);
	sy_error_clear(err);
	bool ok = sy_outcome_validate_response(req, sy_json_doc_root(doc), err);
	sy_json_doc_free(doc);
	free(full);
	return ok;
}

sy_schema_ref ref_of(uint64_t version, const char *hash)
{
	sy_schema_ref r = {.version = version};
	memcpy(r.hash, hash, sizeof r.hash);
	return r;
}

const sy_json *fixture_json(fixture *f, const char *text)
{
	f->docs[f->ndocs] = parse(text);
	return sy_json_doc_root(f->docs[f->ndocs++]);
}

static const char *const incompatible[] = {"zeta", "gone", "zeta"};

/* The outcomes of response_text, built as the server would. */
void fixture_init(fixture *f)
{
	memset(f, 0, sizeof *f);
	f->req = request(request_text);
	CU_ASSERT_EQUAL_FATAL(f->req->mutation_count, 6);
	sy_schema_ref s2 = ref_of(2, HA), s1 = ref_of(1, HB);
	sy_outcome *o = f->o;
	const sy_mutation *m = f->req->mutations;

	sy_outcome_init(&o[0], &m[0], &s2);
	o[0].server_version = "v-10";
	o[0].server_row = fixture_json(f, "{\"title\":\"a\",\"done\":false}");

	sy_outcome_init(&o[1], &m[1], &s2);
	o[1].status = SY_STATUS_CONFLICT;
	o[1].code = SY_CODE_VERSION_CONFLICT;
	o[1].message = "base version is stale";
	o[1].server_version = "v-11";
	o[1].server_row = fixture_json(f, "{\"done\":true,\"title\":\"z\"}");

	sy_outcome_init(&o[2], &m[2], &s2);
	o[2].server_version = "v-12";

	sy_outcome_init(&o[3], &m[3], &s2);
	o[3].status = SY_STATUS_REJECTED_TERMINAL;
	o[3].code = SY_CODE_SCHEMA_INCOMPATIBLE;
	o[3].message = "field gone was removed";
	o[3].current_schema = s2;
	o[3].incompatible_field_ids = incompatible;
	o[3].incompatible_count = 3;

	sy_outcome_init(&o[4], &m[4], &s1);
	o[4].status = SY_STATUS_CONFLICT;
	o[4].code = SY_CODE_ROW_DELETED;
	o[4].message = "row is deleted";
	o[4].server_version = "v-14";

	sy_outcome_init(&o[5], &m[5], &s2);
	o[5].status = SY_STATUS_REJECTED_TERMINAL;
	o[5].code = SY_CODE_POLICY_REJECTED;
	o[5].message = "write policy denies";
}

void fixture_free(fixture *f)
{
	for (size_t i = 0; i < f->ndocs; i++)
		sy_json_doc_free(f->docs[i]);
	sy_push_request_free(f->req);
}

void assert_encodes(const sy_outcome *o, const char *expected)
{
	sy_buf out = SY_BUF_INIT;
	sy_error err;
	sy_error_clear(&err);
	bool ok = sy_outcome_write(&out, o, &err);
	if (!ok)
		fprintf(stderr, "encode: %s\n", err.message);
	CU_ASSERT_TRUE_FATAL(ok);
	char *want = expand(expected);
	if (strcmp(out.data, want) != 0)
		fprintf(stderr, "\nwant %s\ngot  %s\n", want, out.data);
	CU_ASSERT_STRING_EQUAL(out.data, want);
	free(want);
	sy_buf_free(&out);
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"encode each outcome kind", test_encode_kinds},
	        {"encode row checksum", test_encode_checksum},
	        {"outcome check", test_outcome_check},
	        {"response bytes", test_response_bytes},
	        {"atomic failed group", test_atomic_group},
	        {"error bodies", test_error_bodies},
	        {"validator accepts", test_validate_valid},
	        {"validator refuses", test_validate_negatives},
	        {"validator on built values", test_validate_built},
	        {"allocation failures", test_alloc_failures},
	        CU_TEST_INFO_NULL,
	};
	sy_test_add_suite("outcome", tests);
	return sy_test_run();
}
