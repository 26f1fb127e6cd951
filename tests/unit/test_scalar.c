/* SPDX-License-Identifier: BSD-2-Clause */
/* The scalars of doc/contract.md#scalars: UUIDs, schema references, generations, times, versions.
 * */
#include "config.h"

#include <string.h>
#include <time.h>

#include "synchro/json.h"
#include "synchro/octets.h"
#include "synchro/scalar.h"
#include "testutil.h"

#define HASH_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

typedef struct {
	const char *s;
	bool ok;
} str_case;

static bool check_str(bool (*fn)(const char *, size_t), const str_case *c)
{
	bool got = fn(c->s, strlen(c->s));
	if (got != c->ok)
		fprintf(stderr, "\n  \"%s\": expected %s\n", c->s, c->ok ? "valid" : "invalid");
	return got == c->ok;
}

#define CHECK_TABLE(fn, rows)                                                                      \
	for (size_t i_ = 0; i_ < sizeof(rows) / sizeof(rows)[0]; i_++)                             \
	CU_ASSERT(check_str(fn, &(rows)[i_]))

/* Parses one JSON text; the caller frees the document. */
static sy_json_doc *parse(const char *text)
{
	sy_error err;
	sy_json_doc *doc = sy_json_parse(text, strlen(text), &err);
	if (doc == NULL)
		fprintf(stderr, "\n  cannot parse %s: %s\n", text, err.message);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	return doc;
}

static void test_uuid(void)
{
	static const str_case identity[] = {
	        {"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", true},
	        {"018f6f1e-7c2a-7b3d-8e4f-0123456789ab", true}, /* v7 */
	        {"00000000-0000-0000-0000-000000000001", true},
	        {"ffffffff-ffff-ffff-ffff-ffffffffffff", true},
	        {"12345678-1234-1234-1234-123456789abc", true},  /* any version/variant */
	        {"00000000-0000-0000-0000-000000000000", false}, /* nil */
	        {"A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", false},
	        {"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380A11", false},
	        {"{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}", false},
	        {"a0eebc999c0b4ef8bb6d6bb9bd380a11", false},
	        {"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1", false},
	        {"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111", false},
	        {"a0eebc99-9c0b4-ef8-bb6d-6bb9bd380a11", false},
	        {"a0eebc99_9c0b_4ef8_bb6d_6bb9bd380a11", false},
	        {"g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", false},
	        {"urn:uuid:a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", false},
	        {" a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1", false},
	        {"", false},
	};
	CHECK_TABLE(sy_uuid_valid, identity);

	static const str_case text[] = {
	        {"00000000-0000-0000-0000-000000000000", true}, /* nil is data */
	        {"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", true},
	        {"A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", false},
	        {"a0eebc999c0b4ef8bb6d6bb9bd380a11", false},
	        {"", false},
	};
	CHECK_TABLE(sy_uuid_text_valid, text);
	/* Length is explicit: an embedded NUL is a byte like any other. */
	CU_ASSERT_FALSE(sy_uuid_valid("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1\0", SY_UUID_LEN));
	CU_ASSERT_FALSE(sy_uuid_valid(NULL, 0));

	/* its octets, as PostgreSQL's binary uuid */
	uint8_t o[16];
	static const uint8_t want[16] = {0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8,
	                                 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11};
	CU_ASSERT_TRUE(sy_uuid_octets("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", SY_UUID_LEN, o));
	CU_ASSERT_EQUAL(memcmp(o, want, sizeof want), 0);
	CU_ASSERT_TRUE(sy_uuid_octets("00000000-0000-0000-0000-000000000000", SY_UUID_LEN, o));
	CU_ASSERT_FALSE(sy_uuid_octets("A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", SY_UUID_LEN, o));
	CU_ASSERT_FALSE(sy_uuid_octets("a0eebc999c0b4ef8bb6d6bb9bd380a11", 32, o));
	CU_ASSERT_FALSE(sy_uuid_octets(NULL, 0, o));
}

