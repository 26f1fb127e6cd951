/* SPDX-License-Identifier: BSD-2-Clause */
/* Push fingerprints and row checksums: golden vectors, preimage assembly, helpers, failures. */
#include "config.h"

#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/buf.h"
#include "synchro/fingerprint.h"
#include "synchro/jcs.h"
#include "synchro/push.h"
#include "testutil.h"

static const char *vector_dir(const char *sub)
{
	static char dir[4096];
	snprintf(dir, sizeof dir, "%s/tests/vectors/push%s", sy_test_src_dir(), sub);
	return dir;
}

static char *read_in(const char *dir, const char *name, const char *suffix, size_t *len)
{
	char path[8192];
	int n = snprintf(path, sizeof path, "%s/%s%s", dir, name, suffix);
	if (n < 0 || (size_t)n >= sizeof path)
		return NULL;
	return sy_test_read_file(path, len);
}

/* A vector's request, parsed, and its user (NAME.user, else "alice"). */
static sy_push_request *load(const char *name, char **user)
{
	size_t len;
	char *body = read_in(vector_dir(""), name, ".json", &len);
	if (body == NULL)
		return NULL;
	*user = read_in(vector_dir(""), name, ".user", NULL);
	if (*user == NULL)
		*user = strdup("alice");
	sy_error err;
	sy_error_clear(&err);
	sy_push_request *req = sy_push_parse(body, len, &err);
	if (req == NULL)
		fprintf(stderr, "\n  %s: %s\n", name, err.message);
	free(body);
	return req;
}

static void assert_hex(const uint8_t *digest, const sy_json *expected)
{
	char hex[SY_FP_HEX_LEN + 1];
	sy_fp_hex(digest, hex);
	CU_ASSERT_PTR_NOT_NULL_FATAL(expected);
	CU_ASSERT_EQUAL_FATAL(expected->type, SY_JSON_STRING);
	CU_ASSERT_STRING_EQUAL(hex, expected->u.string.data);
}

