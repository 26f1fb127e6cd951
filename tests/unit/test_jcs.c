/* SPDX-License-Identifier: BSD-2-Clause */
/* CUnit suite of the RFC 8785 writer: the RFC vectors, ECMAScript number form
 * (against node-generated vectors), escapes, UTF-16 member order, builders. */
#include "config.h"

#include <CUnit/CUnit.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/buf.h"
#include "synchro/jcs.h"
#include "synchro/json.h"
#include "testutil.h"

/* Canonical bytes of text parsed; fails the test when text is refused. */
static char *canon_text(const char *text, size_t len, size_t *out_len)
{
	sy_error err;
	sy_json_doc *doc = sy_json_parse(text, len, &err);
	if (doc == NULL) {
		fprintf(stderr, "\n  refused: %s\n", err.message);
		CU_FAIL("document refused");
		return NULL;
	}
	sy_buf b = SY_BUF_INIT;
	bool ok = sy_jcs_write(&b, sy_json_doc_root(doc), &err);
	sy_json_doc_free(doc);
	if (!ok) {
		fprintf(stderr, "\n  not written: %s\n", err.message);
		CU_FAIL("document not written");
		sy_buf_free(&b);
		return NULL;
	}
	return sy_buf_steal(&b, out_len);
}

static void expect_canon(const char *in, const char *want)
{
	size_t len;
	char *got = canon_text(in, strlen(in), &len);
	if (got != NULL && (len != strlen(want) || memcmp(got, want, len) != 0)) {
		fprintf(stderr, "\n  %s\n  got  %s\n  want %s\n", in, got, want);
		CU_FAIL("canonical form differs");
	}
	sy_free(got);
}

/* ------------------------------------------------------------ RFC 8785 vectors */

static void test_rfc8785_vectors(void)
{
	static const char *names[] = {"arrays",  "french", "structures",
	                              "unicode", "values", "weird"};
	const char *data = sy_test_data_dir();
	CU_ASSERT_PTR_NOT_NULL_FATAL(data);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char path[4096];
		size_t in_len, want_len, got_len;
		snprintf(path, sizeof(path), "%s/rfc8785/input/%s.json", data, names[i]);
		char *in = sy_test_read_file(path, &in_len);
		snprintf(path, sizeof(path), "%s/rfc8785/output/%s.json", data, names[i]);
		char *want = sy_test_read_file(path, &want_len);
		CU_ASSERT_FATAL(in != NULL && want != NULL);
		char *got = canon_text(in, in_len, &got_len);
		if (got == NULL || got_len != want_len || memcmp(got, want, want_len) != 0) {
			fprintf(stderr, "\n  %s:\n  got  %s\n  want %s\n", names[i], got, want);
			CU_FAIL("RFC 8785 vector differs");
		}
		sy_free(got);
		free(in);
		free(want);
	}
}

/* ------------------------------------------------------------ numbers */

static void expect_number(double d, const char *want)
{
	char buf[SY_JCS_NUMBER_MAX];
	size_t n = sy_jcs_format_number(buf, d);
	if (n != strlen(want) || strcmp(buf, want) != 0) {
		fprintf(stderr, "\n  %.17g: got %s want %s\n", d, buf, want);
		CU_FAIL("number form");
	}
	sy_buf b = SY_BUF_INIT;
	CU_ASSERT(sy_jcs_write_number(&b, d));
	CU_ASSERT(b.data != NULL && strcmp(b.data, want) == 0);
	sy_buf_free(&b);
}

