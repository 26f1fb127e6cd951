/* SPDX-License-Identifier: BSD-2-Clause */
/* test_walsync.pgt: membership scopes in commit order (migration 22). Application writes go
 * through the real triggers (the fence with its scope column, synchro_scope on the
 * membership and hop relations); walsync writes each change's readers, the entries of every
 * membership that comes or goes and every project that moves between teams, and the mirror
 * in the same transaction; the mirror survives a restart and a takeover; a row that leaves a
 * scope key before walsync reads it for a removal still reaches the removed user's delete;
 * membership and link messages forged by a role without privileges change nothing, and one
 * from before migration 23 still in the stream is believed. */
#include "config.h"

#include <CUnit/CUnit.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgtest.h"
#include "store/changelog.h"
#include "testutil.h"
#include "walsync_suite.h"

#define L1 "10000000-0000-4000-8000-000000000001"
#define L2 "10000000-0000-4000-8000-000000000002"

#define LM "public.list_members(list_id,user_id)"
#define TM "public.team_members(team_id,user_id)"
#define PL "public.projects.id->team_id"

static const char manifest_tail[] =
        ",{\"table_id\":\"ltodo\",\"relation\":\"public.ltodo\","
        "\"pk\":{\"field_id\":\"id\",\"column\":\"id\",\"type\":\"text\"},"
        "\"fields\":[{\"field_id\":\"list_id\",\"column\":\"list_id\",\"type\":\"uuid\","
        "\"nullable\":false,\"writable\":true},"
        "{\"field_id\":\"title\",\"column\":\"title\",\"type\":\"text\",\"nullable\":false,"
        "\"writable\":true},"
        "{\"field_id\":\"owner\",\"column\":\"owner\",\"type\":\"text\",\"nullable\":false,"
        "\"writable\":false}],"
        "\"delete\":{\"mode\":\"hard\"},"
        "\"policy\":{\"read\":\"members\",\"write\":\"members\",\"owner_field\":\"owner\","
        "\"members\":{\"hops\":[{\"column\":\"list_id\",\"relation\":\"public.lists\","
        "\"key\":\"id\"}],\"relation\":\"public.list_members\",\"match\":\"list_id\","
        "\"user\":\"user_id\"}}},"
        "{\"table_id\":\"tasks\",\"relation\":\"public.tasks\","
        "\"pk\":{\"field_id\":\"id\",\"column\":\"id\",\"type\":\"int64\"},"
        "\"fields\":[{\"field_id\":\"project_id\",\"column\":\"project_id\",\"type\":\"int64\","
        "\"nullable\":false,\"writable\":true},"
        "{\"field_id\":\"title\",\"column\":\"title\",\"type\":\"text\",\"nullable\":false,"
        "\"writable\":true}],"
        "\"delete\":{\"mode\":\"hard\"},"
        "\"policy\":{\"read\":\"members\",\"write\":\"none\","
        "\"members\":{\"hops\":[{\"column\":\"project_id\",\"relation\":\"public.projects\","
        "\"key\":\"id\"},{\"column\":\"team_id\",\"relation\":\"public.teams\",\"key\":\"id\"}],"
        "\"relation\":\"public.team_members\",\"match\":\"team_id\",\"user\":\"user_id\"}}}]}";

/* The example manifest (itself with two members-scoped tables) with two more, published
 * by synchroctl. */
