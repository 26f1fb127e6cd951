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
#include "walsync/walsync_fences.h"

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
	const unsigned char r[] = {'Y', 0, 0, 0, 1};
	CU_ASSERT_TRUE(sy_ws_msg_parse(r, sizeof r, &m, &err));
	CU_ASSERT_EQUAL(m.kind, SY_WS_OTHER);
	CU_ASSERT_EQUAL(m.tag, 'Y');
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

static bool synchro(const char *json, sy_ws_synchro_kind *kind, sy_ws_change *c, sy_ws_scope_msg *m,
                    sy_error *err)
{
	static char arena[1024];
	return sy_ws_synchro_parse(json, strlen(json), arena, strlen(json) + 16, kind, c, m, err);
}

/* A members-scoped table's fence message: hop 1's column before and after. */
static void test_change_scope(void)
{
	sy_ws_synchro_kind kind;
	sy_ws_change c;
	sy_ws_scope_msg m;
	sy_error err = {0};
	CU_ASSERT_TRUE_FATAL(synchro("{\"pk\": \"t1\", \"state\": \"live\", \"user_id\": null, "
	                             "\"version\": \"v2\", \"table_id\": \"todo\", "
	                             "\"client_id\": null, \"mutation_id\": null, "
	                             "\"owner_after\": \"alice\", \"scope_after\": \"L2\", "
	                             "\"owner_before\": \"alice\", \"scope_before\": \"L1\"}",
	                             &kind, &c, &m, &err));
	CU_ASSERT_EQUAL(kind, SY_WS_SYNCHRO_CHANGE);
	CU_ASSERT_STRING_EQUAL(c.table_id, "todo");
	CU_ASSERT_STRING_EQUAL(c.scope_before, "L1");
	CU_ASSERT_STRING_EQUAL(c.scope_after, "L2");
	CU_ASSERT_PTR_NULL(m.scope);
	/* Null or absent: no scope on that side (an insert, a null column, an owner table). */
	CU_ASSERT_TRUE_FATAL(change("{\"pk\": \"t1\", \"state\": \"live\", \"user_id\": null, "
	                            "\"version\": \"v1\", \"table_id\": \"todo\", "
	                            "\"client_id\": null, \"mutation_id\": null, "
	                            "\"owner_after\": null, \"scope_after\": \"L1\", "
	                            "\"owner_before\": null, \"scope_before\": null}",
	                            &c, &err));
	CU_ASSERT_PTR_NULL(c.scope_before);
	CU_ASSERT_STRING_EQUAL(c.scope_after, "L1");
	CU_ASSERT_TRUE_FATAL(change(FENCE_JSON, &c, &err));
	CU_ASSERT_PTR_NULL(c.scope_before);
	CU_ASSERT_PTR_NULL(c.scope_after);
	CU_ASSERT_FALSE(change("{\"pk\": \"t1\", \"state\": \"live\", \"user_id\": null, "
	                       "\"version\": \"v1\", \"table_id\": \"todo\", "
	                       "\"client_id\": null, \"mutation_id\": null, "
	                       "\"owner_after\": null, \"scope_after\": 7, "
	                       "\"owner_before\": null}",
	                       &c, &err));
	CU_ASSERT_STRING_EQUAL(err.message, "version-fence message: bad scope_after");
	/* sy_ws_change_parse() takes version-fence messages only. */
	CU_ASSERT_FALSE(
	        change("{\"kind\": \"member\", \"scope\": \"m(k,u)\", \"key_after\": \"L\", "
	               "\"user_after\": \"bob\"}",
	               &c, &err));
	CU_ASSERT_STRING_EQUAL(err.message, "version-fence message: bad kind");
}

