/* SPDX-License-Identifier: BSD-2-Clause */
/* Membership scopes in the manifest: one- and two-hop paths, every refusal naming its member
 * path, and manifests without members keeping their canonical bytes and hash. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/manifest.h"
#include "testutil.h"

/* Test JSON is written with ' for " to stay readable; no case needs a real apostrophe. */
static char *dq(const char *s)
{
	char *d = strdup(s);
	for (char *p = d; p != NULL && *p != '\0'; p++)
		if (*p == '\'')
			*p = '"';
	return d;
}

static sy_manifest *parse_dq(const char *s, sy_error *err)
{
	char *text = dq(s);
	sy_manifest *m = sy_manifest_parse(text, strlen(text), err);
	free(text);
	return m;
}

#define PK   "'pk':{'field_id':'id','column':'id','type':'uuid'}"
#define HARD "'delete':{'mode':'hard'}"
#define FIELD(id, col, type, n, w)                                                                 \
	"{'field_id':'" id "','column':'" col "','type':'" type "','nullable':" n ",'writable':" w \
	"}"
/* todo(id, list_id, title, owner, done): list_id is the hop column of every one-hop case. */
#define TODO_FIELDS                                                                                \
	FIELD("list", "list_id", "uuid", "false", "true")                                          \
	"," FIELD("title", "title", "text", "false",                                               \
	          "true") "," FIELD("owner", "owner", "text", "false",                             \
	                            "false") "," FIELD("done", "done", "bool", "false", "true")
#define TODO(policy)                                                                               \
	"{'tables':[{'table_id':'todo','relation':'todo'," PK ",'fields':[" TODO_FIELDS "]," HARD  \
	",'policy':" policy "}]}"
#define HOP(col, rel, key) "{'column':'" col "','relation':'" rel "','key':'" key "'}"
#define LISTS              HOP("list_id", "lists", "id")
#define MEMBERS(hops, rel, match, user)                                                            \
	"'members':{'hops':[" hops "],'relation':'" rel "','match':'" match "','user':'" user "'}"
#define LIST_MEMBERS MEMBERS(LISTS, "list_members", "list_id", "user_id")
#define RW_MEMBERS   "'read':'members','write':'members'"

/* tasks of projects of teams: project_id (int64) -> projects.id, projects.team_id -> teams.id. */
#define TASKS(policy)                                                                              \
	"{'tables':[{'table_id':'tasks','relation':'app.tasks','pk':{'field_id':'id','column':'"   \
	"id',"                                                                                     \
	"'type':'int64'},'fields':[" FIELD("project", "project_id", "int64", "false",              \
	                                   "true") "," FIELD("title", "title", "text", "false",    \
	                                                     "true") "]," HARD ",'policy':" policy \
	                                                             "}]}"
#define TEAM_HOPS HOP("project_id", "app.projects", "id") "," HOP("team_id", "app.teams", "id")

static sy_manifest *parse_ok(const char *json)
{
	sy_error err;
	sy_error_clear(&err);
	sy_manifest *m = parse_dq(json, &err);
	if (m == NULL)
		fprintf(stderr, "\nrefused: %s\n  %s\n", err.message, json);
	CU_ASSERT_EQUAL(err.code, SY_ERR_NONE);
	return m;
}