static void test_octets(void)
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < 16; i++) {
		CU_ASSERT_EQUAL(sy_hex_digit(digits[i]), i);
		if (i >= 10)
			CU_ASSERT_EQUAL(sy_hex_digit(digits[i] - 'a' + 'A'), i);
	}
	const char *not_hex = "gG/:@`xX -";
	for (const char *c = not_hex; *c != '\0'; c++)
		CU_ASSERT_EQUAL(sy_hex_digit(*c), -1);
	CU_ASSERT_EQUAL(sy_hex_digit(0), -1);
	CU_ASSERT_EQUAL(sy_hex_digit(0xE1), -1);

	unsigned char b[8];
	sy_be_put(b, UINT64_C(0x0102030405060708), 8);
	static const unsigned char want8[] = {1, 2, 3, 4, 5, 6, 7, 8};
	CU_ASSERT_EQUAL(memcmp(b, want8, 8), 0);
	CU_ASSERT_EQUAL(sy_be_get(b, 8), UINT64_C(0x0102030405060708));
	CU_ASSERT_EQUAL(sy_be_get(b + 4, 4), UINT64_C(0x05060708));
	sy_be_put(b, UINT64_C(0xFFFFFFFFFFFFABCD), 2); /* the low octets only */
	CU_ASSERT_EQUAL(b[0], 0xAB);
	CU_ASSERT_EQUAL(b[1], 0xCD);
	CU_ASSERT_EQUAL(b[2], 3);
	CU_ASSERT_EQUAL(sy_be_get(b, 2), 0xABCDu);
	CU_ASSERT_EQUAL(sy_be_get(b, 0), 0u);
}

static void test_hash_hex(void)
{
	static const str_case rows[] = {
	        {HASH_A, true},
	        {"0000000000000000000000000000000000000000000000000000000000000000", true},
	        {"0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", false},
	        {"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde", false},
	        {"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0", false},
	        {"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeg", false},
	        {"", false},
	};
	CHECK_TABLE(sy_hash_hex_valid, rows);
}

static void test_generation(void)
{
	static const struct {
		const char *json;
		bool ok;
		uint64_t value;
	} rows[] = {
	        {"1", true, 1},
	        {"42", true, 42},
	        {"9007199254740991", true, 9007199254740991ULL},
	        {"9007199254740992", false, 0}, /* 2^53 */
	        {"9007199254740993", false, 0}, /* rounds to 2^53 as a double */
	        {"18446744073709551615", false, 0},
	        {"18446744073709551616", false, 0},
	        {"99999999999999999999999999", false, 0},
	        {"0", false, 0},
	        {"-0", false, 0},
	        {"-1", false, 0},
	        {"1.0", false, 0},
	        {"1.5", false, 0},
	        {"1e3", false, 0},
	        {"1E3", false, 0},
	        {"10e0", false, 0},
	        {"\"1\"", false, 0},
	        {"true", false, 0},
	        {"null", false, 0},
	        {"[1]", false, 0},
	        {"{}", false, 0},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		sy_json_doc *doc = parse(rows[i].json);
		uint64_t got = 0;
		bool ok = sy_generation_parse(sy_json_doc_root(doc), &got);
		if (ok != rows[i].ok)
			fprintf(stderr, "\n  generation %s: expected %d\n", rows[i].json,
			        rows[i].ok);
		CU_ASSERT_EQUAL(ok, rows[i].ok);
		if (rows[i].ok)
			CU_ASSERT_EQUAL(got, rows[i].value);
		CU_ASSERT_EQUAL(sy_generation_parse(sy_json_doc_root(doc), NULL), rows[i].ok);
		sy_json_doc_free(doc);
	}
	CU_ASSERT_FALSE(sy_generation_parse(NULL, NULL));

	/* The bound is the caller's, inclusive. */
	static const struct {
		const char *json;
		uint64_t max;
		bool ok;
	} bounded[] = {
	        {"1000", 1000, true},
	        {"1001", 1000, false},
	        {"5", 5, true},
	        {"9", 5, false},
	        {"10", 5, false},
	        {"1", 1, true},
	        {"18446744073709551615", UINT64_MAX, true},
	        {"18446744073709551616", UINT64_MAX, false},
	};
	for (size_t i = 0; i < sizeof bounded / sizeof bounded[0]; i++) {
		sy_json_doc *doc = parse(bounded[i].json);
		uint64_t got = 0;
		CU_ASSERT_EQUAL(sy_positive_integer(sy_json_doc_root(doc), bounded[i].max, &got),
		                bounded[i].ok);
		sy_json_doc_free(doc);
	}
}