/* Fingerprints and preimages of every vector equal the independently derived files. */
static void test_vectors(void)
{
	size_t n;
	char **names = sy_test_list_files(vector_dir(""), ".json", &n);
	CU_ASSERT(n >= 14);
	for (size_t v = 0; v < n; v++) {
		char *user = NULL;
		sy_push_request *req = load(names[v], &user);
		CU_ASSERT_PTR_NOT_NULL_FATAL(req);
		sy_error err;
		sy_fingerprint batch, *fps = calloc(req->mutation_count, sizeof *fps);
		CU_ASSERT_TRUE_FATAL(sy_fp_push(req, user, strlen(user), &batch, fps, &err));
		/* the mutation fingerprints alone are those of sy_fp_push */
		sy_fingerprint *alone = calloc(req->mutation_count, sizeof *alone);
		CU_ASSERT_TRUE_FATAL(sy_fp_mutations(req, user, strlen(user), alone, &err));
		for (size_t i = 0; i < req->mutation_count; i++)
			CU_ASSERT_TRUE(sy_fp_equal(&alone[i], &fps[i]));
		free(alone);

		size_t len;
		char *text = read_in(vector_dir(""), names[v], ".expected", &len);
		CU_ASSERT_PTR_NOT_NULL_FATAL(text);
		sy_json_doc *doc = sy_json_parse(text, len, &err);
		CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
		const sy_json *root = sy_json_doc_root(doc);
		assert_hex(batch.digest, sy_json_get(root, "batch_fingerprint"));
		const sy_json *list = sy_json_get(root, "mutations");
		CU_ASSERT_EQUAL_FATAL(list->u.array.count, req->mutation_count);
		for (size_t i = 0; i < req->mutation_count; i++) {
			const sy_json *item = list->u.array.items[i];
			CU_ASSERT_STRING_EQUAL(sy_json_get(item, "mutation_id")->u.string.data,
			                       req->mutations[i].mutation_id);
			assert_hex(fps[i].digest, sy_json_get(item, "fingerprint"));
			CU_ASSERT_STRING_EQUAL(fps[i].algorithm, "sha256");
			CU_ASSERT_EQUAL(fps[i].version, 1);
			CU_ASSERT_STRING_EQUAL(fps[i].domain,
			                       "synchro:v3:push-mutation-fingerprint:v1");

			/* one mutation alone gives the same fingerprint */
			sy_fingerprint one;
			CU_ASSERT_TRUE(sy_fp_mutation(req, &req->mutations[i], user, strlen(user),
			                              &one, &err));
			CU_ASSERT_TRUE(sy_fp_equal(&one, &fps[i]));
		}
		CU_ASSERT_STRING_EQUAL(batch.algorithm, "sha256");
		CU_ASSERT_EQUAL(batch.version, 1);
		CU_ASSERT_STRING_EQUAL(batch.domain, "synchro:v3:push-batch-fingerprint:v1");
		sy_fingerprint b2;
		CU_ASSERT_TRUE(sy_fp_batch(req, user, strlen(user), &b2, &err));
		CU_ASSERT_TRUE(sy_fp_equal(&b2, &batch));
		sy_json_doc_free(doc);
		free(text);

		/* preimages: the batch line, then one line per mutation */
		sy_buf pre = SY_BUF_INIT;
		CU_ASSERT_TRUE(sy_fp_batch_preimage(req, user, strlen(user), &pre, &err));
		CU_ASSERT_TRUE(sy_buf_putc(&pre, '\n'));
		for (size_t i = 0; i < req->mutation_count; i++) {
			CU_ASSERT_TRUE(sy_fp_mutation_preimage(req, &req->mutations[i], user,
			                                       strlen(user), &pre, &err));
			CU_ASSERT_TRUE(sy_buf_putc(&pre, '\n'));
		}
		text = read_in(vector_dir(""), names[v], ".preimages", &len);
		CU_ASSERT_PTR_NOT_NULL_FATAL(text);
		CU_ASSERT_EQUAL(pre.len, len);
		if (pre.len != len || memcmp(pre.data, text, len) != 0) {
			fprintf(stderr, "\n  %s: preimages differ\n", names[v]);
			CU_FAIL("preimages differ");
		}
		free(text);
		sy_buf_free(&pre);
		free(fps);
		free(user);
		sy_push_request_free(req);
	}
	sy_test_free_names(names, n);
}

/* --- the assembled preimages equal the JCS of the fully built arrays ------------- */

/* An array of the given items (NULL-terminated list); NULL when any is NULL. */
static sy_json *arr(sy_json_doc *d, ...)
{
	va_list ap;
	sy_json *a = sy_json_new_array(d);
	bool ok = a != NULL;
	va_start(ap, d);
	for (sy_json *x = va_arg(ap, sy_json *); x != NULL; x = va_arg(ap, sy_json *))
		ok = ok && sy_json_array_push(d, a, x);
	va_end(ap);
	return ok ? a : NULL;
}

static sy_json *str(sy_json_doc *d, const char *s)
{
	return sy_json_new_cstring(d, s);
}

static sy_json *schema_ref(sy_json_doc *d, const sy_schema_ref *r)
{
	char dec[24];
	snprintf(dec, sizeof dec, "%llu", (unsigned long long)r->version);
	return arr(d, str(d, dec), str(d, r->hash), NULL);
}

/* Byte order of member names, by a plain insertion sort (not the code under test's qsort). */
static void sort_members(const sy_json_member **m, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		for (size_t k = i; k > 0; k--) {
			const sy_json_member *a = m[k - 1], *b = m[k];
			size_t l = a->key_len < b->key_len ? a->key_len : b->key_len;
			int c = memcmp(a->key, b->key, l);
			if (c < 0 || (c == 0 && a->key_len <= b->key_len))
				break;
			m[k - 1] = b;
			m[k] = a;
		}
	}
}

