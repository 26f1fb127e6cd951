/* SPDX-License-Identifier: BSD-2-Clause */
/* The scope mirror in memory (src/walsync/walsync_scopes.c): tables, members and links,
 * readers through one and two hops, the dirty entries a changelog write takes, loading
 * without dirt, forgetting, and many keys. */
#include "config.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "synchro/buf.h"
#include "testutil.h"
#include "walsync/walsync_scopes.h"

#define LM "list_members(list_id,user_id)"
#define TM "team_members(team_id,user_id)"
#define PL "projects.id->team_id"

static char lit_buf[256];
static const char *literal(const sy_ws_scopes *s, const char *scope, const char *key)
{
	sy_buf b = {0};
	sy_ws_scopes_literal(s, scope, key, &b);
	snprintf(lit_buf, sizeof lit_buf, "%s", b.data ? b.data : "");
	sy_buf_free(&b);
	return lit_buf;
}

typedef struct {
	char text[1024];
} dirt;

static void on_member(void *arg, const char *scope, const char *key, const char *const *users,
                      size_t n)
{
	dirt *d = arg;
	size_t len = strlen(d->text);
	len += (size_t)snprintf(d->text + len, sizeof d->text - len, "M %s %s:", scope, key);
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(d->text + len, sizeof d->text - len, " %s", users[i]);
	snprintf(d->text + len, sizeof d->text - len, ";");
}

static void on_link(void *arg, const char *link, const char *key, const char *target)
{
	dirt *d = arg;
	size_t len = strlen(d->text);
	snprintf(d->text + len, sizeof d->text - len, "L %s %s: %s;", link, key,
	         target ? target : "-");
}