static void test_schema_ref(void)
{
	static const struct {
		const char *json;
		bool ok;
		uint64_t version;
	} rows[] = {
	        {"{\"version\":1,\"hash\":\"" HASH_A "\"}", true, 1},
	        {"{\"hash\":\"" HASH_A "\",\"version\":7}", true, 7},
	        {"{ \"version\" : 9007199254740991 , \"hash\" : \"" HASH_A "\" }", true,
	         9007199254740991ULL},
	        {"{\"version\":9007199254740992,\"hash\":\"" HASH_A "\"}", false, 0},
	        {"{\"version\":0,\"hash\":\"" HASH_A "\"}", false, 0},
	        {"{\"version\":-1,\"hash\":\"" HASH_A "\"}", false, 0},
	        {"{\"version\":1.0,\"hash\":\"" HASH_A "\"}", false, 0},
	        {"{\"version\":1e0,\"hash\":\"" HASH_A "\"}", false, 0},
	        {"{\"version\":\"1\",\"hash\":\"" HASH_A "\"}", false, 0},
	        {"{\"version\":null,\"hash\":\"" HASH_A "\"}", false, 0},
	        {"{\"version\":1,\"hash\":\"0123456789ABCDEF0123456789abcdef"
	         "0123456789abcdef0123456789abcdef\"}",
	         false, 0},
	        {"{\"version\":1,\"hash\":\"0123\"}", false, 0},
	        {"{\"version\":1,\"hash\":null}", false, 0},
	        {"{\"version\":1,\"hash\":1}", false, 0},
	        {"{\"version\":1}", false, 0},
	        {"{\"hash\":\"" HASH_A "\"}", false, 0},
	        {"{}", false, 0},
	        {"{\"version\":1,\"hash\":\"" HASH_A "\",\"x\":1}", false, 0},
	        {"{\"version\":1,\"Hash\":\"" HASH_A "\"}", false, 0},
	        {"{\"version\":1,\"hash\\u0000\":\"" HASH_A "\"}", false, 0},
	        {"[1,\"" HASH_A "\"]", false, 0},
	        {"null", false, 0},
	        {"\"x\"", false, 0},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		sy_json_doc *doc = parse(rows[i].json);
		sy_schema_ref ref;
		memset(&ref, 0, sizeof ref);
		bool ok = sy_schema_ref_parse(sy_json_doc_root(doc), &ref);
		if (ok != rows[i].ok)
			fprintf(stderr, "\n  schema ref %s: expected %d\n", rows[i].json,
			        rows[i].ok);
		CU_ASSERT_EQUAL(ok, rows[i].ok);
		if (rows[i].ok) {
			CU_ASSERT_EQUAL(ref.version, rows[i].version);
			CU_ASSERT_STRING_EQUAL(ref.hash, HASH_A);
		}
		sy_json_doc_free(doc);
	}
	CU_ASSERT_FALSE(sy_schema_ref_parse(NULL, NULL));
}