static void test_number_table(void)
{
	expect_number(0, "0");
	expect_number(-0.0, "0");
	expect_number(1, "1");
	expect_number(-1, "-1");
	expect_number(1e21, "1e+21");
	expect_number(-1e21, "-1e+21");
	expect_number(1e20, "100000000000000000000");
	expect_number(1e-7, "1e-7");
	expect_number(1e-6, "0.000001");
	expect_number(1.5e-7, "1.5e-7");
	expect_number(123456789012345680000.0, "123456789012345680000");
	expect_number(0.1, "0.1");
	expect_number(0.1 + 0.2, "0.30000000000000004");
	expect_number(5e-324, "5e-324");
	expect_number(-5e-324, "-5e-324");
	expect_number(1.7976931348623157e308, "1.7976931348623157e+308");
	expect_number(2.2250738585072014e-308, "2.2250738585072014e-308");
	expect_number(333333333.33333329, "333333333.3333333");
	expect_number(2e-3, "0.002");
	expect_number(4.50, "4.5");
	expect_number(1E30, "1e+30");
	expect_number(9007199254740993.0, "9007199254740992");
	expect_number(9007199254740994.0, "9007199254740994");
	expect_number(18014398509481984.0, "18014398509481984");
	expect_number(1e23, "1e+23");
	expect_number(-1.5, "-1.5");
	expect_number(100, "100");
	expect_number(0.000001234, "0.000001234");
	expect_number(1234.5678, "1234.5678");
	expect_number(4294967296.0, "4294967296");
	expect_number(5.684341886080802e-14, "5.684341886080802e-14"); /* 2^-44 */
	expect_number(ldexp(1, -1022), "2.2250738585072014e-308");
	expect_number(ldexp(1, 1023), "8.98846567431158e+307");

	char buf[SY_JCS_NUMBER_MAX] = "x";
	CU_ASSERT_EQUAL(sy_jcs_format_number(buf, NAN), 0);
	CU_ASSERT_STRING_EQUAL(buf, "");
	CU_ASSERT_EQUAL(sy_jcs_format_number(buf, INFINITY), 0);
	CU_ASSERT_EQUAL(sy_jcs_format_number(buf, -INFINITY), 0);
	sy_buf b = SY_BUF_INIT;
	CU_ASSERT_FALSE(sy_jcs_write_number(&b, NAN));
	sy_buf_free(&b);

	/* Literals through the reader take a separate fast path; same answers. */
	expect_canon("[0,-0,0.0,-0.0,1,-1,1.0,1e0,10e-1,100e-2,0.1e1]", "[0,0,0,0,1,-1,1,1,1,1,1]");
	expect_canon(
	        "[1e21,1e-7,1e-6,123456789012345680000,0.1,5e-324,1.7976931348623157e308]",
	        "[1e+21,1e-7,0.000001,123456789012345680000,0.1,5e-324,1.7976931348623157e+308]");
	expect_canon("[333333333.33333329,2e-3,4.50,1E30,9007199254740993]",
	             "[333333333.3333333,0.002,4.5,1e+30,9007199254740992]");
	expect_canon("[0.30000000000000004,0.30000000000000001,1.0000000000000001]",
	             "[0.30000000000000004,0.3,1]");
	expect_canon("[-1.5E+2,12.340,0.00000100,1000000000000000000000.0,999999999999999999999]",
	             "[-150,12.34,0.000001,1e+21,1e+21]");
	expect_canon("[1e-400,-1e-400,1e23,2.5e-7,123456789012345.6]",
	             "[0,0,1e+23,2.5e-7,123456789012345.6]");
}

static uint64_t parse_hex(const char *s)
{
	return strtoull(s, NULL, 16);
}

/* Every line of tests/vectors/jcs/numbers.txt: bits and node's toString. */
static void test_number_vectors(void)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/tests/vectors/jcs/numbers.txt", sy_test_src_dir());
	size_t len;
	char *text = sy_test_read_file(path, &len);
	if (text == NULL)
		fprintf(stderr, "\n  cannot read %s (set SYNCHRO_SRCDIR)\n", path);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	int count = 0, bad = 0;
	sy_json_doc *doc = sy_json_doc_new();
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
		if (line[0] == '#')
			continue;
		char *want = strchr(line, ' ');
		CU_ASSERT_PTR_NOT_NULL_FATAL(want);
		*want++ = '\0';
		uint64_t bits = parse_hex(line);
		double d;
		memcpy(&d, &bits, sizeof(d));
		char got[SY_JCS_NUMBER_MAX];
		sy_jcs_format_number(got, d);
		/* The same number read from its canonical text takes the literal path. */
		char lit[SY_JCS_NUMBER_MAX + 8];
		size_t clen = 0;
		char *c = canon_text(want, strlen(want), &clen);
		snprintf(lit, sizeof(lit), "%s", c != NULL ? c : "?");
		sy_free(c);
		if (strcmp(got, want) != 0 || strcmp(lit, want) != 0) {
			if (bad++ < 20)
				fprintf(stderr, "\n  %s: got %s / %s want %s", line, got, lit,
				        want);
		}
		count++;
	}
	sy_json_doc_free(doc);
	free(text);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(count > 10000);
}