static void publish(void)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/contrib/example/manifest.json", sy_test_src_dir());
	char *m = sy_test_read_file(path, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	char *end = strrchr(m, ']');
	CU_ASSERT_PTR_NOT_NULL_FATAL(end);
	*end = '\0';
	char out[600];
	snprintf(out, sizeof out, "%s/scopes.json", test_tmpdir());
	FILE *f = fopen(out, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fprintf(f, "%s%s\n", m, manifest_tail);
	fclose(f);
	free(m);
	char cmd[6000];
	snprintf(cmd, sizeof cmd, "'%s' schema publish '%s' >/dev/null", ctl_bin, out);
	CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
}

/* The triggers a publish of these tables installs (idempotent when it did). */
static void triggers(void)
{
	pgt_exec(db,
	         "SELECT synchro.install_fence_trigger('public.ltodo', 'ltodo', 'id', '', 'owner',"
	         "  'list_id');"
	         "SELECT synchro.install_fence_trigger('public.tasks', 'tasks', 'id', '', '',"
	         "  'project_id');"
	         "SELECT synchro.install_scope_trigger('public.list_members', ARRAY['member', '" LM
	         "', 'list_id', 'user_id']);"
	         "SELECT synchro.install_scope_trigger('public.team_members', ARRAY['member', '" TM
	         "', 'team_id', 'user_id']);"
	         "SELECT synchro.install_scope_trigger('public.projects', ARRAY['link', '" PL
	         "', 'id', 'team_id']);");
}

static int marker = 7000;

/* A write of a table outside the scopes, waited for: every earlier commit is in the
 * changelog. Its commit LSN, for the next step's rows. */
static char *sync_point(void)
{
	int id = marker++;
	char sql[128];
	snprintf(sql, sizeof sql, "INSERT INTO item (id) VALUES (%d)", id);
	pgt_exec(db, sql);
	CU_ASSERT(wait_true(WAIT_ROWS,
	                    "SELECT EXISTS (SELECT 1 FROM synchro.changelog"
	                    " WHERE table_id = 'item' AND pk = '%d')",
	                    id));
	return peek("SELECT max(commit_lsn)::text FROM synchro.changelog");
}

/* The entries of the scoped tables after from, in position order: table, pk, owners,
 * readers, 'm' for a message's entry or 's' for a scope change's, and whether the version is
 * the row's fence version now; one line each. */
static char *rows_since(const char *from)
{
	const char *p[] = {from};
	PGresult *r = pgt_query(
	        db,
	        "SELECT coalesce(string_agg(l.table_id || ' ' || l.pk || ' '"
	        "  || coalesce(l.owner_before, '-') || ' ' || coalesce(l.owner_after, '-') || ' '"
	        "  || coalesce(l.readers_before::text, '-') || ' '"
	        "  || coalesce(l.readers_after::text, '-') || ' '"
	        "  || CASE WHEN l.ordinal >= 1073741824 THEN 's' ELSE 'm' END"
	        "  || CASE WHEN l.version = f.version THEN '' ELSE ' old' END, E'\\n'"
	        "  ORDER BY l.commit_lsn, l.ordinal), '')"
	        " FROM synchro.changelog l JOIN synchro.row_fences f USING (table_id, pk)"
	        " WHERE l.commit_lsn > $1::pg_lsn AND l.table_id IN ('ltodo', 'tasks')",
	        1, p);
	char *v = r && PQntuples(r) == 1 ? strdup(PQgetvalue(r, 0, 0)) : strdup("?");
	PQclear(r);
	return v;
}

/* Runs the statements, waits until walsync wrote them, compares the entries. */
static void step(const char *sql, const char *want)
{
	char *from = sync_point();
	CU_ASSERT_PTR_NOT_NULL_FATAL(from);
	pgt_exec(db, sql);
	free(sync_point());
	char *got = rows_since(from);
	if (strcmp(got, want) != 0)
		fprintf(stderr, "after: %s\n  got:\n%s\n  want:\n%s\n", sql, got, want);
	CU_ASSERT_STRING_EQUAL(got, want);
	free(got);
	free(from);
}

static char *mirror(void)
{
	char *v = peek("SELECT string_agg(x, ' ' ORDER BY x) FROM ("
	               " SELECT substr(scope, 8, 4) || ':' || right(key, 2) || ':' || user_id AS x"
	               "   FROM synchro.scope_members"
	               " UNION ALL SELECT 'link:' || key || ':' || coalesce(target, '-')"
	               "   FROM synchro.scope_links) m");
	return v ? v : strdup("");
}

void test_scope_effects(void)
{
	for (int i = 0; i < nprocs; i++)
		if (procs[i].running) {
			signal_proc(procs[i].pid, SIGCONT);
			(void)stop_walsync(procs[i].pid);
		}
	pgt_exec(db, "CREATE TABLE public.lists (id uuid PRIMARY KEY, owner text NOT NULL);"
	             "CREATE TABLE public.list_members (list_id uuid REFERENCES public.lists,"
	             "  user_id text NOT NULL, PRIMARY KEY (list_id, user_id));"
	             "CREATE TABLE public.ltodo (id text PRIMARY KEY, list_id uuid NOT NULL,"
	             "  title text NOT NULL, owner text NOT NULL);"
	             "CREATE INDEX ON public.ltodo (list_id);"
	             "CREATE TABLE public.teams (id text PRIMARY KEY);"
	             "CREATE TABLE public.team_members (team_id text REFERENCES public.teams,"
	             "  user_id text NOT NULL, PRIMARY KEY (team_id, user_id));"
	             "CREATE TABLE public.projects (id bigint PRIMARY KEY,"
	             "  team_id text REFERENCES public.teams);"
	             "CREATE TABLE public.tasks (id bigint PRIMARY KEY, project_id bigint NOT NULL,"
	             "  title text NOT NULL);"
	             "CREATE INDEX ON public.tasks (project_id)");
	publish();
	triggers();
	/* Written while no walsync runs: the stream delivers them to the first one. */
	pgt_exec(db,
	         "INSERT INTO public.lists VALUES ('" L1 "', 'alice'), ('" L2 "', 'carol');"
	         "INSERT INTO public.list_members VALUES ('" L1 "', 'alice'), ('" L2 "', 'carol');"
	         "INSERT INTO public.ltodo VALUES ('t1', '" L1 "', 'one', 'alice'),"
	         "  ('t2', '" L1 "', 'two', 'alice');"
	         "INSERT INTO public.teams VALUES ('T1'), ('T2');"
	         "INSERT INTO public.team_members VALUES ('T1', 'dave'), ('T2', 'erin');"
	         "INSERT INTO public.projects VALUES (1, 'T1');"
	         "INSERT INTO public.tasks VALUES (1, 1, 'a'), (2, 1, 'b')");
	pid_t s1 = start_walsync("S1", NULL, NULL);
	CU_ASSERT_FATAL(wait_leader("S1") > 0);
	CU_ASSERT(wait_log("S1", "scope mirror: 4 members-scoped tables", WAIT_ROWS));

	/* alice shares L1 with bob: L1's rows at their current versions, for bob. */
	step("INSERT INTO public.list_members VALUES ('" L1 "', 'bob')",
	     "ltodo t1 alice alice {} {bob} s\n"
	     "ltodo t2 alice alice {} {bob} s");
	/* A change after the membership: both read it. */
	step("UPDATE public.ltodo SET title = 'uno' WHERE id = 't1'",
	     "ltodo t1 alice alice {alice,bob} {alice,bob} m");
	/* A to-do moved between lists. */
	step("UPDATE public.ltodo SET list_id = '" L2 "' WHERE id = 't2'",
	     "ltodo t2 alice alice {alice,bob} {carol} m");
	/* bob removed: a going for each row still in L1. */
	step("DELETE FROM public.list_members WHERE list_id = '" L1 "' AND user_id = 'bob'",
	     "ltodo t1 alice alice {bob} {} s");
	/* Two hops: a task's readers are its project's team's members. */
	step("UPDATE public.tasks SET title = 'A' WHERE id = 1", "tasks 1 - - {dave} {dave} m");
	/* A project moved between teams: every task of it. */
	step("UPDATE public.projects SET team_id = 'T2' WHERE id = 1",
	     "tasks 1 - - {dave} {erin} s\n"
	     "tasks 2 - - {dave} {erin} s");
	step("INSERT INTO public.team_members VALUES ('T2', 'frank')", "tasks 1 - - {} {frank} s\n"
	                                                               "tasks 2 - - {} {frank} s");
	/* A membership and a new row of its list in one transaction: the row's own entry,
	 * then the scope change's entries (the new row among them). */
	step("BEGIN; INSERT INTO public.list_members VALUES ('" L2 "', 'gina');"
	     "INSERT INTO public.ltodo VALUES ('t3', '" L2 "', 'three', 'carol'); COMMIT",
	     "ltodo t3 - carol {} {carol,gina} m\n"
	     "ltodo t2 alice alice {} {gina} s\n"
	     "ltodo t3 carol carol {} {gina} s");
	/* An update that changes neither column moves nobody. */
	step("UPDATE public.projects SET team_id = team_id WHERE id = 1", "");
	char *m = mirror();
	CU_ASSERT_STRING_EQUAL(m, "link:1:T2 list:01:alice list:02:carol list:02:gina "
	                          "team:T1:dave team:T2:erin team:T2:frank");
	free(m);

	/* A restart: the mirror comes from its tables. */
	CU_ASSERT_EQUAL(stop_walsync(s1), 0);
	pid_t s2 = start_walsync("S2", NULL, NULL);
	CU_ASSERT_FATAL(wait_leader("S2") > 0);
	CU_ASSERT(wait_log("S2", "scope mirror: 4 members-scoped tables, 6 memberships, 1 links",
	                   WAIT_ROWS));
	step("UPDATE public.ltodo SET title = 'one' WHERE id = 't1';"
	     "UPDATE public.tasks SET title = 'B' WHERE id = 2",
	     "ltodo t1 alice alice {alice} {alice} m\n"
	     "tasks 2 - - {erin,frank} {erin,frank} m");

	/* A takeover after kill -9: the new leader reads the mirror the old one wrote. */
	pid_t s3 = start_walsync("S3", NULL, NULL);
	CU_ASSERT(wait_log("S3", "standby: the writer lease is held by S2", WAIT_ROWS));
	signal_proc(s2, SIGKILL);
	(void)wait_exit(s2, 5000);
	CU_ASSERT_FATAL(wait_leader("S3") > 0);
	step("DELETE FROM public.list_members WHERE list_id = '" L2 "' AND user_id = 'carol'",
	     "ltodo t2 alice alice {carol} {} s\n"
	     "ltodo t3 carol carol {carol} {} s");
	step("UPDATE public.ltodo SET title = 'tres' WHERE id = 't3'",
	     "ltodo t3 carol carol {gina} {gina} m");
	m = mirror();
	CU_ASSERT_STRING_EQUAL(m, "link:1:T2 list:01:alice list:02:gina "
	                          "team:T1:dave team:T2:erin team:T2:frank");
	free(m);

	/* A removal, then a row moved out of that list, both committed before walsync reads the
	 * live table for the removal's entries: the moved row is not among them, so its own
	 * change counts the removed user among its readers before (gina gets its delete). The
	 * same for a project moved to another team while one of its tasks moves to another
	 * project. */
	char *from = sync_point();
	CU_ASSERT_EQUAL(stop_walsync(s3), 0);
	pgt_exec(db,
	         "DELETE FROM public.list_members WHERE list_id = '" L2 "' AND user_id = 'gina'");
	pgt_exec(db, "UPDATE public.ltodo SET list_id = '" L1 "' WHERE id = 't2'");
	pgt_exec(db, "INSERT INTO public.projects VALUES (2, 'T1')");
	pgt_exec(db, "UPDATE public.projects SET team_id = 'T1' WHERE id = 1");
	pgt_exec(db, "UPDATE public.tasks SET project_id = 2 WHERE id = 2");
	pid_t s4 = start_walsync("S4", NULL, NULL);
	CU_ASSERT_FATAL(wait_leader("S4") > 0);
	free(sync_point());
	char *got = rows_since(from);
	const char *want = "ltodo t3 carol carol {gina} {} s\n"
	                   "ltodo t2 alice alice {gina} {alice} m\n"
	                   "tasks 2 - - {} {dave} s\n"
	                   "tasks 1 - - {erin,frank} {dave} s\n"
	                   "tasks 2 - - {dave,erin,frank} {dave} m";
	if (strcmp(got, want) != 0)
		fprintf(stderr, "goings:\n  got:\n%s\n  want:\n%s\n", got, want);
	CU_ASSERT_STRING_EQUAL(got, want);
	free(got);
	free(from);

	/* A scope trigger no published manifest names (left by an earlier publish): its
	 * messages change no mirror and make no entry; the stream goes on. */
	pgt_exec(db, "CREATE TABLE public.other (k text, u text);"
	             "SELECT synchro.install_scope_trigger('public.other', ARRAY['member',"
	             " 'public.other(k,u)', 'k', 'u']);"
	             "INSERT INTO public.other VALUES ('" L1 "', 'mallory'), ('" L1 "', 'oscar')");
	char *p0 = sync_point();
	free(p0);
	CU_ASSERT_EQUAL(peek_int("SELECT count(*) FROM synchro.scope_members WHERE scope LIKE"
	                         " 'public.other%%' OR user_id IN ('mallory', 'oscar')"),
	                0);
	CU_ASSERT_EQUAL(peek_int("SELECT count(*) FROM synchro.changelog WHERE 'mallory' ="
	                         " ANY (readers_after) OR 'oscar' = ANY (readers_after)"),
	                0);

	/* Migration 23: a role without a single privilege forges alice's removal from L1 and a
	 * move of project 1 to T2, as the scope trigger's messages before it read. Neither
	 * changes the mirror or makes an entry; both are refused and counted; a genuine change
	 * after them is materialized as before. */
	pgt_exec(db, "DROP ROLE IF EXISTS mallory; CREATE ROLE mallory LOGIN");
	PGconn *mc = pgt_connect("user=mallory");
	char *before = mirror();
	char *from2 = sync_point();
	CU_ASSERT_PTR_NOT_NULL_FATAL(from2);
	pgt_exec(mc, "SELECT pg_logical_emit_message(true, 'synchro', '{\"kind\": \"member\","
	             " \"scope\": \"" LM "\", \"key_before\": \"" L1 "\","
	             " \"user_before\": \"alice\", \"key_after\": null,"
	             " \"user_after\": null}')");
	pgt_exec(mc, "SELECT pg_logical_emit_message(true, 'synchro', '{\"kind\": \"link\","
	             " \"scope\": \"" PL "\", \"key_before\": \"1\", \"to_before\": \"T1\","
	             " \"key_after\": \"1\", \"to_after\": \"T2\"}')");
	PQfinish(mc);
	free(sync_point());
	got = rows_since(from2);
	CU_ASSERT_STRING_EQUAL(got, "");
	free(got);
	m = mirror();
	CU_ASSERT_STRING_EQUAL(m, before);
	free(m);
	CU_ASSERT(wait_log("S4", "refused a membership or link message", WAIT_ROWS));
	step("UPDATE public.ltodo SET title = 'two' WHERE id = 't2'",
	     "ltodo t2 alice alice {alice} {alice} m");
	free(before);
	free(from2);
	pgt_exec(db, "DROP ROLE mallory");
	char *from3 = sync_point();
	CU_ASSERT_EQUAL(stop_walsync(s4), 0);

	/* An upgrade: a membership message the scope trigger emitted before migration 23 (the
	 * module on a database at 22), still in the stream when walsync starts after the
	 * migration recorded its position, is believed; a change after it comes as a row. */
	CU_ASSERT_PTR_NOT_NULL_FATAL(from3);
	pgt_exec(db, "SELECT pg_logical_emit_message(true, 'synchro', '{\"kind\": \"member\","
	             " \"scope\": \"" LM "\", \"key_after\": \"" L1 "\","
	             " \"key_before\": null, \"user_after\": \"zed\","
	             " \"user_before\": null}')");
	pgt_exec(db, "UPDATE synchro.stream_position"
	             " SET scope_messages_verified_from = pg_current_wal_insert_lsn()");
	pgt_exec(db,
	         "DELETE FROM public.list_members WHERE list_id = '" L1 "' AND user_id = 'alice'");
	pid_t s5 = start_walsync("S5", NULL, NULL);
	CU_ASSERT_FATAL(wait_leader("S5") > 0);
	free(sync_point());
	got = rows_since(from3);
	want = "ltodo t1 alice alice {} {zed} s\n"
	       "ltodo t2 alice alice {} {zed} s\n"
	       "ltodo t1 alice alice {alice} {} s\n"
	       "ltodo t2 alice alice {alice} {} s";
	if (strcmp(got, want) != 0)
		fprintf(stderr, "upgrade:\n  got:\n%s\n  want:\n%s\n", got, want);
	CU_ASSERT_STRING_EQUAL(got, want);
	free(got);
	free(from3);
	CU_ASSERT_EQUAL(stop_walsync(s5), 0);
}
