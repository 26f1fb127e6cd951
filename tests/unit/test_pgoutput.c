/* SPDX-License-Identifier: BSD-2-Clause */
/* The replication stream's bytes and the logical messages' JSON (src/walsync/pgoutput.c):
 * frames, the standby status update, pgoutput v1 BEGIN/COMMIT/MESSAGE, the version-fence and
 * accepted-epoch payloads. */
#include "config.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "walsync/pgoutput.h"

static size_t put64(unsigned char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)(v & 0xff);
	return 8;
}

static size_t put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
	return 4;
}

static void test_frames(void)
{
	unsigned char b[64];
	size_t n = 0;
	b[n++] = 'w';
	n += put64(b + n, UINT64_C(0x0000000100000010));
	n += put64(b + n, UINT64_C(0x0000000100000020));
	n += put64(b + n, 12345);
	memcpy(b + n, "BODY", 4);
	n += 4;
	sy_ws_frame f;
	sy_error err = {0};
	CU_ASSERT_TRUE_FATAL(sy_ws_frame_parse(b, n, &f, &err));
	CU_ASSERT_EQUAL(f.kind, SY_WS_FRAME_XLOGDATA);
	CU_ASSERT_EQUAL(f.wal_start, UINT64_C(0x0000000100000010));
	CU_ASSERT_EQUAL(f.wal_end, UINT64_C(0x0000000100000020));
	CU_ASSERT_EQUAL(f.send_time, 12345);
	CU_ASSERT_EQUAL(f.len, 4);
	CU_ASSERT_PTR_EQUAL(f.data, b + 25);
	/* An XLogData header without payload is well formed; one byte short is not. */
	CU_ASSERT_TRUE(sy_ws_frame_parse(b, 25, &f, &err));
	CU_ASSERT_EQUAL(f.len, 0);
	CU_ASSERT_FALSE(sy_ws_frame_parse(b, 24, &f, &err));

	n = 0;
	b[n++] = 'k';
	n += put64(b + n, UINT64_C(0xABCDEF0012345678));
	n += put64(b + n, 7);
	b[n++] = 1;
	CU_ASSERT_TRUE_FATAL(sy_ws_frame_parse(b, n, &f, &err));
	CU_ASSERT_EQUAL(f.kind, SY_WS_FRAME_KEEPALIVE);
	CU_ASSERT_EQUAL(f.wal_end, UINT64_C(0xABCDEF0012345678));
	CU_ASSERT_EQUAL(f.send_time, 7);
	CU_ASSERT_TRUE(f.reply_requested);
	b[17] = 0;
	CU_ASSERT_TRUE(sy_ws_frame_parse(b, n, &f, &err));
	CU_ASSERT_FALSE(f.reply_requested);
	CU_ASSERT_FALSE(sy_ws_frame_parse(b, 17, &f, &err));

	b[0] = 'x';
	CU_ASSERT_FALSE(sy_ws_frame_parse(b, n, &f, &err));
	CU_ASSERT_STRING_EQUAL(err.message, "unknown replication message kind 0x78");
	CU_ASSERT_FALSE(sy_ws_frame_parse(b, 0, &f, &err));
}

static void test_status(void)
{
	unsigned char out[SY_WS_STATUS_LEN];
	sy_ws_status_build(out, UINT64_C(0x0102030405060708), UINT64_C(0x1112131415161718),
	                   UINT64_C(0x2122232425262728), INT64_C(0x3132333435363738), true);
	static const unsigned char want[SY_WS_STATUS_LEN] = {
	        'r',  0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x11, 0x12, 0x13,
	        0x14, 0x15, 0x16, 0x17, 0x18, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27,
	        0x28, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x01};
	CU_ASSERT_EQUAL(memcmp(out, want, sizeof want), 0);
	sy_ws_status_build(out, 0, 0, 0, 0, false);
	CU_ASSERT_EQUAL(out[33], 0);
}