/* Random doubles: the output reads back exactly and no shorter digits do. */
static void test_number_roundtrip(void)
{
	uint64_t x = 0x9E3779B97F4A7C15u;
	for (int i = 0; i < 20000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		double d;
		memcpy(&d, &x, sizeof(d));
		if (!isfinite(d))
			continue;
		char got[SY_JCS_NUMBER_MAX];
		size_t n = sy_jcs_format_number(got, d);
		CU_ASSERT_FATAL(n > 0 && n < SY_JCS_NUMBER_MAX);
		if (strtod(got, NULL) != d) {
			fprintf(stderr, "\n  %a: %s does not read back\n", d, got);
			CU_FAIL("round trip");
		}
	}
}

/* The shortest digits the slow way: %.{p-1}e for p = 1..17, the first that reads
 * back. Right except where a power of two makes the rounding interval lopsided. */
static void naive_shortest(double d, char *digits, int *exp10)
{
	char buf[64];
	for (int p = 1; p <= 17; p++) {
		snprintf(buf, sizeof(buf), "%.*e", p - 1, d);
		if (strtod(buf, NULL) == d || p == 17)
			break;
	}
	char *o = digits;
	const char *s = buf;
	for (; *s != 'e'; s++)
		if (*s >= '0' && *s <= '9')
			*o++ = *s;
	while (o > digits + 1 && o[-1] == '0')
		o--;
	*o = '\0';
	*exp10 = atoi(s + 1);
}

/* Digits and decimal exponent of a JCS number text ("-1.25e-7", "0.00012"). */
static void jcs_digits(const char *t, char *digits, int *exp10)
{
	const char *e = strchr(t, 'e');
	size_t n = e != NULL ? (size_t)(e - t) : strlen(t);
	int point = -1, first = -1, pos = 0;
	char *o = digits;
	for (size_t i = 0; i < n; i++) {
		if (t[i] == '.') {
			point = pos;
		} else if (t[i] >= '0' && t[i] <= '9') {
			if (first < 0 && t[i] != '0')
				first = pos;
			if (first >= 0)
				*o++ = t[i];
			pos++;
		}
	}
	while (o > digits + 1 && o[-1] == '0')
		o--;
	*o = '\0';
	if (point < 0)
		point = pos;
	*exp10 = point - first - 1 + (e != NULL ? atoi(e + 1) : 0);
}

static void test_number_naive(void)
{
	uint64_t x = 0x243F6A8885A308D3u;
	int checked = 0;
	for (int i = 0; i < 6000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		double d;
		uint64_t bits = x;
		if (i % 2 == 0) /* everyday magnitudes */
			bits = (x & UINT64_C(0x800FFFFFFFFFFFFF)) |
			       (uint64_t)(1023 - 27 + (x >> 52) % 160) << 52;
		memcpy(&d, &bits, sizeof(d));
		if (!isfinite(d) || d == 0 || (bits & UINT64_C(0x000FFFFFFFFFFFFF)) == 0)
			continue;
		char got[SY_JCS_NUMBER_MAX], gd[32], wd[32];
		int ge, we;
		sy_jcs_format_number(got, d);
		jcs_digits(got, gd, &ge);
		naive_shortest(fabs(d), wd, &we);
		if (strcmp(gd, wd) != 0 || ge != we) {
			fprintf(stderr, "\n  %a: %s, naive %se%d\n", d, got, wd, we);
			CU_FAIL("differs from the naive search");
			return;
		}
		checked++;
	}
	CU_ASSERT(checked > 5000);
}

/* ------------------------------------------------------------ strings */

static void expect_string(const char *s, size_t len, const char *want)
{
	sy_buf b = SY_BUF_INIT;
	CU_ASSERT_FATAL(sy_jcs_write_string(&b, s, len));
	if (strcmp(b.data, want) != 0) {
		fprintf(stderr, "\n  got  %s\n  want %s\n", b.data, want);
		CU_FAIL("string escape");
	}
	sy_buf_free(&b);
}