/* normalized_mutation built from the request's own JSON members. */
static sy_json *build_mutation(sy_json_doc *d, const sy_push_request *req, size_t i)
{
	const sy_json *src = sy_json_get(sy_json_doc_root(req->doc), "mutations")->u.array.items[i];
	const sy_mutation *m = &req->mutations[i];
	const sy_json *pk = sy_json_get(src, "pk");
	const sy_json *base = sy_json_get(src, "base_version");
	const sy_json *cols = sy_json_get(src, "columns");
	sy_json *jbase = base ? arr(d, sy_json_new_int(d, 1), sy_json_copy(d, base), NULL)
	                      : arr(d, sy_json_new_int(d, 0), NULL);
	sy_json *jcols;
	if (cols == NULL) {
		jcols = arr(d, sy_json_new_int(d, 0), NULL);
	} else {
		size_t n = cols->u.object.count;
		const sy_json_member **mb = calloc(n + 1, sizeof *mb);
		for (size_t k = 0; k < n; k++)
			mb[k] = &cols->u.object.members[k];
		sort_members(mb, n);
		sy_json *list = sy_json_new_array(d);
		for (size_t k = 0; k < n && list != NULL; k++) {
			sy_json *pair = arr(d, sy_json_new_string(d, mb[k]->key, mb[k]->key_len),
			                    sy_json_copy(d, mb[k]->value), NULL);
			if (!sy_json_array_push(d, list, pair))
				list = NULL;
		}
		free(mb);
		jcols = arr(d, sy_json_new_int(d, 1), list, NULL);
	}
	return arr(d, str(d, "mutation-v1"), sy_json_copy(d, sy_json_get(src, "mutation_id")),
	           sy_json_copy(d, sy_json_get(src, "table")),
	           arr(d, sy_json_copy(d, sy_json_get(pk, "field")),
	               sy_json_copy(d, sy_json_get(pk, "value")), NULL),
	           schema_ref(d, &m->authored_schema),
	           sy_json_copy(d, sy_json_get(src, "operation")), jbase,
	           sy_json_copy(d, sy_json_get(src, "client_version")), jcols, NULL);
}

static bool jcs_equals(const sy_json *v, const char *bytes, size_t len)
{
	sy_buf b = SY_BUF_INIT;
	sy_error err;
	bool ok = sy_jcs_write(&b, v, &err) && b.len == len && memcmp(b.data, bytes, len) == 0;
	sy_buf_free(&b);
	return ok;
}

/* SHA-256(domain 0x00 JCS(v)), computed here with EVP directly. */
static void digest_of(const char *domain, const sy_json *v, uint8_t out[32])
{
	sy_buf b = SY_BUF_INIT;
	sy_error err;
	CU_ASSERT_TRUE_FATAL(sy_jcs_write(&b, v, &err));
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned int n;
	CU_ASSERT_EQUAL(EVP_DigestInit_ex(md, EVP_sha256(), NULL), 1);
	CU_ASSERT_EQUAL(EVP_DigestUpdate(md, domain, strlen(domain)), 1);
	CU_ASSERT_EQUAL(EVP_DigestUpdate(md, "", 1), 1);
	CU_ASSERT_EQUAL(EVP_DigestUpdate(md, b.data, b.len), 1);
	CU_ASSERT_EQUAL(EVP_DigestFinal_ex(md, out, &n), 1);
	EVP_MD_CTX_free(md);
	sy_buf_free(&b);
}