static void test_begin_commit(void)
{
	unsigned char b[64];
	size_t n = 0;
	b[n++] = 'B';
	n += put64(b + n, UINT64_C(0x00000000019A5CF8));
	n += put64(b + n, 817000000000);
	n += put32(b + n, 739);
	sy_ws_msg m;
	sy_error err = {0};
	CU_ASSERT_TRUE_FATAL(sy_ws_msg_parse(b, n, &m, &err));
	CU_ASSERT_EQUAL(m.kind, SY_WS_BEGIN);
	CU_ASSERT_EQUAL(m.final_lsn, UINT64_C(0x19A5CF8));
	CU_ASSERT_EQUAL(m.commit_time, 817000000000);
	CU_ASSERT_EQUAL(m.xid, 739);
	CU_ASSERT_FALSE(sy_ws_msg_parse(b, n - 1, &m, &err));

	n = 0;
	b[n++] = 'C';
	b[n++] = 0;
	n += put64(b + n, UINT64_C(0x19A5CF8));
	n += put64(b + n, UINT64_C(0x19A5D28));
	n += put64(b + n, 817000000000);
	CU_ASSERT_TRUE_FATAL(sy_ws_msg_parse(b, n, &m, &err));
	CU_ASSERT_EQUAL(m.kind, SY_WS_COMMIT);
	CU_ASSERT_EQUAL(m.commit_lsn, UINT64_C(0x19A5CF8));
	CU_ASSERT_EQUAL(m.end_lsn, UINT64_C(0x19A5D28));
	CU_ASSERT_EQUAL(m.commit_time, 817000000000);
	CU_ASSERT_FALSE(sy_ws_msg_parse(b, n + 1, &m, &err));

	/* Relation, type, origin, row changes: ignored, not refused. */
	const unsigned char r[] = {'R', 0, 0, 0, 1};
	CU_ASSERT_TRUE(sy_ws_msg_parse(r, sizeof r, &m, &err));
	CU_ASSERT_EQUAL(m.kind, SY_WS_OTHER);
	CU_ASSERT_EQUAL(m.tag, 'R');
	CU_ASSERT_FALSE(sy_ws_msg_parse(r, 0, &m, &err));
}

static size_t message(unsigned char *b, unsigned flags, const char *prefix, const char *content)
{
	size_t n = 0;
	b[n++] = 'M';
	b[n++] = (unsigned char)flags;
	n += put64(b + n, 0x42);
	memcpy(b + n, prefix, strlen(prefix) + 1);
	n += strlen(prefix) + 1;
	n += put32(b + n, (uint32_t)strlen(content));
	memcpy(b + n, content, strlen(content));
	return n + strlen(content);
}

static void test_message(void)
{
	unsigned char b[256];
	sy_ws_msg m;
	sy_error err = {0};
	size_t n = message(b, 1, "synchro", "{\"a\": 1}");
	CU_ASSERT_TRUE_FATAL(sy_ws_msg_parse(b, n, &m, &err));
	CU_ASSERT_EQUAL(m.kind, SY_WS_MESSAGE);
	CU_ASSERT_TRUE(m.transactional);
	CU_ASSERT_EQUAL(m.message_lsn, 0x42);
	CU_ASSERT_STRING_EQUAL(m.prefix, "synchro");
	CU_ASSERT_EQUAL(m.content_len, 8);
	CU_ASSERT_EQUAL(memcmp(m.content, "{\"a\": 1}", 8), 0);

	n = message(b, 0, "synchro-epoch", "");
	CU_ASSERT_TRUE_FATAL(sy_ws_msg_parse(b, n, &m, &err));
	CU_ASSERT_FALSE(m.transactional);
	CU_ASSERT_STRING_EQUAL(m.prefix, "synchro-epoch");
	CU_ASSERT_EQUAL(m.content_len, 0);

	/* The declared length must match the bytes that follow, both ways. */
	n = message(b, 1, "synchro", "abc");
	CU_ASSERT_FALSE(sy_ws_msg_parse(b, n - 1, &m, &err));
	b[n] = 'x';
	CU_ASSERT_FALSE(sy_ws_msg_parse(b, n + 1, &m, &err));
	/* No NUL after the prefix. */
	memset(b + 10, 'p', 20);
	CU_ASSERT_FALSE(sy_ws_msg_parse(b, 30, &m, &err));
	CU_ASSERT_FALSE(sy_ws_msg_parse(b, 10, &m, &err));
}

/* The text jsonb gives the trigger's object: members sorted by length, then bytes. */
#define FENCE_JSON                                                                                 \
	"{\"pk\": \"5531c5d7-f0cd-4bda-91cb-672299752563\", \"state\": \"live\", \"user_id\": "    \
	"\"alice\", \"version\": \"093e7bf74c034f4c89c1bb17be53b3c7\", \"table_id\": \"todo\", "   \
	"\"client_id\": \"c0000000-0000-4000-8000-000000000001\", \"mutation_id\": "               \
	"\"a0000000-0000-4000-8000-000000000001\", \"owner_after\": \"alice\", \"owner_before\": " \
	"null}"