static void test_strings(void)
{
	expect_string("", 0, "\"\"");
	expect_string("\"\\/", 3, "\"\\\"\\\\/\"");
	expect_string("\b\f\n\r\t", 5, "\"\\b\\f\\n\\r\\t\"");
	expect_string("\0\x01\x0b\x1f\x7f", 5, "\"\\u0000\\u0001\\u000b\\u001f\x7f\"");
	expect_string("\xe2\x80\xa8\xe2\x80\xa9", 6, "\"\xe2\x80\xa8\xe2\x80\xa9\"");
	expect_string("\xc3\xa9\xf0\x9f\x98\x80", 6, "\"\xc3\xa9\xf0\x9f\x98\x80\"");
	/* Every byte below 0x80, in one string. */
	char all[128];
	for (int i = 0; i < 128; i++)
		all[i] = (char)i;
	sy_buf want = SY_BUF_INIT;
	CU_ASSERT_FATAL(sy_buf_putc(&want, '"'));
	for (int i = 0; i < 128; i++) {
		const char *named = NULL;
		switch (i) {
		case '"': named = "\\\""; break;
		case '\\': named = "\\\\"; break;
		case '\b': named = "\\b"; break;
		case '\f': named = "\\f"; break;
		case '\n': named = "\\n"; break;
		case '\r': named = "\\r"; break;
		case '\t': named = "\\t"; break;
		default: break;
		}
		bool ok;
		if (named != NULL)
			ok = sy_buf_puts(&want, named);
		else if (i < 0x20)
			ok = sy_buf_printf(&want, "\\u%04x", i);
		else
			ok = sy_buf_putc(&want, (char)i);
		CU_ASSERT_FATAL(ok);
	}
	CU_ASSERT_FATAL(sy_buf_putc(&want, '"'));
	expect_string(all, 128, want.data);
	sy_buf_free(&want);
	/* Specials at every position of the 8-byte scan. */
	for (int pos = 0; pos < 20; pos++) {
		char in[20], out[64];
		memset(in, 'a', sizeof(in));
		in[pos] = '\n';
		snprintf(out, sizeof(out), "\"%.*s\\n%.*s\"", pos, "aaaaaaaaaaaaaaaaaaaa", 19 - pos,
		         "aaaaaaaaaaaaaaaaaaaa");
		expect_string(in, 20, out);
	}
	/* Through the reader: escapes are normalized. */
	expect_canon("\"\\u0041\\u00e9\\u2028\\/\\u001F\\u007f\\ud83d\\ude00\"",
	             "\"A\xc3\xa9\xe2\x80\xa8/\\u001f\x7f\xf0\x9f\x98\x80\"");
}

/* ------------------------------------------------------------ member order */

static int cmp(const char *a, const char *b)
{
	int c = sy_jcs_compare_keys(a, strlen(a), b, strlen(b));
	return c < 0 ? -1 : c > 0 ? 1 : 0;
}