static void test_assembly_equals_jcs(void)
{
	size_t n;
	char **names = sy_test_list_files(vector_dir(""), ".json", &n);
	for (size_t v = 0; v < n; v++) {
		char *user = NULL;
		sy_push_request *req = load(names[v], &user);
		CU_ASSERT_PTR_NOT_NULL_FATAL(req);
		sy_json_doc *d = sy_json_doc_new();
		sy_error err;
		char gen[24];
		snprintf(gen, sizeof gen, "%llu", (unsigned long long)req->client_generation);
		sy_json *muts = sy_json_new_array(d);
		for (size_t i = 0; i < req->mutation_count; i++) {
			const sy_mutation *m = &req->mutations[i];
			sy_json *nm = build_mutation(d, req, i);
			CU_ASSERT_PTR_NOT_NULL_FATAL(nm);
			CU_ASSERT_TRUE(jcs_equals(nm, m->normalized, m->normalized_len));
			/* pk_canonical is JCS([field, value]) */
			CU_ASSERT_TRUE(jcs_equals(nm->u.array.items[3], m->pk_canonical,
			                          m->pk_canonical_len));

			sy_json *scope = arr(d, str(d, "mutation-scope-v1"), str(d, user),
			                     str(d, req->client_id), nm, NULL);
			sy_buf pre = SY_BUF_INIT;
			CU_ASSERT_TRUE(
			        sy_fp_mutation_preimage(req, m, user, strlen(user), &pre, &err));
			CU_ASSERT_TRUE(jcs_equals(scope, pre.data, pre.len));
			sy_buf_free(&pre);

			uint8_t want[32];
			sy_fingerprint fp;
			digest_of(SY_FP_MUTATION_DOMAIN, scope, want);
			CU_ASSERT_TRUE(sy_fp_mutation(req, m, user, strlen(user), &fp, &err));
			CU_ASSERT_EQUAL(memcmp(fp.digest, want, 32), 0);
			CU_ASSERT_TRUE(sy_json_array_push(d, muts, nm));
		}
		sy_json *batch =
		        arr(d, str(d, req->atomic ? "atomic-batch-v1" : "batch-v1"), str(d, user),
		            str(d, req->client_id), str(d, gen), str(d, req->batch_id),
		            schema_ref(d, &req->schema), muts, NULL);
		CU_ASSERT_PTR_NOT_NULL_FATAL(batch);
		sy_buf pre = SY_BUF_INIT;
		CU_ASSERT_TRUE(sy_fp_batch_preimage(req, user, strlen(user), &pre, &err));
		CU_ASSERT_TRUE(jcs_equals(batch, pre.data, pre.len));
		sy_buf_free(&pre);
		uint8_t want[32];
		sy_fingerprint fp;
		digest_of(SY_FP_BATCH_DOMAIN, batch, want);
		CU_ASSERT_TRUE(sy_fp_batch(req, user, strlen(user), &fp, &err));
		CU_ASSERT_EQUAL(memcmp(fp.digest, want, 32), 0);
		sy_json_doc_free(d);
		free(user);
		sy_push_request_free(req);
	}
	sy_test_free_names(names, n);
}

/* doc/contract.md#normalized-batch: order and the atomic tag change only the batch fingerprint. */
static void test_order_and_atomic(void)
{
	static const char *const names[] = {"09-order-abc", "10-order-cab", "11-atomic"};
	sy_fingerprint batch[3], fps[3][3];
	sy_error err;
	for (int v = 0; v < 3; v++) {
		char *user;
		sy_push_request *req = load(names[v], &user);
		CU_ASSERT_PTR_NOT_NULL_FATAL(req);
		CU_ASSERT_EQUAL_FATAL(req->mutation_count, 3);
		CU_ASSERT_TRUE(sy_fp_push(req, user, strlen(user), &batch[v], fps[v], &err));
		if (v == 1) { /* C A B -> A B C */
			sy_fingerprint c = fps[1][0];
			fps[1][0] = fps[1][1];
			fps[1][1] = fps[1][2];
			fps[1][2] = c;
		}
		free(user);
		sy_push_request_free(req);
	}
	CU_ASSERT_FALSE(sy_fp_equal(&batch[0], &batch[1]));
	CU_ASSERT_FALSE(sy_fp_equal(&batch[0], &batch[2]));
	CU_ASSERT_FALSE(sy_fp_equal(&batch[1], &batch[2]));
	for (int i = 0; i < 3; i++) {
		CU_ASSERT_TRUE(sy_fp_equal(&fps[0][i], &fps[1][i]));
		CU_ASSERT_TRUE(sy_fp_equal(&fps[0][i], &fps[2][i]));
	}
	/* another user: every fingerprint changes */
	char *user;
	sy_push_request *req = load(names[0], &user);
	CU_ASSERT_PTR_NOT_NULL_FATAL(req);
	sy_fingerprint b, m[3];
	CU_ASSERT_TRUE(sy_fp_push(req, "bob", 3, &b, m, &err));
	CU_ASSERT_FALSE(sy_fp_equal(&b, &batch[0]));
	for (int i = 0; i < 3; i++)
		CU_ASSERT_FALSE(sy_fp_equal(&m[i], &fps[0][i]));
	free(user);
	sy_push_request_free(req);
}

