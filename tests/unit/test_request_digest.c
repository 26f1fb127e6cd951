/* SPDX-License-Identifier: BSD-2-Clause */
/* The request octets as a replay key (synchro/request_digest.h): the digest's exact preimage,
 * and the peek of client_id and batch_id, which for any body the parser accepts answers that
 * request's own ids or nothing. */
#include "config.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/push.h"
#include "synchro/request_digest.h"
#include "testutil.h"

#define CID "0a0a0a0a-1111-4111-8111-111111111111"
#define BID "0b0b0b0b-2222-4222-8222-222222222222"

/* SHA-256 over the documented preimage, with EVP directly. */
static void expected_digest(const char *user, const char *body, size_t len, uint8_t out[32])
{
	size_t ulen = strlen(user);
	unsigned char be[4] = {(unsigned char)(ulen >> 24), (unsigned char)(ulen >> 16),
	                       (unsigned char)(ulen >> 8), (unsigned char)ulen};
	unsigned int n = 0;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	CU_ASSERT_PTR_NOT_NULL_FATAL(md);
	CU_ASSERT_EQUAL(EVP_DigestInit_ex(md, EVP_sha256(), NULL), 1);
	CU_ASSERT_EQUAL(EVP_DigestUpdate(md, "synchro:v3:push-request-octets:v1", 33), 1);
	CU_ASSERT_EQUAL(EVP_DigestUpdate(md, "", 1), 1);
	CU_ASSERT_EQUAL(EVP_DigestUpdate(md, be, 4), 1);
	CU_ASSERT_EQUAL(EVP_DigestUpdate(md, user, ulen), 1);
	CU_ASSERT_EQUAL(EVP_DigestUpdate(md, body, len), 1);
	CU_ASSERT_EQUAL(EVP_DigestFinal_ex(md, out, &n), 1);
	CU_ASSERT_EQUAL(n, 32);
	EVP_MD_CTX_free(md);
}

static void digest(const char *user, const char *body, uint8_t out[32])
{
	sy_error err;
	sy_error_clear(&err);
	CU_ASSERT_TRUE(sy_request_digest(user, strlen(user), body, strlen(body), out, &err));
}

static void test_digest(void)
{
	static const char body[] = "{\"client_id\":\"" CID "\"}";
	uint8_t got[32], want[32], other[32];
	CU_ASSERT_STRING_EQUAL(SY_REQUEST_DIGEST_DOMAIN, "synchro:v3:push-request-octets:v1");
	digest("alice", body, got);
	expected_digest("alice", body, strlen(body), want);
	CU_ASSERT_EQUAL(memcmp(got, want, 32), 0);
	/* the user is bound, and where it ends is too */
	digest("bob", body, other);
	CU_ASSERT_NOT_EQUAL(memcmp(got, other, 32), 0);
	uint8_t a[32], b[32];
	digest("ab", "c{}", a);
	digest("a", "bc{}", b);
	CU_ASSERT_NOT_EQUAL(memcmp(a, b, 32), 0);
	/* every octet counts: one more space is another digest */
	digest("alice", "{\"client_id\": \"" CID "\"}", other);
	CU_ASSERT_NOT_EQUAL(memcmp(got, other, 32), 0);
	/* an empty body has a digest too */
	sy_error err;
	sy_error_clear(&err);
	CU_ASSERT_TRUE(sy_request_digest("alice", 5, "", 0, other, &err));
	expected_digest("alice", "", 0, want);
	CU_ASSERT_EQUAL(memcmp(other, want, 32), 0);
}

static bool peek(const char *body, char c[SY_UUID_LEN + 1], char b[SY_UUID_LEN + 1])
{
	memset(c, 'x', SY_UUID_LEN + 1);
	memset(b, 'x', SY_UUID_LEN + 1);
	return sy_request_peek_ids(body, strlen(body), c, b);
}

static void test_peek_finds(void)
{
	char c[SY_UUID_LEN + 1], b[SY_UUID_LEN + 1];
	static const char *found[] = {
	        "{\"client_id\":\"" CID "\",\"batch_id\":\"" BID "\"}",
	        " \r\n\t{ \"batch_id\" : \"" BID "\" , \"client_id\"\n:\n\"" CID "\" }",
	        /* after members of every kind, nested strings holding quotes and brackets */
	        "{\"atomic\":false,\"n\":-1.5e3,\"x\":null,\"mutations\":[{\"a\":\"]}\\\"\","
	        "\"b\":[[],{}]},\"\\u0041\"],\"schema\":{\"version\":\"1\"},\"batch_id\":\"" BID
	        "\",\"client_id\":\"" CID "\",\"after\":[}",
	        /* the members after the two are not looked at */
	        "{\"client_id\":\"" CID "\",\"batch_id\":\"" BID "\"",
	};
	for (size_t i = 0; i < sizeof found / sizeof *found; i++) {
		CU_ASSERT_TRUE(peek(found[i], c, b));
		CU_ASSERT_STRING_EQUAL(c, CID);
		CU_ASSERT_STRING_EQUAL(b, BID);
	}
}