static void test_key_order(void)
{
	/* U+20AC < U+1F600 (D83D DE00) < U+FB33 in UTF-16, unlike in UTF-8. */
	const char *euro = "\xe2\x82\xac", *smile = "\xf0\x9f\x98\x80", *dagesh = "\xef\xac\xb3";
	CU_ASSERT_EQUAL(cmp(euro, smile), -1);
	CU_ASSERT_EQUAL(cmp(smile, dagesh), -1);
	CU_ASSERT_EQUAL(cmp(dagesh, smile), 1);
	CU_ASSERT_EQUAL(cmp(euro, dagesh), -1);
	CU_ASSERT_EQUAL(cmp("\xee\x80\x80", smile), 1);  /* U+E000 */
	CU_ASSERT_EQUAL(cmp("\xed\x9f\xbf", smile), -1); /* U+D7FF */
	CU_ASSERT_EQUAL(cmp("\xef\xbf\xbf", "\xf4\x8f\xbf\xbf"), 1);
	CU_ASSERT_EQUAL(cmp("a\xef\xbf\xbf", "a\xf0\x90\x80\x80"), 1);
	CU_ASSERT_EQUAL(cmp("\xf0\x9f\x98\x80", "\xf0\x9f\x98\x81"), -1);
	CU_ASSERT_EQUAL(cmp("\xf0\x9f\x98\x80", "\xf0\x9f\x99\x80"), -1);
	CU_ASSERT_EQUAL(cmp("", ""), 0);
	CU_ASSERT_EQUAL(cmp("", "a"), -1);
	CU_ASSERT_EQUAL(cmp("a", "ab"), -1);
	CU_ASSERT_EQUAL(cmp("b", "ab"), 1);
	CU_ASSERT_EQUAL(cmp("B", "a"), -1);
	CU_ASSERT_EQUAL(cmp("\x7f", "\xc2\x80"), -1);
	CU_ASSERT_EQUAL(cmp(smile, smile), 0);
	CU_ASSERT(sy_jcs_compare_keys("a\0b", 3, "a\0c", 3) < 0);
	CU_ASSERT(sy_jcs_compare_keys("a", 1, "a\0", 2) < 0);

	expect_canon(
	        "{\"\xef\xac\xb3\":3,\"\xf0\x9f\x98\x80\":2,\"\xe2\x82\xac\":1,\"a\":0,\"\":-1}",
	        "{\"\":-1,\"a\":0,\"\xe2\x82\xac\":1,\"\xf0\x9f\x98\x80\":2,\"\xef\xac\xb3\":3}");
	expect_canon("{\"\\ufb33\":3,\"\\ud83d\\ude00\":2,\"\\u20ac\":1}",
	             "{\"\xe2\x82\xac\":1,\"\xf0\x9f\x98\x80\":2,\"\xef\xac\xb3\":3}");
	/* Nested objects are sorted too; arrays keep their order. */
	expect_canon("{\"b\":[3,1,2,{\"z\":1,\"y\":2}],\"a\":{\"d\":null,\"c\":true}}",
	             "{\"a\":{\"c\":true,\"d\":null},\"b\":[3,1,2,{\"y\":2,\"z\":1}]}");
	expect_canon(" [ ] ", "[]");
	expect_canon(" { } ", "{}");
	expect_canon("{\"a\\u0000\":1,\"a\":2}", "{\"a\":2,\"a\\u0000\":1}");

	/* A large object (heap-sorted order) against a sorted copy of its names. */
	sy_buf in = SY_BUF_INIT, want = SY_BUF_INIT;
	CU_ASSERT_FATAL(sy_buf_putc(&in, '{') && sy_buf_putc(&want, '{'));
	for (int i = 999; i >= 0; i--)
		CU_ASSERT_FATAL(sy_buf_printf(&in, "%s\"k%04d\":%d", i < 999 ? "," : "", i, i));
	for (int i = 0; i < 1000; i++)
		CU_ASSERT_FATAL(sy_buf_printf(&want, "%s\"k%04d\":%d", i ? "," : "", i, i));
	CU_ASSERT_FATAL(sy_buf_putc(&in, '}') && sy_buf_putc(&want, '}'));
	expect_canon(in.data, want.data);
	sy_buf_free(&in);
	sy_buf_free(&want);
}

/* UTF-16 code units of valid UTF-8 s: the reference order, computed the long way. */
static size_t to_utf16(const unsigned char *s, size_t len, uint16_t *out)
{
	size_t n = 0;
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		if (s[i] < 0x80) {
			cp = s[i++];
		} else if (s[i] < 0xE0) {
			cp = (uint32_t)(s[i] & 0x1F) << 6 | (s[i + 1] & 0x3F);
			i += 2;
		} else if (s[i] < 0xF0) {
			cp = (uint32_t)(s[i] & 0x0F) << 12 | (uint32_t)(s[i + 1] & 0x3F) << 6 |
			     (s[i + 2] & 0x3F);
			i += 3;
		} else {
			cp = (uint32_t)(s[i] & 0x07) << 18 | (uint32_t)(s[i + 1] & 0x3F) << 12 |
			     (uint32_t)(s[i + 2] & 0x3F) << 6 | (s[i + 3] & 0x3F);
			i += 4;
		}
		if (cp >= 0x10000) {
			out[n++] = (uint16_t)(0xD800 + ((cp - 0x10000) >> 10));
			out[n++] = (uint16_t)(0xDC00 + ((cp - 0x10000) & 0x3FF));
		} else {
			out[n++] = (uint16_t)cp;
		}
	}
	return n;
}