static void test_hex_and_equality(void)
{
	uint8_t d[32], back[32];
	char hex[65];
	for (int i = 0; i < 32; i++)
		d[i] = (uint8_t)(i * 37 + 5);
	sy_fp_hex(d, hex);
	CU_ASSERT_EQUAL(strlen(hex), 64);
	CU_ASSERT_STRING_EQUAL(hex,
	                       "052a4f7499bee3082d52779cc1e60b30557a9fc4e90e33587da2c7ec11365b80");
	CU_ASSERT_TRUE(sy_fp_from_hex(hex, 64, back));
	CU_ASSERT_EQUAL(memcmp(d, back, 32), 0);
	char upper[65];
	for (int i = 0; i < 65; i++)
		upper[i] = (char)(hex[i] >= 'a' && hex[i] <= 'f' ? hex[i] - 32 : hex[i]);
	memset(back, 0, 32);
	CU_ASSERT_TRUE(sy_fp_from_hex(upper, 64, back));
	CU_ASSERT_EQUAL(memcmp(d, back, 32), 0);
	CU_ASSERT_FALSE(sy_fp_from_hex(hex, 63, back));
	CU_ASSERT_FALSE(sy_fp_from_hex(hex, 65, back));
	CU_ASSERT_FALSE(sy_fp_from_hex(NULL, 64, back));
	hex[10] = 'g';
	CU_ASSERT_FALSE(sy_fp_from_hex(hex, 64, back));

	sy_fingerprint a = {SY_FP_ALGORITHM, SY_FP_VERSION, SY_FP_BATCH_DOMAIN, {0}};
	memcpy(a.digest, d, 32);
	sy_fingerprint b = a;
	CU_ASSERT_TRUE(sy_fp_equal(&a, &b));
	CU_ASSERT_TRUE(
	        sy_fp_matches(&a, "sha256", 1, "synchro:v3:push-batch-fingerprint:v1", d, 32));
	CU_ASSERT_FALSE(
	        sy_fp_matches(&a, "sha256", 1, "synchro:v3:push-batch-fingerprint:v1", d, 31));
	CU_ASSERT_FALSE(
	        sy_fp_matches(&a, "sha256", 2, "synchro:v3:push-batch-fingerprint:v1", d, 32));
	CU_ASSERT_FALSE(
	        sy_fp_matches(&a, "sha512", 1, "synchro:v3:push-batch-fingerprint:v1", d, 32));
	CU_ASSERT_FALSE(sy_fp_matches(&a, "sha256", 1, SY_FP_MUTATION_DOMAIN, d, 32));
	CU_ASSERT_FALSE(sy_fp_matches(&a, NULL, 1, SY_FP_BATCH_DOMAIN, d, 32));
	b.domain = SY_FP_MUTATION_DOMAIN;
	CU_ASSERT_FALSE(sy_fp_equal(&a, &b));
	b = a;
	b.digest[31] ^= 1;
	CU_ASSERT_FALSE(sy_fp_equal(&a, &b));
}

static void user_case(const char *user, size_t len, bool valid)
{
	sy_error err;
	sy_error_clear(&err);
	bool ok = sy_fp_user_valid(user, len, &err);
	CU_ASSERT_EQUAL(ok, valid);
	CU_ASSERT_EQUAL(err.code, valid ? SY_ERR_NONE : SY_ERR_AUTH_REQUIRED);
	if (ok != valid)
		fprintf(stderr, "\n  user case of %zu octets\n", len);
}

