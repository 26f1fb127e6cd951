/* SPDX-License-Identifier: BSD-2-Clause */
/* The version fence's write of synchro.row_fences when another transaction holds or writes
 * the same fence, against a real PostgreSQL: the fence writes its row through the table and
 * index access methods, and must wait and refuse exactly as the upsert statement it replaced
 * (INSERT ... ON CONFLICT DO UPDATE ... WHERE), which the fence still runs when the fence
 * table is not as the migrations left it. Each case runs twice, with the table as migrated
 * (the direct write) and with a statement trigger on it (the statement), and must give the
 * same outcome, the one the statement gives:
 * - a fence locked FOR UPDATE (as a push locks it) and then changed: a READ COMMITTED write
 *   waits, then writes over the new fence; a REPEATABLE READ one is refused (40001);
 * - a fence inserted by a transaction in progress: the write waits for it, then updates
 *   the committed fence, or inserts its own when that transaction rolls back;
 * - a push's insert over a fence another transaction just deleted: refused (SY006).
 * A push sets synchro.no_resurrection; the tests set it as the push does. */
#include "config.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pgtest.h"
#include "store/migrations.h"
#include "testutil.h"

static PGconn *db;    /* the writer */
static PGconn *other; /* the transaction in its way */
static PGconn *mon;   /* watches the writer (a transaction sees one view of the activity) */