static void test_members(void)
{
	sy_ws_scopes *s = sy_ws_scopes_new();
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_TRUE(sy_ws_scopes_table(s, "todo", LM, NULL));
	CU_ASSERT_TRUE(sy_ws_scopes_table(s, "tasks", TM, PL));
	const char *scope, *link;
	CU_ASSERT_TRUE(sy_ws_scopes_table_get(s, "todo", &scope, &link));
	CU_ASSERT_STRING_EQUAL(scope, LM);
	CU_ASSERT_PTR_NULL(link);
	CU_ASSERT_TRUE(sy_ws_scopes_table_get(s, "tasks", &scope, &link));
	CU_ASSERT_STRING_EQUAL(link, PL);
	CU_ASSERT_FALSE(sy_ws_scopes_table_get(s, "notes", &scope, &link));
	CU_ASSERT_PTR_NULL(scope);
	/* A table known not to be members-scoped. */
	CU_ASSERT_FALSE(sy_ws_scopes_table_known(s, "notes"));
	CU_ASSERT_TRUE(sy_ws_scopes_table_plain(s, "notes"));
	CU_ASSERT_TRUE(sy_ws_scopes_table_known(s, "notes"));
	CU_ASSERT_FALSE(sy_ws_scopes_table_get(s, "notes", &scope, &link));
	CU_ASSERT_TRUE(sy_ws_scopes_table_known(s, "todo"));
	CU_ASSERT_EQUAL(sy_ws_scopes_table_count(s), 2);

	/* Loaded rows are not dirty. */
	CU_ASSERT_TRUE(sy_ws_scopes_load_member(s, LM, "L1", "alice"));
	CU_ASSERT_TRUE(sy_ws_scopes_load_member(s, LM, "L1", "carol"));
	CU_ASSERT_TRUE(sy_ws_scopes_load_member(s, LM, "L1", "alice"));
	CU_ASSERT_TRUE(sy_ws_scopes_load_link(s, PL, "P1", "T1"));
	CU_ASSERT_TRUE(sy_ws_scopes_load_member(s, TM, "T1", "dave"));
	CU_ASSERT_EQUAL(sy_ws_scopes_member_count(s), 3);
	CU_ASSERT_EQUAL(sy_ws_scopes_link_count(s), 1);
	CU_ASSERT_EQUAL(sy_ws_scopes_dirty_count(s), 0);
	CU_ASSERT_STRING_EQUAL(literal(s, LM, "L1"), "{\"alice\",\"carol\"}");
	CU_ASSERT_STRING_EQUAL(literal(s, LM, "L2"), "{}");
	CU_ASSERT_STRING_EQUAL(literal(s, LM, NULL), "{}");
	/* The same key in another scope is another key. */
	CU_ASSERT_STRING_EQUAL(literal(s, TM, "L1"), "{}");

	/* Two hops: the link's target is the scope key. */
	CU_ASSERT_STRING_EQUAL(sy_ws_scopes_key(s, PL, "P1"), "T1");
	CU_ASSERT_PTR_NULL(sy_ws_scopes_key(s, PL, "P2"));
	CU_ASSERT_STRING_EQUAL(sy_ws_scopes_key(s, NULL, "L1"), "L1");
	CU_ASSERT_STRING_EQUAL(literal(s, TM, sy_ws_scopes_key(s, PL, "P1")), "{\"dave\"}");
	/* And back: the keys a target is reached from. */
	size_t nk;
	const char *const *k = sy_ws_scopes_link_keys(s, PL, "T1", &nk);
	CU_ASSERT_EQUAL_FATAL(nk, 1);
	CU_ASSERT_STRING_EQUAL(k[0], "P1");
	CU_ASSERT_PTR_NULL(sy_ws_scopes_link_keys(s, PL, "T9", &nk));
	CU_ASSERT_EQUAL(nk, 0);

	/* Comings and goings: sorted, quoted, dirty once per key. */
	bool changed;
	CU_ASSERT_TRUE(sy_ws_scopes_member_add(s, LM, "L1", "bo\"b", &changed));
	CU_ASSERT_TRUE(changed);
	CU_ASSERT_TRUE(sy_ws_scopes_member_add(s, LM, "L1", "bo\"b", &changed));
	CU_ASSERT_FALSE(changed);
	CU_ASSERT_STRING_EQUAL(literal(s, LM, "L1"), "{\"alice\",\"bo\\\"b\",\"carol\"}");
	CU_ASSERT_TRUE(sy_ws_scopes_member_remove(s, LM, "L1", "alice", &changed));
	CU_ASSERT_TRUE(changed);
	CU_ASSERT_TRUE(sy_ws_scopes_member_remove(s, LM, "L1", "alice", &changed));
	CU_ASSERT_FALSE(changed);
	CU_ASSERT_TRUE(sy_ws_scopes_member_remove(s, LM, "L9", "alice", &changed));
	CU_ASSERT_FALSE(changed);
	CU_ASSERT_TRUE(sy_ws_scopes_link_set(s, PL, "P1", "T2", &changed));
	CU_ASSERT_TRUE(changed);
	CU_ASSERT_TRUE(sy_ws_scopes_link_set(s, PL, "P1", "T2", &changed));
	CU_ASSERT_FALSE(changed);
	CU_ASSERT_TRUE(sy_ws_scopes_link_set(s, PL, "P3", NULL, &changed));
	CU_ASSERT_FALSE(changed);
	CU_ASSERT_TRUE(sy_ws_scopes_link_set(s, PL, "P4", "T1", &changed));
	CU_ASSERT_TRUE(sy_ws_scopes_link_set(s, PL, "P4", NULL, &changed));
	CU_ASSERT_TRUE(changed);
	CU_ASSERT_EQUAL(sy_ws_scopes_member_count(s), 3);
	CU_ASSERT_EQUAL(sy_ws_scopes_link_count(s), 1);
	CU_ASSERT_EQUAL(sy_ws_scopes_dirty_count(s), 3);
	(void)sy_ws_scopes_link_keys(s, PL, "T1", &nk);
	CU_ASSERT_EQUAL(nk, 0);
	k = sy_ws_scopes_link_keys(s, PL, "T2", &nk);
	CU_ASSERT_EQUAL_FATAL(nk, 1);
	CU_ASSERT_STRING_EQUAL(k[0], "P1");
	sy_buf b = {0};
	sy_ws_scopes_set_literal(k, nk, &b);
	CU_ASSERT_STRING_EQUAL(b.data, "{\"P1\"}");
	sy_buf_free(&b);
	dirt d = {""};
	sy_ws_scopes_dirty_each(s, on_member, on_link, &d);
	CU_ASSERT_STRING_EQUAL(d.text, "M " LM " L1: bo\"b carol;L " PL " P1: T2;L " PL " P4: -;");
	sy_ws_scopes_dirty_clear(s);
	CU_ASSERT_EQUAL(sy_ws_scopes_dirty_count(s), 0);
	CU_ASSERT_TRUE(sy_ws_scopes_member_add(s, LM, "L2", "bob", &changed));
	CU_ASSERT_EQUAL(sy_ws_scopes_dirty_count(s), 1);

	/* A new stream forgets the mirror (and its dirt), not the tables. */
	sy_ws_scopes_forget_mirror(s);
	CU_ASSERT_EQUAL(sy_ws_scopes_member_count(s), 0);
	CU_ASSERT_EQUAL(sy_ws_scopes_link_count(s), 0);
	CU_ASSERT_EQUAL(sy_ws_scopes_dirty_count(s), 0);
	CU_ASSERT_STRING_EQUAL(literal(s, LM, "L1"), "{}");
	CU_ASSERT_TRUE(sy_ws_scopes_table_get(s, "tasks", &scope, &link));
	CU_ASSERT_EQUAL(sy_ws_scopes_table_count(s), 2);
	CU_ASSERT_TRUE(sy_ws_scopes_load_member(s, LM, "L1", "erin"));
	sy_ws_scopes_forget_tables(s);
	CU_ASSERT_EQUAL(sy_ws_scopes_table_count(s), 0);
	CU_ASSERT_FALSE(sy_ws_scopes_table_known(s, "notes"));
	CU_ASSERT_FALSE(sy_ws_scopes_table_get(s, "todo", &scope, &link));
	CU_ASSERT_STRING_EQUAL(literal(s, LM, "L1"), "{\"erin\"}");
	sy_ws_scopes_free(s);
	sy_ws_scopes_free(NULL);
}