static bool change(const char *json, sy_ws_change *c, sy_error *err)
{
	static char arena[1024];
	return sy_ws_change_parse(json, strlen(json), arena, strlen(json) + 16, c, err);
}

static void test_change(void)
{
	sy_ws_change c;
	sy_error err = {0};
	CU_ASSERT_TRUE_FATAL(change(FENCE_JSON, &c, &err));
	CU_ASSERT_STRING_EQUAL(c.table_id, "todo");
	CU_ASSERT_STRING_EQUAL(c.pk, "5531c5d7-f0cd-4bda-91cb-672299752563");
	CU_ASSERT_STRING_EQUAL(c.version, "093e7bf74c034f4c89c1bb17be53b3c7");
	CU_ASSERT_FALSE(c.deleted);
	CU_ASSERT_STRING_EQUAL(c.mutation_id, "a0000000-0000-4000-8000-000000000001");
	CU_ASSERT_STRING_EQUAL(c.client_id, "c0000000-0000-4000-8000-000000000001");
	CU_ASSERT_STRING_EQUAL(c.user_id, "alice");
	CU_ASSERT_PTR_NULL(c.owner_before);
	CU_ASSERT_STRING_EQUAL(c.owner_after, "alice");

	/* A direct write: every identity null; escapes decoded; unknown members ignored. */
	CU_ASSERT_TRUE_FATAL(change("{\"table_id\":\"item\",\"pk\":\"a\\\"b\\\\c\\u00e9\","
	                            "\"version\":\"v1\",\"state\":\"deleted\",\"mutation_id\":null,"
	                            "\"client_id\":null,\"user_id\":null,\"owner_before\":null,"
	                            "\"owner_after\":null,\"later\":[1]}",
	                            &c, &err));
	CU_ASSERT_STRING_EQUAL(c.pk, "a\"b\\c\xc3\xa9");
	CU_ASSERT_TRUE(c.deleted);
	CU_ASSERT_PTR_NULL(c.mutation_id);
	CU_ASSERT_PTR_NULL(c.client_id);
	CU_ASSERT_PTR_NULL(c.user_id);
	CU_ASSERT_PTR_NULL(c.owner_after);

	static const struct {
		const char *json;
		const char *msg;
	} bad[] = {
	        {"[]", "version-fence message: bad not an object"},
	        {"{\"pk\":\"1\",\"version\":\"v\",\"state\":\"live\",\"mutation_id\":null,"
	         "\"client_id\":null,\"user_id\":null,\"owner_before\":null,\"owner_after\":null}",
	         "version-fence message: bad table_id"},
	        {"{\"table_id\":\"\",\"pk\":\"1\",\"version\":\"v\",\"state\":\"live\","
	         "\"mutation_id\":null,\"client_id\":null,\"user_id\":null,\"owner_before\":null,"
	         "\"owner_after\":null}",
	         "version-fence message: bad table_id"},
	        {"{\"table_id\":\"t\",\"pk\":1,\"version\":\"v\",\"state\":\"live\","
	         "\"mutation_id\":null,\"client_id\":null,\"user_id\":null,\"owner_before\":null,"
	         "\"owner_after\":null}",
	         "version-fence message: bad pk"},
	        {"{\"table_id\":\"t\",\"pk\":\"a\\u0000\",\"version\":\"v\",\"state\":\"live\","
	         "\"mutation_id\":null,\"client_id\":null,\"user_id\":null,\"owner_before\":null,"
	         "\"owner_after\":null}",
	         "version-fence message: bad pk"},
	        {"{\"table_id\":\"t\",\"pk\":\"1\",\"version\":\"\",\"state\":\"live\","
	         "\"mutation_id\":null,\"client_id\":null,\"user_id\":null,\"owner_before\":null,"
	         "\"owner_after\":null}",
	         "version-fence message: bad version"},
	        {"{\"table_id\":\"t\",\"pk\":\"1\",\"version\":\"a\\nb\",\"state\":\"live\","
	         "\"mutation_id\":null,\"client_id\":null,\"user_id\":null,\"owner_before\":null,"
	         "\"owner_after\":null}",
	         "version-fence message: bad version"},
	        {"{\"table_id\":\"t\",\"pk\":\"1\",\"version\":\"v\",\"state\":\"gone\","
	         "\"mutation_id\":null,\"client_id\":null,\"user_id\":null,\"owner_before\":null,"
	         "\"owner_after\":null}",
	         "version-fence message: bad state"},
	        {"{\"table_id\":\"t\",\"pk\":\"1\",\"version\":\"v\",\"state\":\"live\","
	         "\"mutation_id\":\"A0000000-0000-4000-8000-000000000001\",\"client_id\":null,"
	         "\"user_id\":null,\"owner_before\":null,\"owner_after\":null}",
	         "version-fence message: bad mutation_id"},
	        {"{\"table_id\":\"t\",\"pk\":\"1\",\"version\":\"v\",\"state\":\"live\","
	         "\"mutation_id\":null,\"client_id\":\"x\",\"user_id\":null,\"owner_before\":null,"
	         "\"owner_after\":null}",
	         "version-fence message: bad client_id"},
	        {"{\"table_id\":\"t\",\"pk\":\"1\",\"version\":\"v\",\"state\":\"live\","
	         "\"mutation_id\":null,\"client_id\":null,\"user_id\":null,\"owner_before\":null}",
	         "version-fence message: bad owner_after"},
	        {"{\"table_id\":\"t\",\"pk\":\"1\",\"version\":\"v\",\"state\":\"live\","
	         "\"mutation_id\":null,\"client_id\":null,\"user_id\":false,\"owner_before\":null,"
	         "\"owner_after\":null}",
	         "version-fence message: bad user_id"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		sy_error e = {0};
		bool ok = change(bad[i].json, &c, &e);
		CU_ASSERT_FALSE(ok);
		if (ok || strcmp(e.message, bad[i].msg) != 0)
			fprintf(stderr, "case %zu: '%s', want '%s'\n", i, e.message, bad[i].msg);
		CU_ASSERT_STRING_EQUAL(e.message, bad[i].msg);
		CU_ASSERT_PTR_NULL(c.table_id);
	}
	/* Not JSON at all. */
	CU_ASSERT_FALSE(change("{\"table_id\":", &c, &err));
	/* An arena too small is a refusal, never an overflow. */
	char small[8];
	CU_ASSERT_FALSE(
	        sy_ws_change_parse(FENCE_JSON, strlen(FENCE_JSON), small, sizeof small, &c, &err));
}

static void test_epoch(void)
{
	char client[37];
	long long e = 0;
	sy_error err = {0};
	const char *ok =
	        "{\"client_id\" : \"c0000000-0000-4000-8000-000000000001\", \"epoch\" : 7}";
	CU_ASSERT_TRUE_FATAL(sy_ws_epoch_parse(ok, strlen(ok), client, &e, &err));
	CU_ASSERT_STRING_EQUAL(client, "c0000000-0000-4000-8000-000000000001");
	CU_ASSERT_EQUAL(e, 7);
	static const char *const bad[] = {
	        "{\"client_id\": \"c0000000-0000-4000-8000-000000000001\", \"epoch\": 0}",
	        "{\"client_id\": \"c0000000-0000-4000-8000-000000000001\", \"epoch\": -1}",
	        "{\"client_id\": \"c0000000-0000-4000-8000-000000000001\", \"epoch\": 1.5}",
	        "{\"client_id\": \"c0000000-0000-4000-8000-000000000001\", \"epoch\": \"2\"}",
	        "{\"client_id\": \"c0000000-0000-4000-8000-000000000001\", \"epoch\": "
	        "9223372036854775808}",
	        "{\"client_id\": \"c0000000-0000-4000-8000-00000000000\", \"epoch\": 2}",
	        "{\"client_id\": null, \"epoch\": 2}",
	        "{\"epoch\": 2}",
	        "[\"c0000000-0000-4000-8000-000000000001\", 2]",
	        "",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CU_ASSERT_FALSE(sy_ws_epoch_parse(bad[i], strlen(bad[i]), client, &e, &err));
	const char *max = "{\"client_id\": \"c0000000-0000-4000-8000-000000000001\", \"epoch\": "
	                  "9223372036854775807}";
	CU_ASSERT_TRUE(sy_ws_epoch_parse(max, strlen(max), client, &e, &err));
	CU_ASSERT_EQUAL(e, INT64_MAX);
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"XLogData and keepalive frames", test_frames},
	        {"standby status update bytes", test_status},
	        {"pgoutput BEGIN and COMMIT", test_begin_commit},
	        {"pgoutput MESSAGE", test_message},
	        {"version-fence message JSON", test_change},
	        {"accepted-epoch message JSON", test_epoch},
	        {NULL, NULL},
	};
	sy_test_add_suite("pgoutput", tests);
	return sy_test_run();
}