/* Waits until the writer waits on a lock; false after 10 s. */
static bool writer_waits(void)
{
	char sql[160];
	snprintf(
	        sql, sizeof sql,
	        "SELECT count(*) FROM pg_stat_activity WHERE pid = %d AND wait_event_type = 'Lock'",
	        PQbackendPID(db));
	for (int i = 0; i < 2000; i++) {
		if (pgt_int(mon, sql, 0, NULL) == 1)
			return true;
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return false;
}

/* The outcome of the writer's statement sent before: "ok" or "SQLSTATE message". */
static char *writer_outcome(void)
{
	char *out = NULL;
	PGresult *r;
	while ((r = PQgetResult(db)) != NULL) {
		if (out == NULL) {
			if (PQresultStatus(r) == PGRES_COMMAND_OK ||
			    PQresultStatus(r) == PGRES_TUPLES_OK) {
				out = strdup("ok");
			} else {
				const char *st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
				const char *m = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
				size_t n = strlen(st ? st : "") + strlen(m ? m : "") + 2;
				out = malloc(n);
				if (out != NULL)
					snprintf(out, n, "%s %s", st ? st : "", m ? m : "");
			}
		}
		PQclear(r);
	}
	return out != NULL ? out : strdup("no result");
}

/* The writer's statement (after prep, and begin on the writer's side), while other runs
 * hold (its transaction open, its lock taken), then end (COMMIT or ROLLBACK): the
 * statement's outcome and the fence of pk afterwards (state, and whether its version is the
 * one other wrote). */
static char *race(const char *prep, const char *begin, const char *hold, const char *write,
                  const char *end, const char *pk)
{
	pgt_must(db, prep);
	pgt_must(db, begin);
	pgt_must(other, "BEGIN");
	pgt_must(other, hold);
	CU_ASSERT_FATAL(PQsendQuery(db, write) == 1);
	CU_ASSERT(writer_waits());
	pgt_must(other, end);
	char *outcome = writer_outcome();
	pgt_exec(db, "COMMIT");
	const char *p[] = {pk};
	char *fence = pgt_value(db,
	                        "SELECT coalesce(max(state || ' ' || (version = 'other')), 'none')"
	                        " FROM synchro.row_fences WHERE table_id = 'lk' AND pk = $1",
	                        1, p);
	size_t n = strlen(outcome) + strlen(fence ? fence : "") + 4;
	char *out = malloc(n);
	if (out != NULL)
		snprintf(out, n, "%s / %s", outcome, fence ? fence : "");
	free(outcome);
	free(fence);
	return out;
}

/* Each case with the direct write and with the statement, and what both must give. */
static void both_ways(const char *prep, const char *begin, const char *hold, const char *write,
                      const char *end, const char *pk, const char *want)
{
	char *direct = race(prep, begin, hold, write, end, pk);
	pgt_must(db, "CREATE FUNCTION lk_noop() RETURNS trigger LANGUAGE plpgsql AS"
	             " 'BEGIN RETURN NULL; END';"
	             "CREATE TRIGGER lk_statement AFTER INSERT ON synchro.row_fences"
	             " FOR EACH STATEMENT EXECUTE FUNCTION lk_noop()");
	char *statement = race(prep, begin, hold, write, end, pk);
	pgt_must(db, "DROP TRIGGER lk_statement ON synchro.row_fences; DROP FUNCTION lk_noop()");
	CU_ASSERT_STRING_EQUAL(direct ? direct : "", want);
	CU_ASSERT_STRING_EQUAL(statement ? statement : "", want);
	if (strcmp(direct ? direct : "", want) != 0 ||
	    strcmp(statement ? statement : "", want) != 0)
		fprintf(stderr, "\n  direct:    %s\n  statement: %s\n  want:      %s\n", direct,
		        statement, want);
	free(direct);
	free(statement);
}

static const char fence_lock[] =
        "SELECT 1 FROM synchro.row_fences WHERE table_id = 'lk' AND pk = 'a' FOR UPDATE;"
        "UPDATE synchro.row_fences SET version = 'other' WHERE table_id = 'lk' AND pk = 'a'";

static const char a_live[] = "DELETE FROM lk; INSERT INTO lk VALUES ('a', 'alice')";
static const char b_none[] =
        "DELETE FROM lk; DELETE FROM synchro.row_fences WHERE table_id = 'lk' AND pk = 'b'";
static const char rr[] = "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM lk";

static void test_locked_fence(void)
{
	both_ways(a_live, "BEGIN", fence_lock, "UPDATE lk SET owner = 'bob' WHERE id = 'a'",
	          "COMMIT", "a", "ok / live false");
	both_ways(a_live, rr, fence_lock, "UPDATE lk SET owner = 'carol' WHERE id = 'a'", "COMMIT",
	          "a", "40001 could not serialize access due to concurrent update / live true");
	both_ways(a_live, "BEGIN", fence_lock, "DELETE FROM lk WHERE id = 'a'", "ROLLBACK", "a",
	          "ok / deleted false");
}

static void test_inserted_fence(void)
{
	static const char insert[] =
	        "INSERT INTO synchro.row_fences (table_id, pk, state, version, source_xid)"
	        " VALUES ('lk', 'b', 'deleted', 'other', pg_current_xact_id())";
	const char *write = "INSERT INTO lk VALUES ('b', 'alice')";
	both_ways(b_none, "BEGIN", insert, write, "COMMIT", "b", "ok / live false");
	both_ways(b_none, "BEGIN", insert, write, "ROLLBACK", "b", "ok / live false");
	both_ways(b_none, rr, insert, write, "COMMIT", "b",
	          "40001 could not serialize access due to concurrent update / deleted true");
	/* a push's insert over the deleted fence that commits first */
	both_ways(b_none, "BEGIN; SELECT set_config('synchro.no_resurrection', 'on', true)", insert,
	          write, "COMMIT", "b",
	          "SY006 synchro: row \"b\" of synced table \"lk\" is deleted; a push cannot "
	          "insert it again / deleted true");
}

int main(void)
{
	pgt_require_fixture();
	db = pgt_connect(NULL);
	other = pgt_connect(NULL);
	mon = pgt_connect(NULL);
	pgt_must(db, "SET client_min_messages = warning");
	if (pgt_migrate(db, sy_sql_migrations, sy_sql_migration_count) < 0) {
		fprintf(stderr, "the migrations did not apply\n");
		return 99;
	}
	pgt_must(db, "CREATE TABLE lk (id text PRIMARY KEY, owner text);"
	             "SELECT synchro.install_fence_trigger('lk', 'lk', 'id', NULL, 'owner')");
	static const CU_TestInfo tests[] = {
	        {"a fence locked and changed by another transaction", test_locked_fence},
	        {"a fence inserted by another transaction", test_inserted_fence},
	        {NULL, NULL},
	};
	sy_test_add_suite("version fence locks", tests);
	int status = sy_test_run();
	PQfinish(other);
	PQfinish(mon);
	PQfinish(db);
	return status;
}