static void test_user_validation(void)
{
	char big[258];
	memset(big, 'u', sizeof big);
	user_case("alice", 5, true);
	user_case("Zo\xc3\xab \xf0\x9f\x99\x82", 9, true);
	user_case("a b@example.org", 15, true);
	user_case(big, 256, true);
	user_case(big, 257, false);
	user_case("", 0, false);
	user_case(NULL, 0, false);
	user_case("a\nb", 3, false);
	user_case("a\0b", 3, false);
	user_case("a\x7f", 2, false);
	user_case("a\xc2\x85", 3, false);        /* U+0085, a C1 control */
	user_case("a\xc2\xa0", 3, true);         /* U+00A0 is not */
	user_case("\xc0\x80", 2, false);         /* overlong */
	user_case("\xe0\x80\xaf", 3, false);     /* overlong */
	user_case("\xed\xa0\x80", 3, false);     /* surrogate */
	user_case("\xf4\x90\x80\x80", 4, false); /* beyond U+10FFFF */
	user_case("\xf5\x80\x80\x80", 4, false);
	user_case("\xe2\x82", 2, false); /* truncated */
	user_case("\x80", 1, false);

	/* the fingerprint APIs refuse an invalid user too */
	char *u;
	sy_push_request *req = load("01-insert-empty-columns", &u);
	CU_ASSERT_PTR_NOT_NULL_FATAL(req);
	sy_fingerprint b, m;
	sy_buf pre = SY_BUF_INIT;
	sy_error err;
	CU_ASSERT_FALSE(sy_fp_push(req, "", 0, &b, &m, &err));
	CU_ASSERT_EQUAL(err.code, SY_ERR_AUTH_REQUIRED);
	CU_ASSERT_FALSE(sy_fp_batch(req, "a\n", 2, &b, &err));
	CU_ASSERT_FALSE(sy_fp_mutation(req, &req->mutations[0], "a\n", 2, &m, &err));
	CU_ASSERT_FALSE(sy_fp_mutations(req, "a\n", 2, &m, &err));
	CU_ASSERT_EQUAL(err.code, SY_ERR_AUTH_REQUIRED);
	CU_ASSERT_FALSE(sy_fp_batch_preimage(req, "a\n", 2, &pre, &err));
	CU_ASSERT_FALSE(sy_fp_mutation_preimage(req, &req->mutations[0], "a\n", 2, &pre, &err));
	CU_ASSERT_EQUAL(pre.len, 0);
	sy_buf_free(&pre);
	free(u);
	sy_push_request_free(req);
}

/* --- row checksums ---------------------------------------------------------------- */

static bool row_of(const sy_json *root, sy_schema_ref *schema, const sy_json **table,
                   const sy_json **pk)
{
	*table = sy_json_get(root, "table");
	*pk = sy_json_get(root, "pk");
	return sy_schema_ref_parse(sy_json_get(root, "schema"), schema) && *table != NULL &&
	       *pk != NULL;
}

static void test_row_vectors(void)
{
	size_t n;
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", vector_dir("/rows"));
	char **names = sy_test_list_files(dir, ".json", &n);
	CU_ASSERT(n >= 3);
	for (size_t v = 0; v < n; v++) {
		size_t len, elen, plen;
		char *text = read_in(dir, names[v], ".json", &len);
		char *expected = read_in(dir, names[v], ".expected", &elen);
		char *preimage = read_in(dir, names[v], ".preimage", &plen);
		CU_ASSERT_PTR_NOT_NULL_FATAL(text);
		CU_ASSERT_PTR_NOT_NULL_FATAL(expected);
		CU_ASSERT_PTR_NOT_NULL_FATAL(preimage);
		sy_error err;
		sy_json_doc *doc = sy_json_parse(text, len, &err);
		CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
		const sy_json *root = sy_json_doc_root(doc), *table, *pk;
		sy_schema_ref schema;
		CU_ASSERT_TRUE_FATAL(row_of(root, &schema, &table, &pk));
		const sy_json *field = sy_json_get(pk, "field");
		char hex[65];
		CU_ASSERT_TRUE(sy_fp_row_checksum(&schema, table->u.string.data,
		                                  table->u.string.len, field->u.string.data,
		                                  field->u.string.len, sy_json_get(pk, "value"),
		                                  sy_json_get(root, "server_row"), hex, &err));
		CU_ASSERT_STRING_EQUAL(hex, expected);
		sy_buf pre = SY_BUF_INIT;
		CU_ASSERT_TRUE(sy_fp_row_preimage(&schema, table->u.string.data,
		                                  table->u.string.len, field->u.string.data,
		                                  field->u.string.len, sy_json_get(pk, "value"),
		                                  sy_json_get(root, "server_row"), &pre, &err));
		CU_ASSERT_EQUAL(pre.len, plen);
		CU_ASSERT(pre.len == plen && memcmp(pre.data, preimage, plen) == 0);
		sy_buf_free(&pre);
		sy_json_doc_free(doc);
		free(text);
		free(expected);
		free(preimage);
	}
	sy_test_free_names(names, n);
}