/* A schema reference built by hand may repeat a member; the reader never does. */
static void test_schema_ref_built(void)
{
	sy_json_doc *doc = sy_json_doc_new();
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	sy_json *obj = sy_json_new_object(doc);
	CU_ASSERT_PTR_NOT_NULL_FATAL(obj);
	sy_json *one = sy_json_new_int(doc, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(one);
	CU_ASSERT_FATAL(sy_json_object_put(doc, obj, "version", one));
	CU_ASSERT_FATAL(sy_json_object_put(doc, obj, "version", one));
	CU_ASSERT_FALSE(sy_schema_ref_parse(obj, NULL));
	sy_json_doc_free(doc);

	doc = sy_json_doc_new();
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	obj = sy_json_new_object(doc);
	CU_ASSERT_FATAL(sy_json_object_put(doc, obj, "version", sy_json_new_int(doc, 3)));
	CU_ASSERT_FATAL(sy_json_object_put(doc, obj, "hash", sy_json_new_cstring(doc, HASH_A)));
	sy_schema_ref ref;
	CU_ASSERT_TRUE(sy_schema_ref_parse(obj, &ref));
	CU_ASSERT_EQUAL(ref.version, 3);
	sy_json_doc_free(doc);
}

static void test_client_version(void)
{
	static const str_case rows[] = {
	        {"2026-01-02T03:04:05Z", true},
	        {"2026-01-02T03:04:05.1Z", true},
	        {"2026-01-02T03:04:05.123Z", true},
	        {"2026-01-02T03:04:05.123456Z", true},
	        {"2026-01-02T03:04:05.123456789Z", true},
	        {"2026-01-02T03:04:05.1234567890Z", false}, /* 10 digits */
	        {"2026-01-02T03:04:05.Z", false},
	        {"2026-01-02T03:04:05.12aZ", false},
	        {"2026-01-02T03:04:05", false},
	        {"2026-01-02T03:04:05z", false},
	        {"2026-01-02t03:04:05Z", false},
	        {"2026-01-02 03:04:05Z", false},
	        {"2026-01-02T03:04:05+00:00", false},
	        {"2026-01-02T03:04:05.000+00:00", false},
	        {"2026-01-02T03:04Z", false},
	        {"2026-01-02", false},
	        {"2026-1-02T03:04:05Z", false},
	        {"26-01-02T03:04:05Z", false},
	        {"+2026-01-02T03:04:05Z", false},
	        {"2026-01-02T03:04:05.5ZZ", false},
	        {" 2026-01-02T03:04:05Z", false},
	        {"2026-01-02T03:04:05Z ", false},
	        {"0001-01-01T00:00:00Z", true},
	        {"9999-12-31T23:59:59.999999999Z", true},
	        {"0000-01-01T00:00:00Z", false},
	        {"2000-02-29T00:00:00Z", true},
	        {"2024-02-29T00:00:00Z", true},
	        {"1900-02-29T00:00:00Z", false},
	        {"2023-02-29T00:00:00Z", false},
	        {"2026-02-30T00:00:00Z", false},
	        {"2026-04-30T00:00:00Z", true},
	        {"2026-04-31T00:00:00Z", false},
	        {"2026-12-31T00:00:00Z", true},
	        {"2026-13-01T00:00:00Z", false},
	        {"2026-00-01T00:00:00Z", false},
	        {"2026-01-00T00:00:00Z", false},
	        {"2026-01-32T00:00:00Z", false},
	        {"2026-01-02T23:59:59Z", true},
	        {"2026-01-02T24:00:00Z", false},
	        {"2026-01-02T23:60:00Z", false},
	        {"2026-12-31T23:59:60Z", false}, /* leap second: see scalar.h */
	        {"2026-01-02T-1:04:05Z", false},
	        {"", false},
	};
	CHECK_TABLE(sy_client_version_valid, rows);
}

static void test_opaque_version(void)
{
	static const str_case rows[] = {
	        {"v", true},     {"AbC-123_~!", true}, {"a b", true},
	        {" ", true},     {"", false},          {"a\tb", false},
	        {"a\nb", false}, {"a\x7f", false},     {"caf\xc3\xa9", false},
	};
	CHECK_TABLE(sy_opaque_version_valid, rows);

	char buf[SY_OPAQUE_VERSION_MAX + 2];
	memset(buf, 'x', sizeof buf);
	CU_ASSERT_TRUE(sy_opaque_version_valid(buf, SY_OPAQUE_VERSION_MAX));
	CU_ASSERT_FALSE(sy_opaque_version_valid(buf, SY_OPAQUE_VERSION_MAX + 1));
	CU_ASSERT_FALSE(sy_opaque_version_valid("a\0b", 3));
	CU_ASSERT_FALSE(sy_opaque_version_valid(NULL, 0));
	/* Every byte, alone. */
	for (int c = 0; c < 256; c++) {
		char one = (char)c;
		CU_ASSERT_EQUAL(sy_opaque_version_valid(&one, 1), c >= 0x20 && c <= 0x7e);
	}
}

static void test_server_time_format(void)
{
	static const struct {
		int64_t usec;
		const char *text;
	} rows[] = {
	        {0, "1970-01-01T00:00:00.000000Z"},
	        {1, "1970-01-01T00:00:00.000001Z"},
	        {-1, "1969-12-31T23:59:59.999999Z"},
	        {951827696789012LL, "2000-02-29T12:34:56.789012Z"},
	        {-2203891200000000LL, "1900-03-01T00:00:00.000000Z"},
	        {-11670994676999996LL, "1600-02-29T01:02:03.000004Z"},
	        {1795986819330000LL, "2026-11-29T21:13:39.330000Z"},
	        {2147483648000000LL, "2038-01-19T03:14:08.000000Z"},
	        {SY_SERVER_TIME_MIN_USEC, "0001-01-01T00:00:00.000000Z"},
	        {SY_SERVER_TIME_MAX_USEC, "9999-12-31T23:59:59.999999Z"},
	        /* Outside the four-digit years: clamped. */
	        {SY_SERVER_TIME_MIN_USEC - 1, "0001-01-01T00:00:00.000000Z"},
	        {SY_SERVER_TIME_MAX_USEC + 1, "9999-12-31T23:59:59.999999Z"},
	        {INT64_MIN, "0001-01-01T00:00:00.000000Z"},
	        {INT64_MAX, "9999-12-31T23:59:59.999999Z"},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		char out[SY_SERVER_TIME_LEN + 1];
		memset(out, '#', sizeof out);
		sy_server_time_format(rows[i].usec, out);
		CU_ASSERT_STRING_EQUAL(out, rows[i].text);
		CU_ASSERT_TRUE(sy_server_time_valid(out, strlen(out)));
		int64_t back = 0;
		CU_ASSERT_TRUE(sy_server_time_parse(rows[i].text, strlen(rows[i].text), &back));
		bool in_range = rows[i].usec >= SY_SERVER_TIME_MIN_USEC &&
		                rows[i].usec <= SY_SERVER_TIME_MAX_USEC;
		if (in_range)
			CU_ASSERT_EQUAL(back, rows[i].usec);
	}
}

/* Every day of years 0001..9999 against the C library's own calendar. */
static void test_civil_days_exhaustive(void)
{
	int64_t first = sy_days_from_civil(1, 1, 1), last = sy_days_from_civil(9999, 12, 31);
	CU_ASSERT_EQUAL(first, -719162);
	CU_ASSERT_EQUAL(last, 2932896);
	CU_ASSERT_EQUAL(sy_days_from_civil(1970, 1, 1), 0);
	CU_ASSERT_EQUAL(sy_days_from_civil(2000, 3, 1), 11017);
	size_t bad = 0;
	for (int64_t day = first; day <= last; day++) {
		int64_t y;
		unsigned m, d;
		sy_civil_from_days(day, &y, &m, &d);
		time_t t = (time_t)(day * 86400);
		struct tm tm;
		if (gmtime_r(&t, &tm) == NULL || tm.tm_year + 1900 != y ||
		    tm.tm_mon + 1 != (int)m || tm.tm_mday != (int)d ||
		    sy_days_from_civil(y, m, d) != day)
			bad++;
	}
	CU_ASSERT_EQUAL(bad, 0);
}

static void test_server_time_valid(void)
{
	static const str_case rows[] = {
	        {"2026-01-02T03:04:05.123456Z", true},
	        {"2026-01-02T03:04:05.000000Z", true},
	        {"2000-02-29T00:00:00.000000Z", true},
	        {"2024-02-29T00:00:00.000000Z", true},
	        {"1900-02-29T00:00:00.000000Z", false},
	        {"0001-01-01T00:00:00.000000Z", true},
	        {"9999-12-31T23:59:59.999999Z", true},
	        {"0000-12-31T23:59:59.999999Z", false},
	        {"2026-01-02T03:04:05Z", false},
	        {"2026-01-02T03:04:05.123Z", false},
	        {"2026-01-02T03:04:05.1234567Z", false},
	        {"2026-01-02T03:04:05.123456", false},
	        {"2026-01-02T03:04:05.123456z", false},
	        {"2026-01-02T03:04:05,123456Z", false},
	        {"2026-01-02 03:04:05.123456Z", false},
	        {"2026-01-02T03:04:05.12345aZ", false},
	        {"2026-01-02T24:00:00.000000Z", false},
	        {"2026-01-02T23:59:60.000000Z", false},
	        {"2026-06-31T00:00:00.000000Z", false},
	        {"2026-01-02T03:04:05.123456+00", false},
	        {"", false},
	};
	CHECK_TABLE(sy_server_time_valid, rows);
	int64_t usec = 42;
	CU_ASSERT_FALSE(sy_server_time_parse("2026-01-02T03:04:05Z", 20, &usec));
	CU_ASSERT_FALSE(sy_server_time_parse(NULL, 0, &usec));
}

static void test_date(void)
{
	static const str_case rows[] = {
	        {"2026-01-02", true},
	        {"0001-01-01", true},
	        {"9999-12-31", true},
	        {"2000-02-29", true},
	        {"2024-02-29", true},
	        {"1900-02-29", false},
	        {"2023-02-29", false},
	        {"2100-02-29", false},
	        {"2400-02-29", true},
	        {"2026-04-31", false},
	        {"2026-13-01", false},
	        {"2026-00-10", false},
	        {"2026-01-00", false},
	        {"2026-01-32", false},
	        {"0000-01-01", false},
	        {"2026-1-02", false},
	        {"20260102", false},
	        {"2026/01/02", false},
	        {"2026-01-02T00:00:00Z", false},
	        {"10000-01-01", false},
	        {"", false},
	};
	CHECK_TABLE(sy_date_valid, rows);
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"uuid", test_uuid},
	        {"hash hex", test_hash_hex},
	        {"hex digits and big-endian octets", test_octets},
	        {"client generation and positive integers", test_generation},
	        {"schema reference", test_schema_ref},
	        {"schema reference built by hand", test_schema_ref_built},
	        {"client_version", test_client_version},
	        {"opaque version", test_opaque_version},
	        {"server_time format", test_server_time_format},
	        {"civil days, every day of 0001..9999", test_civil_days_exhaustive},
	        {"server_time validity", test_server_time_valid},
	        {"date", test_date},
	        CU_TEST_INFO_NULL,
	};
	sy_test_add_suite("scalar", tests);
	return sy_test_run();
}