static void test_one_hop(void)
{
	sy_manifest *m = parse_ok(TODO("{" RW_MEMBERS ",'owner_field':'owner'," LIST_MEMBERS "}"));
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	const sy_table *t = &m->tables[0];
	CU_ASSERT_EQUAL(t->read, SY_POLICY_MEMBERS);
	CU_ASSERT_EQUAL(t->write, SY_POLICY_MEMBERS);
	CU_ASSERT_STRING_EQUAL(t->owner_field, "owner");
	const sy_members *s = t->members;
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(s->hop_count, 1);
	CU_ASSERT_STRING_EQUAL(s->hops[0].column, "list_id");
	CU_ASSERT_STRING_EQUAL(s->hops[0].relation, "lists");
	CU_ASSERT_STRING_EQUAL(s->hops[0].key, "id");
	CU_ASSERT_STRING_EQUAL(s->relation, "list_members");
	CU_ASSERT_STRING_EQUAL(s->match, "list_id");
	CU_ASSERT_STRING_EQUAL(s->user, "user_id");
	CU_ASSERT_PTR_EQUAL(s->field, sy_table_field(t, "list", 4));
	/* The owner field stays server-set; the hop column stays writable (a move). */
	CU_ASSERT_FALSE(sy_field_writable(t, sy_table_field(t, "owner", 5)));
	CU_ASSERT_TRUE(sy_field_writable(t, s->field));
	/* Computed outside the code under test (Python's json with sorted keys, SHA-256). */
	CU_ASSERT_STRING_EQUAL(m->hash,
	                       "1872ec6bd19bcfff35dc4068ee32b60e2f74a734d871ad32f84d58d1be151618");
	sy_manifest_free(m);
}

static void test_two_hops(void)
{
	sy_manifest *m = parse_ok(TASKS("{" RW_MEMBERS "," MEMBERS(TEAM_HOPS, "app.team_members",
	                                                           "team_id", "user_id") "}"));
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	const sy_table *t = &m->tables[0];
	CU_ASSERT_PTR_NULL(t->owner_field);
	const sy_members *s = t->members;
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(s->hop_count, 2);
	CU_ASSERT_STRING_EQUAL(s->hops[0].column, "project_id");
	CU_ASSERT_STRING_EQUAL(s->hops[0].relation, "app.projects");
	CU_ASSERT_STRING_EQUAL(s->hops[1].column, "team_id");
	CU_ASSERT_STRING_EQUAL(s->hops[1].relation, "app.teams");
	CU_ASSERT_STRING_EQUAL(s->hops[1].key, "id");
	CU_ASSERT_STRING_EQUAL(s->relation, "app.team_members");
	CU_ASSERT_PTR_EQUAL(s->field, sy_table_field(t, "project", 7));
	sy_manifest_free(m);
}

/* The other combinations the rules allow. */
static void test_valid_combinations(void)
{
	static const char *const ok[] = {
	        /* read by members, written by the owner only */
	        TODO("{'read':'members','write':'owner','owner_field':'owner'," LIST_MEMBERS "}"),
	        /* read by members, written by nobody, with and without an owner */
	        TODO("{'read':'members','write':'none'," LIST_MEMBERS "}"),
	        TODO("{'read':'members','write':'none','owner_field':'owner'," LIST_MEMBERS "}"),
	        /* members writing, no owner field */
	        TODO("{" RW_MEMBERS "," LIST_MEMBERS "}"),
	        /* a text hop column; the membership relation in another schema */
	        "{'tables':[{'table_id':'t','relation':'t'," PK
	        ",'fields':[" FIELD("g", "grp", "text", "true",
	                            "true") "]," HARD ",'policy':{" RW_MEMBERS
	                                    "," MEMBERS(HOP("grp", "s.groups", "name"),
	                                                "s.grp_users", "grp", "login") "}}]}",
	        /* an int32 hop column, the same relation names in another schema */
	        "{'tables':[{'table_id':'t','relation':'a.t'," PK ",'fields':[" FIELD(
	                "g", "g", "int32", "false", "false") "]," HARD ",'policy':{" RW_MEMBERS
	                                                     "," MEMBERS(HOP("g", "b.t", "id"), "t",
	                                                                 "g", "u") "}}]}",
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		sy_manifest *m = parse_ok(ok[i]);
		CU_ASSERT_PTR_NOT_NULL(m);
		if (m != NULL) {
			CU_ASSERT_PTR_NOT_NULL(m->tables[0].members);
		}
		sy_manifest_free(m);
	}
}