static void test_peek_unsure(void)
{
	char c[SY_UUID_LEN + 1], b[SY_UUID_LEN + 1];
	static const char *unsure[] = {
	        "",
	        "[]",
	        "{}",
	        "{\"client_id\":\"" CID "\"}",
	        "{\"client_id\":\"" CID "\",\"batch_id\":\"" BID,
	        /* a key written with an escape (it may be one of the two) */
	        "{\"client\\u005fid\":\"x\",\"client_id\":\"" CID "\",\"batch_id\":\"" BID "\"}",
	        "{\"client_id\":\"" CID "\" \"batch_id\":\"" BID "\"}",
	        "{\"client_id\":\"" CID "\",\"client_id\":\"" CID "\",\"batch_id\":\"" BID "\"}",
	        "{\"client_id\":\"0A0A0A0A-1111-4111-8111-111111111111\",\"batch_id\":\"" BID "\"}",
	        "{\"client_id\":\"00000000-0000-0000-0000-000000000000\",\"batch_id\":\"" BID "\"}",
	        "{\"client_id\":\"\\u0030a0a0a0a-1111-4111-8111-11111111111\",\"batch_id\":\"" BID
	        "\"}",
	        "{\"client_id\":1,\"batch_id\":\"" BID "\"}",
	        "{\"client_id\":\"" CID "x\",\"batch_id\":\"" BID "\"}",
	        "{\"x\":\"a\nb\",\"client_id\":\"" CID "\",\"batch_id\":\"" BID "\"}",
	        "{\"x\":,\"client_id\":\"" CID "\",\"batch_id\":\"" BID "\"}",
	        "{\"x\":]\"client_id\":\"" CID "\",\"batch_id\":\"" BID "\"}",
	        "{\"x\":[1,2,\"client_id\":\"" CID "\",\"batch_id\":\"" BID "\"}",
	        "{\"x\":\"\\",
	};
	for (size_t i = 0; i < sizeof unsure / sizeof *unsure; i++)
		if (peek(unsure[i], c, b)) {
			fprintf(stderr, "\n  peeked ids in case %zu\n", i);
			CU_FAIL("peeked ids in a body it cannot be sure of");
		}
	CU_ASSERT_FALSE(sy_request_peek_ids(NULL, 0, c, b));
	/* a body cut anywhere before the second id's closing quote */
	static const char whole[] = "{\"client_id\":\"" CID "\",\"batch_id\":\"" BID "\"}";
	for (size_t n = 0; n < sizeof whole - 3; n++)
		CU_ASSERT_FALSE(sy_request_peek_ids(whole, n, c, b));
}

/* For a body the parser accepts: false or the parsed ids. Each vector request, and every
 * body made from one by deleting, doubling or replacing one octet. */
static int agree(const char *body, size_t len)
{
	char c[SY_UUID_LEN + 1], b[SY_UUID_LEN + 1];
	sy_error err;
	sy_error_clear(&err);
	bool peeked = sy_request_peek_ids(body, len, c, b);
	sy_push_request *req = sy_push_parse(body, len, &err);
	int parsed = req != NULL;
	if (req != NULL && peeked &&
	    (strcmp(c, req->client_id) != 0 || strcmp(b, req->batch_id) != 0)) {
		fprintf(stderr, "\n  peek disagrees with the parse: %.*s\n", (int)len, body);
		CU_FAIL("the peek found other ids than the parse");
	}
	sy_push_request_free(req);
	return parsed;
}

static void test_peek_agrees_with_parse(void)
{
	char dir[4096];
	size_t n = 0, bodies = 0, valid = 0;
	snprintf(dir, sizeof dir, "%s/tests/vectors/push", sy_test_src_dir());
	char **names = sy_test_list_files(dir, ".json", &n);
	CU_ASSERT_FATAL(n > 0);
	for (size_t i = 0; i < n; i++) {
		char path[8192];
		size_t len;
		snprintf(path, sizeof path, "%s/%s.json", dir, names[i]);
		char *body = sy_test_read_file(path, &len);
		CU_ASSERT_PTR_NOT_NULL_FATAL(body);
		char c[SY_UUID_LEN + 1], bid[SY_UUID_LEN + 1];
		CU_ASSERT_TRUE(sy_request_peek_ids(body, len, c, bid));
		valid += (size_t)agree(body, len);
		char *m = malloc(len + 1);
		CU_ASSERT_PTR_NOT_NULL_FATAL(m);
		static const char subst[] = "\"\\{}[],: x0-";
		for (size_t at = 0; at < len; at++) {
			memcpy(m, body, at);
			memcpy(m + at, body + at + 1, len - at - 1);
			valid += (size_t)agree(m, len - 1);
			for (const char *s = subst; *s; s++) {
				memcpy(m, body, len);
				m[at] = *s;
				valid += (size_t)agree(m, len);
			}
			bodies += 1 + sizeof subst - 1;
		}
		free(m);
		free(body);
	}
	sy_test_free_names(names, n);
	/* the edits reach both sides: many still parse, many do not */
	CU_ASSERT(valid > n);
	CU_ASSERT(valid < bodies);
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"digest preimage and what it binds", test_digest},
	        {"peek finds the ids", test_peek_finds},
	        {"peek answers nothing when unsure", test_peek_unsure},
	        {"peek agrees with the parser", test_peek_agrees_with_parse},
	        {NULL, NULL},
	};
	sy_test_add_suite("request_digest", tests);
	return sy_test_run();
}
