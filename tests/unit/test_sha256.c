/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The portable SHA-256 of the WebAssembly build (synchro/sha256.h), natively: FIPS 180-4's
 * examples, the push and row checksum vectors of tests/vectors/push (each digest from its
 * stored preimage), and the same digests as OpenSSL's (the native selection) over every
 * length up to 1100 octets, fed in pieces of every size.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/fingerprint.h"
#include "synchro/json.h"
#include "synchro/sha256.h"
#include "testutil.h"

static void portable_hex(const char *domain, const char *p, size_t n, char hex[SY_FP_HEX_LEN + 1])
{
	sy_sha256_portable s;
	uint8_t md[SY_SHA256_LEN];
	sy_sha256_portable_begin(&s);
	if (domain != NULL)
		sy_sha256_portable_add(&s, domain, strlen(domain) + 1); /* with the 0x00 */
	sy_sha256_portable_add(&s, p, n);
	sy_sha256_portable_end(&s, md);
	sy_fp_hex(md, hex);
}

static void test_fips(void)
{
	char hex[65];
	portable_hex(NULL, "", 0, hex);
	CU_ASSERT_STRING_EQUAL(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	portable_hex(NULL, "abc", 3, hex);
	CU_ASSERT_STRING_EQUAL(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	portable_hex(NULL, m448, strlen(m448), hex);
	CU_ASSERT_STRING_EQUAL(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklm"
	                   "nopqrlmnopqrsmnopqrstnopqrstu";
	portable_hex(NULL, m896, strlen(m896), hex);
	CU_ASSERT_STRING_EQUAL(hex, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
	char *a = malloc(1000000);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	memset(a, 'a', 1000000);
	portable_hex(NULL, a, 1000000, hex);
	CU_ASSERT_STRING_EQUAL(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(a);
}

static char *read_vector(const char *dir, const char *name, const char *suffix, size_t *len)
{
	char path[8192];
	snprintf(path, sizeof path, "%s/%s%s", dir, name, suffix);
	return sy_test_read_file(path, len);
}

/* Each push vector: the batch and mutation fingerprints from the lines of its .preimages. */
static void test_push_vectors(void)
{
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/tests/vectors/push", sy_test_src_dir());
	size_t n;
	char **names = sy_test_list_files(dir, ".json", &n);
	CU_ASSERT(n >= 14);
	size_t checked = 0;
	for (size_t v = 0; v < n; v++) {
		size_t len, plen;
		char *text = read_vector(dir, names[v], ".expected", &len);
		char *pre = read_vector(dir, names[v], ".preimages", &plen);
		CU_ASSERT_PTR_NOT_NULL_FATAL(text);
		CU_ASSERT_PTR_NOT_NULL_FATAL(pre);
		sy_error err;
		sy_json_doc *doc = sy_json_parse(text, len, &err);
		CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
		const sy_json *root = sy_json_doc_root(doc);
		const sy_json *list = sy_json_get(root, "mutations");
		char *line = pre, hex[65];
		for (size_t i = 0; i <= list->u.array.count; i++) {
			char *nl = strchr(line, '\n');
			CU_ASSERT_PTR_NOT_NULL_FATAL(nl);
			const sy_json *want = i == 0 ? sy_json_get(root, "batch_fingerprint")
			                             : sy_json_get(list->u.array.items[i - 1], "fingerprint");
			portable_hex(i == 0 ? SY_FP_BATCH_DOMAIN : SY_FP_MUTATION_DOMAIN, line,
			             (size_t)(nl - line), hex);
			CU_ASSERT_STRING_EQUAL(hex, want->u.string.data);
			checked++;
			line = nl + 1;
		}
		sy_json_doc_free(doc);
		free(text);
		free(pre);
	}
	sy_test_free_names(names, n);
	CU_ASSERT(checked > n);
}

static void test_row_vectors(void)
{
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/tests/vectors/push/rows", sy_test_src_dir());
	size_t n;
	char **names = sy_test_list_files(dir, ".json", &n);
	CU_ASSERT(n >= 3);
	for (size_t v = 0; v < n; v++) {
		size_t elen, plen;
		char *expected = read_vector(dir, names[v], ".expected", &elen);
		char *pre = read_vector(dir, names[v], ".preimage", &plen);
		CU_ASSERT_PTR_NOT_NULL_FATAL(expected);
		CU_ASSERT_PTR_NOT_NULL_FATAL(pre);
		char hex[65];
		portable_hex(SY_FP_ROW_DOMAIN, pre, plen, hex);
		CU_ASSERT_STRING_EQUAL(hex, expected);
		free(expected);
		free(pre);
	}
	sy_test_free_names(names, n);
}

/* Every length up to 1100 (every padding case, several blocks), in pieces of every size. */
static void test_same_as_native(void)
{
	unsigned char buf[1100];
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (unsigned char)(i * 131 + (i >> 3));
	for (size_t len = 0; len <= sizeof buf; len++) {
		uint8_t want[SY_SHA256_LEN], got[SY_SHA256_LEN];
		CU_ASSERT_TRUE_FATAL(sy_sha256(buf, len, want));
		size_t piece = len % 97 + 1;
		sy_sha256_portable s;
		sy_sha256_portable_begin(&s);
		for (size_t at = 0; at < len; at += piece)
			sy_sha256_portable_add(&s, buf + at, len - at < piece ? len - at : piece);
		sy_sha256_portable_end(&s, got);
		CU_ASSERT(memcmp(want, got, sizeof want) == 0);
	}
	/* a context used again starts afresh */
	sy_sha256_ctx c = SY_SHA256_INIT;
	uint8_t one[SY_SHA256_LEN], two[SY_SHA256_LEN];
	CU_ASSERT_TRUE(sy_sha256_begin(&c) && sy_sha256_add(&c, "x", 1) && sy_sha256_end(&c, one));
	CU_ASSERT_TRUE(sy_sha256_begin(&c) && sy_sha256_add(&c, "x", 1) && sy_sha256_end(&c, two));
	sy_sha256_release(&c);
	CU_ASSERT(memcmp(one, two, sizeof one) == 0);
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"FIPS 180-4 examples", test_fips},
	        {"push vectors from their preimages", test_push_vectors},
	        {"row checksum vectors from their preimages", test_row_vectors},
	        {"same digests as the native selection", test_same_as_native},
	        {NULL, NULL},
	};
	sy_test_add_suite("sha256", tests);
	return sy_test_run();
}