static size_t put_cp(unsigned char *d, uint32_t cp)
{
	if (cp < 0x80) {
		d[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		d[0] = (unsigned char)(0xC0 | cp >> 6);
		d[1] = (unsigned char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		d[0] = (unsigned char)(0xE0 | cp >> 12);
		d[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
		d[2] = (unsigned char)(0x80 | (cp & 0x3F));
		return 3;
	}
	d[0] = (unsigned char)(0xF0 | cp >> 18);
	d[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
	d[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
	d[3] = (unsigned char)(0x80 | (cp & 0x3F));
	return 4;
}

/* Random strings over code points chosen near the boundaries that matter. */
static void test_key_order_random(void)
{
	static const uint32_t pool[] = {0x00,    0x41,    0x7F,     0x80,   0x7FF,  0x800,
	                                0xD7FF,  0xE000,  0xE001,   0xFB33, 0xFFFF, 0x10000,
	                                0x1F600, 0x1F601, 0x10FFFF, 0x20AC, 0x42,   0xFFFE};
	uint64_t x = 12345;
	int reversed = 0; /* cases where UTF-8 byte order gives the other answer */
	for (int iter = 0; iter < 50000; iter++) {
		unsigned char a[32], b[32];
		size_t alen = 0, blen = 0;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		int na = (int)(x % 4), nb = (int)((x >> 3) % 4);
		uint64_t r = x >> 8;
		for (int i = 0; i < na; i++, r /= 18)
			alen += put_cp(a + alen, pool[r % 18]);
		/* b often shares a's prefix, so the interesting position is reached. */
		if ((x >> 60) & 1) {
			memcpy(b, a, alen);
			blen = alen > 0 ? alen - (size_t)((x >> 61) % 2) : 0;
			while (blen > 0 && (b[blen] & 0xC0) == 0x80 && blen < alen)
				blen--;
		}
		for (int i = 0; i < nb; i++, r /= 18)
			blen += put_cp(b + blen, pool[r % 18]);
		uint16_t ua[32], ub[32];
		size_t la = to_utf16(a, alen, ua), lb = to_utf16(b, blen, ub);
		int want = 0;
		for (size_t i = 0; i < la && i < lb && want == 0; i++)
			want = ua[i] < ub[i] ? -1 : ua[i] > ub[i] ? 1 : 0;
		if (want == 0)
			want = la < lb ? -1 : la > lb ? 1 : 0;
		int got = sy_jcs_compare_keys((const char *)a, alen, (const char *)b, blen);
		got = got < 0 ? -1 : got > 0 ? 1 : 0;
		int bytes = memcmp(a, b, alen < blen ? alen : blen);
		if (bytes == 0)
			bytes = alen < blen ? -1 : alen > blen ? 1 : 0;
		reversed += (bytes < 0 ? -1 : bytes > 0) != want;
		if (got != want) {
			fprintf(stderr, "\n  iteration %d: got %d want %d\n", iter, got, want);
			CU_FAIL("UTF-16 order");
			return;
		}
	}
	CU_ASSERT(reversed > 1000);

	/* Whole objects, small (insertion sort) and large (prefix sort), through the
	 * writer: members come out in the reference order. */
	for (int size = 5; size <= 600; size *= 5) {
		sy_json_doc *doc = sy_json_doc_new();
		sy_json *obj = sy_json_new_object(doc);
		CU_ASSERT_PTR_NOT_NULL_FATAL(obj);
		while (obj->u.object.count < (size_t)size) {
			unsigned char k[48];
			size_t klen = 0;
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			/* A shared ASCII head of 0..9 bytes puts the difference inside or
			 * past the 8-byte prefix. */
			size_t head = (size_t)(x % 10);
			memcpy(k, "abcdefghij", head);
			klen = head;
			uint64_t r = x >> 4;
			for (int i = 0; i < 3; i++, r /= 18)
				klen += put_cp(k + klen, pool[r % 18]);
			bool seen = false;
			for (size_t i = 0; i < obj->u.object.count && !seen; i++)
				seen = obj->u.object.members[i].key_len == klen &&
				       memcmp(obj->u.object.members[i].key, k, klen) == 0;
			if (!seen)
				CU_ASSERT_FATAL(sy_json_object_putn(doc, obj, (const char *)k, klen,
				                                    sy_json_new_null(doc)));
		}
		sy_buf out = SY_BUF_INIT;
		sy_error err;
		CU_ASSERT_FATAL(sy_jcs_write(&out, obj, &err));
		sy_json_doc *back = sy_json_parse(out.data, out.len, &err);
		CU_ASSERT_PTR_NOT_NULL_FATAL(back);
		const sy_json *r2 = sy_json_doc_root(back);
		CU_ASSERT_EQUAL(r2->u.object.count, (size_t)size);
		for (size_t i = 1; i < r2->u.object.count; i++) {
			const sy_json_member *p = &r2->u.object.members[i - 1];
			const sy_json_member *q = &r2->u.object.members[i];
			uint16_t up[64], uq[64];
			size_t lp = to_utf16((const unsigned char *)p->key, p->key_len, up);
			size_t lq = to_utf16((const unsigned char *)q->key, q->key_len, uq);
			int c = 0;
			for (size_t j = 0; j < lp && j < lq && c == 0; j++)
				c = up[j] < uq[j] ? -1 : up[j] > uq[j];
			if (c == 0)
				c = lp < lq ? -1 : 1;
			if (c >= 0) {
				CU_FAIL("object members out of UTF-16 order");
				break;
			}
		}
		sy_json_doc_free(back);
		sy_buf_free(&out);
		sy_json_doc_free(doc);
	}
}

/* ------------------------------------------------------------ builders, errors */

static char *canon_value(const sy_json *v, sy_error *err)
{
	sy_buf b = SY_BUF_INIT;
	if (!sy_jcs_write(&b, v, err)) {
		sy_buf_free(&b);
		return NULL;
	}
	return sy_buf_steal(&b, NULL);
}

static void test_builders(void)
{
	sy_json_doc *doc = sy_json_doc_new();
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	sy_json *o = sy_json_new_object(doc);
	sy_json *a = sy_json_new_array(doc);
	CU_ASSERT_FATAL(sy_json_array_push(doc, a, sy_json_new_int(doc, -7)) &&
	                sy_json_array_push(doc, a, sy_json_new_double(doc, -0.0)) &&
	                sy_json_array_push(doc, a, sy_json_new_double(doc, 1.0 / 3)) &&
	                sy_json_array_push(doc, a, sy_json_new_double(doc, 1e300)) &&
	                sy_json_array_push(doc, a, sy_json_new_int(doc, INT64_MAX)) &&
	                sy_json_array_push(doc, a, sy_json_new_cstring(doc, "t\"ab\t")) &&
	                sy_json_array_push(doc, a, sy_json_new_null(doc)));
	CU_ASSERT_FATAL(sy_json_object_put(doc, o, "zeta", a) &&
	                sy_json_object_put(doc, o, "alpha", sy_json_new_bool(doc, true)) &&
	                sy_json_object_put(doc, o, "Beta", sy_json_new_bool(doc, false)) &&
	                sy_json_object_put(doc, o, "empty", sy_json_new_object(doc)));
	sy_error err;
	char *got = canon_value(o, &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	CU_ASSERT_STRING_EQUAL(got, "{\"Beta\":false,\"alpha\":true,\"empty\":{},\"zeta\":[-7,0,"
	                            "0.3333333333333333,1e+300,9223372036854776000,\"t\\\"ab\\t\","
	                            "null]}");
	sy_free(got);
	/* Equal names (builders do not check) keep their insertion order. */
	sy_json *dup = sy_json_new_object(doc);
	CU_ASSERT_FATAL(sy_json_object_put(doc, dup, "b", sy_json_new_int(doc, 1)) &&
	                sy_json_object_put(doc, dup, "a", sy_json_new_int(doc, 2)) &&
	                sy_json_object_put(doc, dup, "b", sy_json_new_int(doc, 3)) &&
	                sy_json_object_put(doc, dup, "a", sy_json_new_int(doc, 4)));
	got = canon_value(dup, &err);
	CU_ASSERT_STRING_EQUAL(got, "{\"a\":2,\"a\":4,\"b\":1,\"b\":3}");
	sy_free(got);

	/* A hand-made number whose text disagrees with its value: value wins. */
	sy_json stale = {.type = SY_JSON_NUMBER};
	stale.u.number.value = 2.5;
	stale.u.number.text = "1.5";
	stale.u.number.text_len = 3;
	got = canon_value(&stale, &err);
	CU_ASSERT_STRING_EQUAL(got, "2.5");
	sy_free(got);

	/* Non-finite numbers are refused, wherever they sit. */
	sy_json bad = {.type = SY_JSON_NUMBER};
	bad.u.number.value = NAN;
	CU_ASSERT_FATAL(sy_json_array_push(doc, a, &bad));
	sy_buf b = SY_BUF_INIT;
	CU_ASSERT_FALSE(sy_jcs_write(&b, o, &err));
	CU_ASSERT_EQUAL(err.code, SY_ERR_INVALID_REQUEST);
	CU_ASSERT_STRING_EQUAL(err.message, "number is not finite");
	sy_buf_free(&b);
	bad.u.number.value = -INFINITY;
	CU_ASSERT_FALSE(sy_jcs_write(&b, &bad, &err));
	CU_ASSERT_EQUAL(err.code, SY_ERR_INVALID_REQUEST);
	sy_buf_free(&b);
	sy_json_doc *big = sy_json_parse("[1e400]", 7, &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(big);
	CU_ASSERT_FALSE(sy_jcs_write(&b, sy_json_doc_root(big), &err));
	CU_ASSERT_STRING_EQUAL(err.message, "number is not finite");
	sy_buf_free(&b);
	sy_json_doc_free(big);
	sy_json_doc_free(doc);
}

static void test_alloc_failure(void)
{
	sy_buf in = SY_BUF_INIT;
	CU_ASSERT_FATAL(sy_buf_putc(&in, '['));
	for (int i = 0; i < 200; i++)
		CU_ASSERT_FATAL(sy_buf_printf(&in, "%s{\"z\":%d,\"y\":\"%0100d\",\"x\":[%d.25]}",
		                              i ? "," : "", i, i, i));
	/* An object big enough that its order is sorted on the heap. */
	CU_ASSERT_FATAL(sy_buf_puts(&in, ",{"));
	for (int i = 99; i >= 0; i--)
		CU_ASSERT_FATAL(sy_buf_printf(&in, "%s\"m%02d\":0", i < 99 ? "," : "", i));
	CU_ASSERT_FATAL(sy_buf_puts(&in, "}]"));
	sy_error err;
	sy_json_doc *doc = sy_json_parse(in.data, in.len, &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	bool done = false;
	long failures = 0;
	for (long n = 1; n < 1000 && !done; n++) {
		sy_test_alloc_install(n - 1, true);
		sy_buf out = SY_BUF_INIT;
		sy_error_clear(&err);
		done = sy_jcs_write(&out, sy_json_doc_root(doc), &err);
		sy_test_alloc_remove();
		if (!done) {
			CU_ASSERT_EQUAL(err.code, SY_ERR_NOMEM);
			failures++;
		}
		sy_buf_free(&out);
	}
	CU_ASSERT(done);
	CU_ASSERT(failures > 0);
	sy_json_doc_free(doc);
	sy_buf_free(&in);
}

int main(void)
{
	static const CU_TestInfo core[] = {
	        {"number table", test_number_table},
	        {"number vectors (node)", test_number_vectors},
	        {"number round trip", test_number_roundtrip},
	        {"number digits against a naive search", test_number_naive},
	        {"strings", test_strings},
	        {"member order", test_key_order},
	        {"member order, random names", test_key_order_random},
	        {"builders and errors", test_builders},
	        {"failing allocations", test_alloc_failure},
	        {NULL, NULL},
	};
	static const CU_TestInfo data[] = {
	        {"RFC 8785 vectors", test_rfc8785_vectors},
	        {NULL, NULL},
	};
	sy_test_add_suite("jcs", core);
	if (sy_test_data_dir() != NULL)
		sy_test_add_suite("jcs-testdata", data);
	else
		fprintf(stderr, "SYNCHRO_TESTDATA absent: RFC 8785 vectors not run\n");
	return sy_test_run();
}
