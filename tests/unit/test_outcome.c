/* SPDX-License-Identifier: BSD-2-Clause */
/* Outcome encoding, response and error bodies, the atomic group, and the response validator. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/fingerprint.h"
#include "synchro/outcome.h"
#include "testutil.h"

/* ---- fixtures ---- */

#define HA     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HB     "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define S2     "{\"hash\":\"" HA "\",\"version\":2}"
#define S1     "{\"hash\":\"" HB "\",\"version\":1}"
#define CLIENT "11111111-1111-4111-8111-111111111111"
#define BATCH  "22222222-2222-4222-8222-222222222222"
#define ABATCH "33333333-3333-4333-8333-333333333333"
#define TIME   "2026-07-18T10:00:00.123456Z"
/* Mutation ids out of sorted order, so the validator's lookup index is exercised. */
#define M1 "c1000000-0000-4000-8000-000000000001"
#define M2 "a2000000-0000-4000-8000-000000000002"
#define M3 "e3000000-0000-4000-8000-000000000003"
#define M4 "b4000000-0000-4000-8000-000000000004"
#define M5 "d5000000-0000-4000-8000-000000000005"
#define M6 "06000000-0000-4000-8000-000000000006"
#define X1 "f1000000-0000-4000-8000-000000000011"
#define X2 "91000000-0000-4000-8000-000000000012"
#define X3 "a1000000-0000-4000-8000-000000000013"
#define K1 "10000000-0000-4000-8000-000000000001"
#define K2 "10000000-0000-4000-8000-000000000002"
#define K3 "10000000-0000-4000-8000-000000000003"
#define K5 "10000000-0000-4000-8000-000000000005"
#define K6 "10000000-0000-4000-8000-000000000006"
#define K7 "10000000-0000-4000-8000-000000000007"
#define K8 "10000000-0000-4000-8000-000000000008"
#define K9 "10000000-0000-4000-8000-000000000009"
#define CV "\"client_version\":\"2026-07-18T09:59:59.5Z\""

#define MUT(id, table, pkf, pkv, schema, op, rest)                                                 \
	"{\"mutation_id\":\"" id "\",\"table\":\"" table "\",\"pk\":{\"field\":\"" pkf             \
	"\",\"value\":" pkv "},\"authored_schema\":" schema ",\"operation\":\"" op "\"," CV rest   \
	"}"

/* The requests and responses below keep the layout of the JSON they spell. */
/* clang-format off */
/* A non-atomic request: insert, update, delete, a historical update, a delete, an insert. */
static const char request_text[] =
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
static const char atomic_text[] =
    "{\"client_id\":\"" CLIENT "\",\"client_generation\":3,\"batch_id\":\"" ABATCH "\","
    "\"schema\":" S2 ",\"atomic\":true,\"mutations\":["
    MUT(X1, "todo", "id", "\"" K6 "\"", S2, "insert", ",\"columns\":{\"title\":\"p\"}") ","
    MUT(X2, "todo", "id", "\"" K7 "\"", S2, "update",
        ",\"base_version\":\"v-20\",\"columns\":{\"title\":\"q\"}") ","
    MUT(X3, "todo", "id", "\"" K8 "\"", S2, "delete", ",\"base_version\":\"v-21\"") "]}";

/*
 * Outcomes as JCS bytes. "@A1@"-style tokens stand for row checksums, which
 * the tests compute with sy_fp_row_checksum (the fingerprint module owns and
 * tests that algorithm; here it only has to be the one bound to the row).
 */
#define Q(s) "\"" s "\""
#define PK(f, v) "\"pk\":{\"field\":\"" f "\",\"value\":" v "}"
/* The members between "message" and "retryable" in JCS order. */
#define IDENT(id, op, schema, pkf, pkv) \
	"\"mutation_id\":\"" id "\",\"operation\":\"" op "\",\"outcome_schema\":" schema "," \
	PK(pkf, pkv)

#define E_A1 \
	"{" IDENT(M1, "insert", S2, "id", Q(K1)) ",\"row_checksum\":\"@A1@\"," \
	"\"server_row\":{\"done\":false,\"title\":\"a\"},\"server_version\":\"v-10\"," \
	"\"status\":\"applied\",\"table\":\"todo\"}"
#define E_A3 \
	"{" IDENT(M3, "delete", S2, "id", Q(K3)) ",\"server_version\":\"v-12\"," \
	"\"status\":\"applied\",\"table\":\"todo\"}"
