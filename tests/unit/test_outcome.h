/* SPDX-License-Identifier: BSD-2-Clause */
/* What the files of the outcome suite share: fixtures (test_outcome.c) and tests. */
#ifndef SY_TEST_OUTCOME_H
#define SY_TEST_OUTCOME_H

#include "synchro/outcome.h"

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

/* The responses below keep the layout of the JSON they spell. */
/* clang-format off */
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
/* clang-format on */

/* The fixtures' JSON texts (see test_outcome.c). */
extern const char request_text[];         /* a non-atomic request of six mutations */
extern const char atomic_text[];          /* an atomic request of three */
extern const char response_text[];        /* the valid response to request_text */
extern const char atomic_ok_text[];       /* atomic_text applied */
extern const char atomic_conflict_text[]; /* atomic_text failed at a conflict */
extern const char atomic_invalid_text[];  /* atomic_text failed at a terminal rejection */

/* Parses a fixture (fatal when it does not parse); free with sy_json_doc_free(). */
sy_json_doc *parse(const char *text);
/* text with every checksum token replaced by its checksum; free() it. */
char *expand(const char *text);
/* Replaces every occurrence of from in *s (a malloc'd string) with to. */
void replace_all(char **s, const char *from, const char *to);
/* The checksum of rows[i] (a token of the fixtures). */
void row_checksum(size_t i, char hex[SY_FP_HEX_LEN + 1]);
/* Parses a request fixture (fatal when refused). */
sy_push_request *request(const char *text);
/* Validates text (tokens expanded) against req; returns the verdict, message in err. */
bool validate_text(const sy_push_request *req, const char *text, sy_error *err);
sy_schema_ref ref_of(uint64_t version, const char *hash);

/* Keeps the documents outcomes point into alive for one test. */
typedef struct {
	sy_push_request *req;
	sy_json_doc *docs[8];
	size_t ndocs;
	sy_outcome o[6];
} fixture;

/* The outcomes of response_text, built as the server would. */
void fixture_init(fixture *f);
void fixture_free(fixture *f);
const sy_json *fixture_json(fixture *f, const char *text);
/* Asserts that o encodes as expected (tokens expanded). */
void assert_encodes(const sy_outcome *o, const char *expected);

void test_encode_kinds(void);
void test_encode_checksum(void);
void test_outcome_check(void);
void test_response_bytes(void);
void test_atomic_group(void);
void test_error_bodies(void);
void test_validate_valid(void);
void test_validate_negatives(void);
void test_validate_built(void);
void test_alloc_failures(void);

#endif