/* Manifests without members: the same bytes and hash as before membership scopes. */
static void test_unchanged_without_members(void)
{
	/* Computed outside the code under test (Python's json with sorted keys, SHA-256). */
	static const char jcs[] =
	        "{'tables':[{'delete':{'mode':'hard'},'fields':[{'column':'title','field_id':'"
	        "title',"
	        "'nullable':false,'type':'text','writable':true},{'column':'owner','field_id':'"
	        "owner',"
	        "'nullable':false,'type':'text','writable':false}],'pk':{'column':'id','field_id':"
	        "'id','type':'uuid'},'policy':{'owner_field':'owner','read':'owner','write':'owner'"
	        "},"
	        "'relation':'app.todo','table_id':'todo'},{'delete':{'column':'gone','mode':'soft'}"
	        ","
	        "'fields':[{'column':'name','field_id':'name','nullable':true,'type':'text',"
	        "'writable':true}],'pk':{'column':'id','field_id':'id','type':'int64'},'policy':{"
	        "'read':'all','write':'none'},'relation':'tag','table_id':'tag'}]}";
	sy_manifest *m =
	        parse_ok("{'tables':[{'table_id':'todo','relation':'app.todo'," PK
	                 ",'fields':[" FIELD("title", "title", "text", "false", "true") "," FIELD(
	                         "owner", "owner", "text", "false",
	                         "false") "]," HARD ",'policy':{'read':'owner','write':"
	                                  "'owner','owner_field':'owner'}},{'table_id':"
	                                  "'tag','relation':'tag','pk':{'field_id':'id',"
	                                  "'column':'id','type':'int64'},'fields':[" FIELD(
	                                          "name", "name", "text", "true",
	                                          "true") "],'delete':{'mode':'soft',"
	                                                  "'column':'gone'},'policy':{"
	                                                  "'write':'none','read':'all'}}]}");
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	char *want = dq(jcs);
	CU_ASSERT_STRING_EQUAL(m->canonical, want);
	CU_ASSERT_EQUAL(m->canonical_len, strlen(want));
	CU_ASSERT_STRING_EQUAL(m->hash,
	                       "2f5f31447f8116bc02145f92454660fa676d329cdbda90b14a28f86b4beba62c");
	CU_ASSERT_PTR_NULL(m->tables[0].members);
	CU_ASSERT_PTR_NULL(m->tables[1].members);
	free(want);
	sy_manifest_free(m);
}

#define P "tables[0].policy"
#define M P ".members"