/* The scope trigger's membership and link messages. */
static void test_scope_messages(void)
{
	sy_ws_synchro_kind kind;
	sy_ws_change c;
	sy_ws_scope_msg m;
	sy_error err = {0};
	CU_ASSERT_TRUE_FATAL(synchro("{\"kind\": \"member\", \"scope\": "
	                             "\"list_members(list_id,user_id)\", \"key_after\": \"L\", "
	                             "\"user_after\": \"bob\", \"key_before\": null, "
	                             "\"user_before\": null}",
	                             &kind, &c, &m, &err));
	CU_ASSERT_EQUAL(kind, SY_WS_SYNCHRO_MEMBER);
	CU_ASSERT_STRING_EQUAL(m.scope, "list_members(list_id,user_id)");
	CU_ASSERT_PTR_NULL(m.key_before);
	CU_ASSERT_PTR_NULL(m.value_before);
	CU_ASSERT_STRING_EQUAL(m.key_after, "L");
	CU_ASSERT_STRING_EQUAL(m.value_after, "bob");
	CU_ASSERT_PTR_NULL(c.table_id);
	/* A delete: the after side absent. */
	CU_ASSERT_TRUE_FATAL(synchro("{\"kind\":\"member\",\"scope\":\"m(k,u)\","
	                             "\"key_before\":\"L\",\"user_before\":\"bob\"}",
	                             &kind, &c, &m, &err));
	CU_ASSERT_STRING_EQUAL(m.key_before, "L");
	CU_ASSERT_STRING_EQUAL(m.value_before, "bob");
	CU_ASSERT_PTR_NULL(m.key_after);
	/* A membership row with a null user names nobody: that side is absent. */
	CU_ASSERT_TRUE_FATAL(synchro("{\"kind\":\"member\",\"scope\":\"m(k,u)\","
	                             "\"key_before\":\"L\",\"user_before\":null,"
	                             "\"key_after\":\"L\",\"user_after\":\"bob\"}",
	                             &kind, &c, &m, &err));
	CU_ASSERT_PTR_NULL(m.key_before);
	CU_ASSERT_PTR_NULL(m.value_before);
	CU_ASSERT_STRING_EQUAL(m.value_after, "bob");
	/* A link: project P from team T1 to no team. */
	CU_ASSERT_TRUE_FATAL(synchro("{\"kind\":\"link\",\"scope\":\"projects.id->team_id\","
	                             "\"key_before\":\"P\",\"to_before\":\"T1\","
	                             "\"key_after\":\"P\",\"to_after\":null}",
	                             &kind, &c, &m, &err));
	CU_ASSERT_EQUAL(kind, SY_WS_SYNCHRO_LINK);
	CU_ASSERT_STRING_EQUAL(m.scope, "projects.id->team_id");
	CU_ASSERT_STRING_EQUAL(m.key_before, "P");
	CU_ASSERT_STRING_EQUAL(m.value_before, "T1");
	CU_ASSERT_STRING_EQUAL(m.key_after, "P");
	CU_ASSERT_PTR_NULL(m.value_after);

	static const struct {
		const char *json;
		const char *msg;
	} bad[] = {
	        {"{\"kind\":\"owner\",\"scope\":\"m(k,u)\"}", "synchro message: unknown kind"},
	        {"{\"kind\":7,\"scope\":\"m(k,u)\"}", "synchro message: unknown kind"},
	        {"{\"kind\":\"member\",\"key_after\":\"L\",\"user_after\":\"bob\"}",
	         "membership message: bad scope"},
	        {"{\"kind\":\"member\",\"scope\":\"\",\"key_after\":\"L\",\"user_after\":\"b\"}",
	         "membership message: bad scope"},
	        {"{\"kind\":\"member\",\"scope\":\"m(k,u)\",\"key_after\":1,\"user_after\":\"b\"}",
	         "membership message: bad key_after"},
	        {"{\"kind\":\"member\",\"scope\":\"m(k,u)\",\"key_after\":\"L\","
	         "\"user_after\":\"b\\u0000\"}",
	         "membership message: bad user_after"},
	        {"{\"kind\":\"link\",\"scope\":\"p.id->t\",\"key_before\":\"P\",\"to_before\":[]}",
	         "link message: bad to_before"},
	        {"{\"kind\":\"link\",\"scope\":\"p.id->t\",\"to_after\":\"T\"}",
	         "link message: no key"},
	        {"[\"member\"]", "version-fence message: bad not an object"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		sy_error e = {0};
		bool ok = synchro(bad[i].json, &kind, &c, &m, &e);
		CU_ASSERT_FALSE(ok);
		if (ok || strcmp(e.message, bad[i].msg) != 0)
			fprintf(stderr, "case %zu: '%s', want '%s'\n", i, e.message, bad[i].msg);
		CU_ASSERT_STRING_EQUAL(e.message, bad[i].msg);
		CU_ASSERT_PTR_NULL(m.scope);
	}
	/* An arena too small is a refusal, never an overflow. */
	char small[8];
	const char *j = "{\"kind\":\"member\",\"scope\":\"list_members(list_id,user_id)\"}";
	CU_ASSERT_FALSE(
	        sy_ws_synchro_parse(j, strlen(j), small, sizeof small, &kind, &c, &m, &err));
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
	        ("{\"client_id\": \"c0000000-0000-4000-8000-000000000001\", \"epoch\": "
	         "9223372036854775808}"),
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

static size_t put_str(unsigned char *p, const char *s)
{
	memcpy(p, s, strlen(s) + 1);
	return strlen(s) + 1;
}

/* RELATION synchro.row_fences as pgoutput sends it (flags, name, type oid, typmod per column). */
static size_t fences_relation(unsigned char *b)
{
	static const char *const cols[] = {"table_id",    "pk",        "state",   "version",
	                                   "mutation_id", "client_id", "user_id", "source_xid",
	                                   "source_lsn",  "updated_at"};
	size_t n = 0;
	b[n++] = 'R';
	n += put32(b + n, 16400);
	n += put_str(b + n, "synchro");
	n += put_str(b + n, "row_fences");
	b[n++] = 'd';
	b[n++] = 0;
	b[n++] = 10;
	for (int i = 0; i < 10; i++) {
		b[n++] = i < 2;
		n += put_str(b + n, cols[i]);
		n += put32(b + n, 25);
		n += put32(b + n, 0xffffffff);
	}
	return n;
}

static size_t text_col(unsigned char *p, const char *s)
{
	size_t n = 0;
	if (!s) {
		p[n++] = 'n';
		return n;
	}
	p[n++] = 't';
	n += put32(p + n, (uint32_t)strlen(s));
	memcpy(p + n, s, strlen(s));
	return n + strlen(s);
}

/* INSERT (or UPDATE, with an old key first when old) of one fence row. */
static size_t fence_row(unsigned char *b, char tag, bool old, const char *version,
                        const char *state, const char *mutation)
{
	const char *v[] = {"todo", "k1",    state, version, mutation,
	                   NULL,   "alice", "7",   NULL,    "2026-01-01"};
	size_t n = 0;
	b[n++] = (unsigned char)tag;
	n += put32(b + n, 16400);
	if (old) {
		b[n++] = 'K';
		b[n++] = 0;
		b[n++] = 2;
		n += text_col(b + n, "todo");
		n += text_col(b + n, "k1");
	}
	b[n++] = 'N';
	b[n++] = 0;
	b[n++] = 10;
	for (int i = 0; i < 10; i++)
		n += text_col(b + n, v[i]);
	return n;
}

static void test_fence_rows(void)
{
	unsigned char b[1024];
	sy_error err = {0};
	sy_ws_msg m;
	size_t n = fences_relation(b);
	CU_ASSERT_TRUE_FATAL(sy_ws_msg_parse(b, n, &m, &err));
	CU_ASSERT_EQUAL(m.kind, SY_WS_RELATION);
	sy_ws_relation rel;
	CU_ASSERT_TRUE_FATAL(sy_ws_relation_parse(m.raw, m.raw_len, &rel, &err));
	CU_ASSERT_EQUAL(rel.oid, 16400);
	CU_ASSERT_EQUAL(rel.ncols, 10);
	sy_ws_fence_cols cols;
	CU_ASSERT_TRUE_FATAL(sy_ws_fence_relation(&rel, &cols));
	CU_ASSERT_EQUAL(cols.version, 3);
	CU_ASSERT_EQUAL(cols.user_id, 6);
	/* Truncated anywhere: refused, never read past the end. */
	for (size_t k = 0; k < n; k++)
		CU_ASSERT_FALSE(sy_ws_relation_parse(b, k, &rel, &err));
	/* Another relation is not the fences. */
	sy_ws_relation other = rel;
	other.relname = "todo";
	CU_ASSERT_FALSE(sy_ws_fence_relation(&other, &cols));

	sy_ws_fences *f = sy_ws_fences_new();
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	char buf[1024];
	for (int old = 0; old < 2; old++) {
		n = fence_row(b, old ? 'U' : 'I', old, old ? "v2" : "v1", "live",
		              old ? NULL : "a0000000-0000-4000-8000-000000000001");
		CU_ASSERT_TRUE_FATAL(sy_ws_msg_parse(b, n, &m, &err));
		CU_ASSERT_EQUAL(m.kind, SY_WS_ROW);
		sy_ws_row row;
		CU_ASSERT_TRUE_FATAL(sy_ws_row_parse(m.raw, m.raw_len, &row, &err));
		CU_ASSERT_EQUAL(row.oid, 16400);
		CU_ASSERT_EQUAL(row.ncols, 10);
		sy_ws_fence t;
		CU_ASSERT_TRUE_FATAL(sy_ws_fence_from_row(&row, &cols, buf, n + 8, &t));
		CU_ASSERT_STRING_EQUAL(t.version, old ? "v2" : "v1");
		CU_ASSERT_PTR_NULL(t.client_id);
		CU_ASSERT_TRUE(sy_ws_fences_add(f, &t));
		for (size_t k = 0; k < n; k++)
			CU_ASSERT_FALSE(sy_ws_row_parse(b, k, &row, &err));
	}
	/* A bad state is no transition. */
	n = fence_row(b, 'I', false, "v3", "gone", NULL);
	sy_ws_row row;
	sy_ws_fence t;
	CU_ASSERT_TRUE_FATAL(sy_ws_row_parse(b, n, &row, &err));
	CU_ASSERT_FALSE(sy_ws_fence_from_row(&row, &cols, buf, n + 8, &t));

	/* A message matches its transition once, and only with every field equal. */
	sy_ws_change c = {.table_id = "todo",
	                  .pk = "k1",
	                  .version = "v1",
	                  .deleted = false,
	                  .mutation_id = "a0000000-0000-4000-8000-000000000001",
	                  .user_id = "alice"};
	sy_ws_change bad = c;
	bad.deleted = true;
	CU_ASSERT_FALSE(sy_ws_fences_take(f, &bad));
	bad = c;
	bad.pk = "k2";
	CU_ASSERT_FALSE(sy_ws_fences_take(f, &bad));
	bad = c;
	bad.mutation_id = NULL;
	CU_ASSERT_FALSE(sy_ws_fences_take(f, &bad));
	bad = c;
	bad.version = "forged";
	CU_ASSERT_FALSE(sy_ws_fences_take(f, &bad));
	CU_ASSERT_TRUE(sy_ws_fences_take(f, &c));
	CU_ASSERT_FALSE(sy_ws_fences_take(f, &c));
	c.version = "v2";
	c.mutation_id = NULL;
	CU_ASSERT_TRUE(sy_ws_fences_take(f, &c));
	CU_ASSERT_EQUAL(sy_ws_fences_count(f), 0);
	/* Many transitions (the table grows), then a new transaction forgets them. */
	char v[32];
	for (int i = 0; i < 10000; i++) {
		snprintf(v, sizeof v, "v%d", i);
		sy_ws_fence x = {.table_id = "t", .pk = "p", .version = v};
		CU_ASSERT_TRUE_FATAL(sy_ws_fences_add(f, &x));
		if (i % 2 == 0) {
			sy_ws_change y = {.table_id = "t", .pk = "p", .version = v};
			CU_ASSERT_TRUE(sy_ws_fences_take(f, &y));
		}
	}
	CU_ASSERT_EQUAL(sy_ws_fences_count(f), 5000);
	sy_ws_change y = {.table_id = "t", .pk = "p", .version = "v9999"};
	CU_ASSERT_TRUE(sy_ws_fences_take(f, &y));
	sy_ws_fences_clear(f);
	CU_ASSERT_EQUAL(sy_ws_fences_count(f), 0);
	y.version = "v9997";
	CU_ASSERT_FALSE(sy_ws_fences_take(f, &y));
	sy_ws_fences_free(f);
}

/* RELATION synchro.scope_changes, then INSERTs of its rows: each a membership or link change
 * as the scope trigger's message said it, the same sides left absent. */
static size_t scope_row(unsigned char *b, char tag, const char *const v[6])
{
	size_t n = 0;
	b[n++] = (unsigned char)tag;
	n += put32(b + n, 16500);
	b[n++] = 'N';
	b[n++] = 0;
	b[n++] = 6;
	for (int i = 0; i < 6; i++)
		n += text_col(b + n, v[i]);
	return n;
}

static void test_scope_rows(void)
{
	static const char *const names[] = {"kind",         "scope",     "key_before",
	                                    "value_before", "key_after", "value_after"};
	unsigned char b[1024];
	size_t n = 0;
	b[n++] = 'R';
	n += put32(b + n, 16500);
	n += put_str(b + n, "synchro");
	n += put_str(b + n, "scope_changes");
	b[n++] = 'n';
	b[n++] = 0;
	b[n++] = 6;
	for (int i = 0; i < 6; i++) {
		b[n++] = 0;
		n += put_str(b + n, names[i]);
		n += put32(b + n, 25);
		n += put32(b + n, 0xffffffff);
	}
	sy_error err = {0};
	sy_ws_msg m;
	sy_ws_relation rel;
	CU_ASSERT_TRUE_FATAL(sy_ws_msg_parse(b, n, &m, &err));
	CU_ASSERT_TRUE_FATAL(sy_ws_relation_parse(m.raw, m.raw_len, &rel, &err));
	sy_ws_scope_cols cols;
	sy_ws_fence_cols fcols;
	CU_ASSERT_TRUE_FATAL(sy_ws_scope_relation(&rel, &cols));
	CU_ASSERT_FALSE(sy_ws_fence_relation(&rel, &fcols));
	CU_ASSERT_EQUAL(cols.value_after, 5);
	sy_ws_relation other = rel;
	other.nspname = "public";
	CU_ASSERT_FALSE(sy_ws_scope_relation(&other, &cols));

	char buf[1024];
	sy_ws_synchro_kind kind;
	sy_ws_scope_msg s;
	sy_ws_row row;
	/* A share. */
	const char *share[] = {"member", "m(k,u)", NULL, NULL, "L1", "bob"};
	n = scope_row(b, 'I', share);
	CU_ASSERT_TRUE_FATAL(sy_ws_row_parse(b, n, &row, &err));
	CU_ASSERT_TRUE_FATAL(sy_ws_scope_from_row(&row, &cols, buf, n + 8, &kind, &s));
	CU_ASSERT_EQUAL(kind, SY_WS_SYNCHRO_MEMBER);
	CU_ASSERT_STRING_EQUAL(s.scope, "m(k,u)");
	CU_ASSERT_PTR_NULL(s.key_before);
	CU_ASSERT_STRING_EQUAL(s.key_after, "L1");
	CU_ASSERT_STRING_EQUAL(s.value_after, "bob");
	/* A membership with a null user names nobody on that side. */
	const char *nouser[] = {"member", "m(k,u)", "L1", "bob", "L1", NULL};
	n = scope_row(b, 'I', nouser);
	CU_ASSERT_TRUE_FATAL(sy_ws_row_parse(b, n, &row, &err));
	CU_ASSERT_TRUE_FATAL(sy_ws_scope_from_row(&row, &cols, buf, n + 8, &kind, &s));
	CU_ASSERT_STRING_EQUAL(s.value_before, "bob");
	CU_ASSERT_PTR_NULL(s.key_after);
	CU_ASSERT_PTR_NULL(s.value_after);
	/* A link moved to no target keeps its key. */
	const char *link[] = {"link", "p.id->t", "10", "1", "10", NULL};
	n = scope_row(b, 'I', link);
	CU_ASSERT_TRUE_FATAL(sy_ws_row_parse(b, n, &row, &err));
	CU_ASSERT_TRUE_FATAL(sy_ws_scope_from_row(&row, &cols, buf, n + 8, &kind, &s));
	CU_ASSERT_EQUAL(kind, SY_WS_SYNCHRO_LINK);
	CU_ASSERT_STRING_EQUAL(s.key_after, "10");
	CU_ASSERT_PTR_NULL(s.value_after);
	/* Refused: an unknown kind, an empty scope, a link without a key, an UPDATE. */
	const char *bad_kind[] = {"owner", "m(k,u)", NULL, NULL, "L1", "bob"};
	const char *no_scope[] = {"member", "", NULL, NULL, "L1", "bob"};
	const char *no_key[] = {"link", "p.id->t", NULL, "1", NULL, "2"};
	const char *const *bad[] = {bad_kind, no_scope, no_key};
	for (int i = 0; i < 3; i++) {
		n = scope_row(b, 'I', bad[i]);
		CU_ASSERT_TRUE_FATAL(sy_ws_row_parse(b, n, &row, &err));
		CU_ASSERT_FALSE(sy_ws_scope_from_row(&row, &cols, buf, n + 8, &kind, &s));
	}
	n = scope_row(b, 'U', share);
	CU_ASSERT_TRUE_FATAL(sy_ws_row_parse(b, n, &row, &err));
	CU_ASSERT_FALSE(sy_ws_scope_from_row(&row, &cols, buf, n + 8, &kind, &s));
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"XLogData and keepalive frames", test_frames},
	        {"standby status update bytes", test_status},
	        {"pgoutput BEGIN and COMMIT", test_begin_commit},
	        {"pgoutput MESSAGE", test_message},
	        {"version-fence message JSON", test_change},
	        {"version-fence message of a members-scoped table", test_change_scope},
	        {"membership and link messages JSON", test_scope_messages},
	        {"accepted-epoch message JSON", test_epoch},
	        {"row_fences RELATION and rows, and the transaction's transitions",
	         test_fence_rows},
	        {"scope_changes RELATION and rows", test_scope_rows},
	        {NULL, NULL},
	};
	sy_test_add_suite("pgoutput", tests);
	return sy_test_run();
}