/* Many keys and users: the table grows, every lookup still finds its key. */
static void test_many(void)
{
	sy_ws_scopes *s = sy_ws_scopes_new();
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	char key[32], user[32];
	bool changed;
	for (int i = 0; i < 20000; i++) {
		snprintf(key, sizeof key, "list-%d", i % 5000);
		snprintf(user, sizeof user, "user-%d", i);
		CU_ASSERT_TRUE_FATAL(sy_ws_scopes_member_add(s, LM, key, user, &changed));
		snprintf(key, sizeof key, "project-%d", i);
		CU_ASSERT_TRUE_FATAL(sy_ws_scopes_load_link(s, PL, key, "T"));
	}
	CU_ASSERT_EQUAL(sy_ws_scopes_member_count(s), 20000);
	CU_ASSERT_EQUAL(sy_ws_scopes_link_count(s), 20000);
	CU_ASSERT_EQUAL(sy_ws_scopes_dirty_count(s), 5000);
	size_t n;
	const char *const *u = sy_ws_scopes_users(s, LM, "list-7", &n);
	CU_ASSERT_EQUAL(n, 4);
	CU_ASSERT_STRING_EQUAL(u[0], "user-10007");
	CU_ASSERT_STRING_EQUAL(u[3], "user-7");
	CU_ASSERT_STRING_EQUAL(sy_ws_scopes_link(s, PL, "project-19999"), "T");
	(void)sy_ws_scopes_link_keys(s, PL, "T", &n);
	CU_ASSERT_EQUAL(n, 20000);
	/* A key longer than the lookup's stack buffer. */
	char long_key[600];
	memset(long_key, 'k', sizeof long_key - 1);
	long_key[sizeof long_key - 1] = '\0';
	CU_ASSERT_TRUE(sy_ws_scopes_member_add(s, LM, long_key, "zed", &changed));
	CU_ASSERT_STRING_EQUAL(literal(s, LM, long_key), "{\"zed\"}");
	sy_ws_scopes_forget_mirror(s);
	CU_ASSERT_PTR_NULL(sy_ws_scopes_link(s, PL, "project-1"));
	sy_ws_scopes_free(s);
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"tables, members, links, readers and dirt", test_members},
	        {"many keys", test_many},
	        {NULL, NULL},
	};
	sy_test_add_suite("walsync_scopes", tests);
	return sy_test_run();
}