#define E_R2 \
	"{\"code\":\"version_conflict\",\"message\":\"base version is stale\"," \
	IDENT(M2, "update", S2, "id", Q(K2)) ",\"row_checksum\":\"@R2@\"," \
	"\"server_row\":{\"done\":true,\"title\":\"z\"},\"server_version\":\"v-11\"," \
	"\"status\":\"conflict\",\"table\":\"todo\"}"
#define E_R4 \
	"{\"authored_schema\":" S1 ",\"code\":\"schema_incompatible\",\"current_schema\":" S2 \
	",\"incompatible_field_ids\":[\"gone\",\"zeta\"],\"message\":\"field gone was removed\"," \
	IDENT(M4, "update", S2, "n", "42") ",\"retryable\":false," \
	"\"status\":\"rejected_terminal\",\"table\":\"note\"}"
#define E_R5 \
	"{\"code\":\"row_deleted\",\"message\":\"row is deleted\"," \
	IDENT(M5, "delete", S1, "id", Q(K5)) ",\"server_version\":\"v-14\"," \
	"\"status\":\"conflict\",\"table\":\"todo\"}"
#define E_R6 \
	"{\"code\":\"policy_rejected\",\"message\":\"write policy denies\"," \
	IDENT(M6, "insert", S2, "id", Q(K9)) ",\"status\":\"rejected_terminal\"," \
	"\"table\":\"todo\"}"

/* The valid non-atomic response (R5 carries a historical outcome schema, as a replay does). */
static const char response_text[] =
    "{\"accepted\":[" E_A1 "," E_A3 "],\"batch_id\":\"" BATCH "\","
    "\"rejected\":[" E_R2 "," E_R4 "," E_R5 "," E_R6 "],\"server_time\":\"" TIME "\"}";

#define E_X1_APPLIED \
	"{" IDENT(X1, "insert", S2, "id", Q(K6)) ",\"row_checksum\":\"@X1@\"," \
	"\"server_row\":{\"title\":\"p\"},\"server_version\":\"v-30\"," \
	"\"status\":\"applied\",\"table\":\"todo\"}"
#define E_X2_APPLIED \
	"{" IDENT(X2, "update", S2, "id", Q(K7)) ",\"row_checksum\":\"@X2@\"," \
	"\"server_row\":{\"title\":\"q\"},\"server_version\":\"v-31\"," \
	"\"status\":\"applied\",\"table\":\"todo\"}"
#define E_X3_APPLIED \
	"{" IDENT(X3, "delete", S2, "id", Q(K8)) ",\"server_version\":\"v-32\"," \
	"\"status\":\"applied\",\"table\":\"todo\"}"
#define E_AR(id, op, k) \
	"{\"code\":\"atomic_batch_rejected\",\"message\":\"atomic batch rejected\"," \
	IDENT(id, op, S2, "id", Q(k)) ",\"status\":\"rejected_terminal\",\"table\":\"todo\"}"
#define E_X2_CONFLICT \
	"{\"code\":\"version_conflict\",\"message\":\"base version is stale\"," \
	IDENT(X2, "update", S2, "id", Q(K7)) ",\"row_checksum\":\"@X2C@\"," \
	"\"server_row\":{\"title\":\"other\"},\"server_version\":\"v-40\"," \
	"\"status\":\"conflict\",\"table\":\"todo\"}"
#define E_X3_INVALID \
	"{\"code\":\"validation_failed\",\"message\":\"deferred constraint failed\"," \
	IDENT(X3, "delete", S2, "id", Q(K8)) ",\"status\":\"rejected_terminal\"," \
	"\"table\":\"todo\"}"

static const char atomic_ok_text[] =
    "{\"accepted\":[" E_X1_APPLIED "," E_X2_APPLIED "," E_X3_APPLIED "],"
    "\"batch_id\":\"" ABATCH "\",\"rejected\":[],\"server_time\":\"" TIME "\"}";
static const char atomic_conflict_text[] =
    "{\"accepted\":[],\"batch_id\":\"" ABATCH "\",\"rejected\":["
    E_AR(X1, "insert", K6) "," E_X2_CONFLICT "," E_AR(X3, "delete", K8) "],"
    "\"server_time\":\"" TIME "\"}";
static const char atomic_invalid_text[] =
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

static sy_json_doc *parse(const char *text)
{
	sy_error err;
	sy_json_doc *doc = sy_json_parse(text, strlen(text), &err);
	if (doc == NULL)
		fprintf(stderr, "fixture does not parse: %s\n", err.message);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	return doc;
}

static void row_checksum(size_t i, char hex[SY_FP_HEX_LEN + 1])
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
static void replace_all(char **s, const char *from, const char *to)
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
static char *expand(const char *text)
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