static void row_refused(const char *row_json, const char *pk_json, const char *message)
{
	sy_error err;
	sy_json_doc *row = sy_json_parse(row_json, strlen(row_json), &err);
	sy_json_doc *pk = sy_json_parse(pk_json, strlen(pk_json), &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(row);
	CU_ASSERT_PTR_NOT_NULL_FATAL(pk);
	sy_schema_ref s = {1, "0000000000000000000000000000000000000000000000000000000000000000"};
	char hex[65];
	sy_error_clear(&err);
	CU_ASSERT_FALSE(sy_fp_row_checksum(&s, "t", 1, "id", 2, sy_json_doc_root(pk),
	                                   sy_json_doc_root(row), hex, &err));
	CU_ASSERT_EQUAL(err.code, SY_ERR_INVALID_REQUEST);
	CU_ASSERT_STRING_EQUAL(err.message, message);
	sy_json_doc_free(row);
	sy_json_doc_free(pk);
}

static void test_row_errors(void)
{
	row_refused("[]", "1", "row: server_row is not an object");
	row_refused("{\"a\":1}", "null", "row: pk value is not a string or a number");
	row_refused("{\"a\":1}", "[1]", "row: pk value is not a string or a number");
	row_refused("{\"a\":1,\"id\":2}", "1", "row: server_row holds the pk field");

	/* a builder can repeat a member; the checksum refuses it */
	sy_json_doc *d = sy_json_doc_new();
	sy_json *row = sy_json_new_object(d);
	CU_ASSERT_TRUE(sy_json_object_put(d, row, "b", sy_json_new_int(d, 1)));
	CU_ASSERT_TRUE(sy_json_object_put(d, row, "a", sy_json_new_int(d, 1)));
	CU_ASSERT_TRUE(sy_json_object_put(d, row, "b", sy_json_new_int(d, 2)));
	sy_schema_ref s = {1, "0000000000000000000000000000000000000000000000000000000000000000"};
	char hex[65];
	sy_error err;
	CU_ASSERT_FALSE(
	        sy_fp_row_checksum(&s, "t", 1, "id", 2, sy_json_new_int(d, 1), row, hex, &err));
	CU_ASSERT_EQUAL(err.code, SY_ERR_INVALID_REQUEST);
	CU_ASSERT_STRING_EQUAL(err.message, "row: field repeated");
	sy_json_doc_free(d);
}

/* The checksum binds the schema hash: the same row under another schema differs. */
static void test_row_binds_schema(void)
{
	sy_error err;
	const char *row = "{\"title\":\"x\"}";
	sy_json_doc *d = sy_json_parse(row, strlen(row), &err);
	sy_json_doc *pk = sy_json_parse("\"k\"", 3, &err);
	sy_schema_ref s1 = {1, "0000000000000000000000000000000000000000000000000000000000000000"};
	sy_schema_ref s2 = {1, "0000000000000000000000000000000000000000000000000000000000000001"};
	char h1[65], h2[65];
	CU_ASSERT_TRUE(sy_fp_row_checksum(&s1, "t", 1, "id", 2, sy_json_doc_root(pk),
	                                  sy_json_doc_root(d), h1, &err));
	CU_ASSERT_TRUE(sy_fp_row_checksum(&s2, "t", 1, "id", 2, sy_json_doc_root(pk),
	                                  sy_json_doc_root(d), h2, &err));
	CU_ASSERT_STRING_NOT_EQUAL(h1, h2);
	sy_json_doc_free(d);
	sy_json_doc_free(pk);
}

/* --- allocation failures ---------------------------------------------------------- */

/* The fingerprint work of synchroctl fingerprint on one request; false on any failure. */
static bool fingerprint_all(const sy_push_request *req, sy_fingerprint *fps, sy_error *err)
{
	sy_fingerprint batch;
	sy_buf pre = SY_BUF_INIT;
	bool ok = sy_fp_push(req, "alice", 5, &batch, fps, err) &&
	          sy_fp_batch_preimage(req, "alice", 5, &pre, err) &&
	          sy_fp_mutation_preimage(req, &req->mutations[1], "alice", 5, &pre, err);
	sy_buf_free(&pre);
	return ok;
}

static void test_allocation_failures(void)
{
	char *user;
	sy_push_request *req = load("09-order-abc", &user);
	CU_ASSERT_PTR_NOT_NULL_FATAL(req);
	sy_fingerprint fps[3];
	long failures = 0;
	for (long fail_at = 0;; fail_at++) {
		sy_error err;
		sy_error_clear(&err);
		sy_test_alloc_install(fail_at, false);
		bool ok = fingerprint_all(req, fps, &err);
		sy_test_alloc_remove();
		CU_ASSERT_EQUAL(sy_test_alloc.live, 0);
		if (ok)
			break;
		failures++;
		CU_ASSERT_EQUAL(err.code, SY_ERR_NOMEM);
		if (err.code != SY_ERR_NOMEM || sy_test_alloc.live != 0)
			break;
	}
	CU_ASSERT_EQUAL(failures, sy_test_alloc.calls);
	CU_ASSERT(failures >= 3);

	/* the row checksum too */
	const char *row = "{\"b\":[1,{\"x\":\"y\"}],\"a\":\"text\",\"c\":null}";
	sy_error err;
	sy_json_doc *d = sy_json_parse(row, strlen(row), &err);
	sy_json_doc *pk = sy_json_parse("7", 1, &err);
	sy_schema_ref s = {3, "0000000000000000000000000000000000000000000000000000000000000000"};
	char hex[65];
	failures = 0;
	for (long fail_at = 0;; fail_at++) {
		sy_error_clear(&err);
		sy_test_alloc_install(fail_at, false);
		bool ok = sy_fp_row_checksum(&s, "t", 1, "id", 2, sy_json_doc_root(pk),
		                             sy_json_doc_root(d), hex, &err);
		sy_test_alloc_remove();
		CU_ASSERT_EQUAL(sy_test_alloc.live, 0);
		if (ok)
			break;
		failures++;
		CU_ASSERT_EQUAL(err.code, SY_ERR_NOMEM);
		if (err.code != SY_ERR_NOMEM)
			break;
	}
	CU_ASSERT_EQUAL(failures, sy_test_alloc.calls);
	CU_ASSERT(failures >= 2);
	sy_json_doc_free(d);
	sy_json_doc_free(pk);
	free(user);
	sy_push_request_free(req);
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"golden vectors", test_vectors},
	        {"assembled preimages equal JCS of built arrays", test_assembly_equals_jcs},
	        {"order and atomic change only the batch", test_order_and_atomic},
	        {"hex and equality", test_hex_and_equality},
	        {"user validation", test_user_validation},
	        {"row checksum vectors", test_row_vectors},
	        {"row checksum errors", test_row_errors},
	        {"row checksum binds the schema", test_row_binds_schema},
	        {"each allocation fails in turn", test_allocation_failures},
	        {NULL, NULL},
	};
	sy_test_add_suite("fingerprint", tests);
	return sy_test_run();
}