static void test_refused(void)
{
	static const struct {
		const char *json, *message;
	} cases[] = {
	        /* more than two hops */
	        {TODO("{" RW_MEMBERS "," MEMBERS(
	                 LISTS "," HOP("org_id", "orgs", "id") "," HOP("region", "regions", "id"),
	                 "m", "k", "u") "}"),
	         M ".hops[2]: at most two hops"},
	        {TODO("{" RW_MEMBERS "," MEMBERS("", "m", "k", "u") "}"),
	         M ".hops: at least one hop"},
	        {TODO("{" RW_MEMBERS
	              ",'members':{'hops':{},'relation':'m','match':'k','user':'u'}}"),
	         M ".hops: expected array, got object"},
	        /* cycles: back to the synced relation, a hop repeated, the membership relation on
	         * the path */
	        {TODO("{" RW_MEMBERS "," MEMBERS(HOP("list_id", "todo", "id"), "m", "k", "u") "}"),
	         M ".hops[0].relation: cycle: relation 'todo' is already on the membership path"},
	        {TODO("{" RW_MEMBERS
	              "," MEMBERS(LISTS "," HOP("parent", "lists", "id"), "m", "k", "u") "}"),
	         M ".hops[1].relation: cycle: relation 'lists' is already on the membership path"},
	        {TODO("{" RW_MEMBERS "," MEMBERS(LISTS, "lists", "id", "owner") "}"),
	         M ".relation: cycle: relation 'lists' is already on the membership path"},
	        {TODO("{" RW_MEMBERS "," MEMBERS(LISTS, "todo", "list_id", "owner") "}"),
	         M ".relation: cycle: relation 'todo' is already on the membership path"},
	        /* members missing, or where no policy is members */
	        {TODO("{" RW_MEMBERS "}"), P ".members: required when read or write is 'members'"},
	        {TODO("{'read':'members','write':'none'}"),
	         P ".members: required when read or write is 'members'"},
	        {TODO("{'read':'all','write':'none'," LIST_MEMBERS "}"),
	         P ".members: only allowed when read or write is 'members'"},
	        {TODO("{'read':'owner','write':'owner','owner_field':'owner'," LIST_MEMBERS "}"),
	         P ".members: only allowed when read or write is 'members'"},
	        /* write members needs read members; read members refuses write all */
	        {TODO("{'read':'owner','write':'members','owner_field':'owner'," LIST_MEMBERS "}"),
	         P ".write: 'members' needs read 'members'"},
	        {TODO("{'read':'all','write':'members'," LIST_MEMBERS "}"),
	         P ".write: 'members' needs read 'members'"},
	        {TODO("{'read':'members','write':'all'," LIST_MEMBERS "}"),
	         P ".write: 'all' is refused when read is 'members' (members, owner, none)"},
	        {TODO("{'read':'members','write':'owner'," LIST_MEMBERS "}"),
	         P ".owner_field: required when read or write is 'owner'"},
	        {TODO("{'read':'members','write':'members','owner_field':'done'," LIST_MEMBERS "}"),
	         P ".owner_field: field 'done' must have type text"},
	        {TODO("{'read':'members','write':'nobody'}"),
	         P ".write: unknown policy 'nobody' (owner, all, none, members)"},
	        /* hop 1's column is a non-pk manifest field of a key type */
	        {TODO("{" RW_MEMBERS "," MEMBERS(HOP("list", "lists", "id"), "m", "k", "u") "}"),
	         M ".hops[0].column: no field of the table has column 'list'"},
	        {TODO("{" RW_MEMBERS "," MEMBERS(HOP("id", "lists", "id"), "m", "k", "u") "}"),
	         M ".hops[0].column: 'id' is the primary key column"},
	        {TODO("{" RW_MEMBERS "," MEMBERS(HOP("done", "lists", "id"), "m", "k", "u") "}"),
	         M ".hops[0].column: field 'done' has type bool (uuid, int64, int32, text)"},
	        /* bad identifiers */
	        {TODO("{" RW_MEMBERS "," MEMBERS(HOP("List_id", "lists", "id"), "m", "k", "u") "}"),
	         M
	         ".hops[0].column: invalid column 'List_id' (lowercase SQL identifier, at most 63 "
	         "bytes)"},
	        {TODO("{" RW_MEMBERS "," MEMBERS(HOP("list_id", "a.b.c", "id"), "m", "k", "u") "}"),
	         M
	         ".hops[0].relation: invalid relation 'a.b.c' (name or schema.name, lowercase SQL "
	         "identifiers)"},
	        {TODO("{" RW_MEMBERS
	              "," MEMBERS(HOP("list_id", "lists", "i d"), "m", "k", "u") "}"),
	         M
	         ".hops[0].key: invalid column 'i d' (lowercase SQL identifier, at most 63 bytes)"},
	        {TODO("{" RW_MEMBERS
	              "," MEMBERS(LISTS "," HOP("team-id", "teams", "id"), "m", "k", "u") "}"),
	         M
	         ".hops[1].column: invalid column 'team-id' (lowercase SQL identifier, at most 63 "
	         "bytes)"},
	        {TODO("{" RW_MEMBERS "," MEMBERS(LISTS, "list members", "k", "u") "}"),
	         M ".relation: invalid relation 'list members' (name or schema.name, lowercase SQL "
	           "identifiers)"},
	        {TODO("{" RW_MEMBERS "," MEMBERS(LISTS, "m", "", "u") "}"),
	         M ".match: invalid column '' (lowercase SQL identifier, at most 63 bytes)"},
	        {TODO("{" RW_MEMBERS "," MEMBERS(LISTS, "m", "k", "1user") "}"),
	         M ".user: invalid column '1user' (lowercase SQL identifier, at most 63 bytes)"},
	        /* exact members */
	        {TODO("{" RW_MEMBERS ",'members':{'hops':[" LISTS "],'relation':'m','match':'k'}}"),
	         M ": missing member 'user'"},
	        {TODO("{" RW_MEMBERS ",'members':{'hops':[" LISTS "],'relation':'m','match':'k',"
	              "'user':'u','where':'true'}}"),
	         M ": unknown member 'where'"},
	        {TODO("{" RW_MEMBERS
	              "," MEMBERS("{'column':'list_id','relation':'lists'}", "m", "k", "u") "}"),
	         M ".hops[0]: missing member 'key'"},
	        {TODO("{" RW_MEMBERS "," MEMBERS("'lists'", "m", "k", "u") "}"),
	         M ".hops[0]: expected object, got string"},
	        {TODO("{" RW_MEMBERS ",'members':'list_members'}"),
	         M ": expected object, got string"},
	        {TASKS("{" RW_MEMBERS "," MEMBERS(HOP("project_id", "app.projects", "id") "," HOP(
	                                                  "team_id", "app.projects", "id"),
	                                          "app.team_members", "team_id", "user_id") "}"),
	         M ".hops[1].relation: cycle: relation 'app.projects' is already on the membership "
	           "path"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		sy_error err;
		sy_error_clear(&err);
		sy_manifest *m = parse_dq(cases[i].json, &err);
		char *want = dq(cases[i].message);
		CU_ASSERT_PTR_NULL(m);
		CU_ASSERT_EQUAL(err.code, SY_ERR_INVALID_REQUEST);
		if (strcmp(err.message, want) != 0)
			fprintf(stderr, "\ncase %zu:\n  got  %s\n  want %s\n", i, err.message,
			        want);
		CU_ASSERT_STRING_EQUAL(err.message, want);
		free(want);
		sy_manifest_free(m);
	}
}

/* Each allocation of a two-hop manifest's parse fails in turn: NOMEM, never a leak. */
static void test_alloc_failures(void)
{
	char *text = dq(TASKS("{" RW_MEMBERS "," MEMBERS(TEAM_HOPS, "app.team_members", "team_id",
	                                                 "user_id") "}"));
	long i;
	for (i = 0; i < 100000; i++) {
		sy_error err;
		sy_error_clear(&err);
		sy_test_alloc_install(i, false);
		sy_manifest *m = sy_manifest_parse(text, strlen(text), &err);
		bool done = m != NULL;
		if (m != NULL) {
			CU_ASSERT_EQUAL(m->tables[0].members->hop_count, 2);
		} else {
			CU_ASSERT_EQUAL(err.code, SY_ERR_NOMEM);
		}
		sy_manifest_free(m);
		long live = sy_test_alloc.live;
		sy_test_alloc_remove();
		CU_ASSERT_EQUAL(live, 0);
		if (done || live != 0 || err.code != SY_ERR_NOMEM)
			break;
	}
	/* Past the path's nine strings and its struct at least. */
	CU_ASSERT(i > 10 && i < 100000);
	free(text);
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"one hop", test_one_hop},
	        {"two hops", test_two_hops},
	        {"valid combinations", test_valid_combinations},
	        {"without members: bytes and hash unchanged", test_unchanged_without_members},
	        {"refusals name the member path", test_refused},
	        {"allocation failures", test_alloc_failures},
	        CU_TEST_INFO_NULL,
	};
	sy_test_add_suite("manifest members", tests);
	return sy_test_run();
}