static sy_push_request *request(const char *text)
{
	sy_error err;
	sy_push_request *req = sy_push_parse(text, strlen(text), &err);
	if (req == NULL)
		fprintf(stderr, "request fixture refused: %s\n", err.message);
	CU_ASSERT_PTR_NOT_NULL_FATAL(req);
	return req;
}

/* Validates text (tokens expanded) against req; returns the verdict, message in err. */
static bool validate_text(const sy_push_request *req, const char *text, sy_error *err)
{
	char *full = expand(text);
	sy_json_doc *doc = parse(full);
	sy_error_clear(err);
	bool ok = sy_outcome_validate_response(req, sy_json_doc_root(doc), err);
	sy_json_doc_free(doc);
	free(full);
	return ok;
}

static sy_schema_ref ref_of(uint64_t version, const char *hash)
{
	sy_schema_ref r = {.version = version};
	memcpy(r.hash, hash, sizeof r.hash);
	return r;
}

/* ---- encoding ---- */

/* Keeps the documents outcomes point into alive for one test. */
typedef struct {
	sy_push_request *req;
	sy_json_doc *docs[8];
	size_t ndocs;
	sy_outcome o[6];
} fixture;

static const sy_json *fixture_json(fixture *f, const char *text)
{
	f->docs[f->ndocs] = parse(text);
	return sy_json_doc_root(f->docs[f->ndocs++]);
}

static const char *const incompatible[] = {"zeta", "gone", "zeta"};

/* The outcomes of response_text, built as the server would. */
static void fixture_init(fixture *f)
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

static void fixture_free(fixture *f)
{
	for (size_t i = 0; i < f->ndocs; i++)
		sy_json_doc_free(f->docs[i]);
	sy_push_request_free(f->req);
}

static void assert_encodes(const sy_outcome *o, const char *expected)
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

static void test_encode_kinds(void)
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

static void test_encode_checksum(void)
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

static void test_outcome_check(void)
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

static void test_response_bytes(void)
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

static void test_atomic_group(void)
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

static void test_error_bodies(void)
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

static void test_validate_valid(void)
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

static void test_validate_negatives(void)
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
static void test_validate_built(void)
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

static long budget = -1; /* allocations left before failing; -1 = unlimited */

static void *fail_malloc(size_t n)
{
	if (budget == 0)
		return NULL;
	if (budget > 0)
		budget--;
	return malloc(n);
}

static void *fail_realloc(void *p, size_t n)
{
	if (budget == 0)
		return NULL;
	if (budget > 0)
		budget--;
	return realloc(p, n);
}

static const sy_allocator failing_allocator = {fail_malloc, fail_realloc, free};

static void test_alloc_failures(void)
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

	sy_set_allocator(&failing_allocator);
	for (long n = 0; n < 100000 && !(enc_done && val_done && err_done); n++) {
		sy_error err;
		if (!enc_done) {
			sy_buf out = SY_BUF_INIT;
			sy_error_clear(&err);
			budget = n;
			bool ok = sy_outcome_write_response(&out, BATCH, TIME, f.o, 6, &err);
			budget = -1;
			if (ok) {
				CU_ASSERT_STRING_EQUAL(out.data, want);
				enc_done = true;
			} else {
				CU_ASSERT_EQUAL(err.code, SY_ERR_NOMEM);
			}
			sy_buf_free(&out);
		}
		if (!val_done) {
			sy_error_clear(&err);
			budget = n;
			const sy_json *r1 = sy_json_doc_root(resp), *r2 = sy_json_doc_root(aresp);
			bool ok = sy_outcome_validate_response(f.req, r1, &err) &&
			          sy_outcome_validate_response(atomic, r2, &err);
			budget = -1;
			if (ok)
				val_done = true;
			else
				CU_ASSERT_EQUAL(err.code, SY_ERR_NOMEM);
		}
		if (!err_done) {
			sy_buf out = SY_BUF_INIT;
			sy_error_clear(&err);
			budget = n;
			bool ok = sy_outcome_error_body(&out, SY_ERR_SCHEMA_MISMATCH, "mismatch",
			                                &cur, &rec, &err);
			budget = -1;
			if (ok)
				err_done = true;
			else
				CU_ASSERT_EQUAL(err.code, SY_ERR_NOMEM);
			sy_buf_free(&out);
		}
	}
	sy_set_allocator(NULL);
	CU_ASSERT_TRUE(enc_done);
	CU_ASSERT_TRUE(val_done);
	CU_ASSERT_TRUE(err_done);
	sy_json_doc_free(resp);
	sy_json_doc_free(aresp);
	sy_push_request_free(atomic);
	free(atext);
	free(want);
	fixture_free(&f);
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
