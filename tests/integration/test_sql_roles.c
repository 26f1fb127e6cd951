/* SPDX-License-Identifier: BSD-2-Clause */
/* test_sql.pgt: the least grants of synchro_app and synchro_walsync, irreversible retirement
 * and the ledger deletion it gates, immutable ledger rows and manifests, the backfill of rows
 * that predate the trigger, the trigger's configuration, contrib/example against its manifest. */
#include "config.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pgtest.h"
#include "store/migrations.h"
#include "testutil.h"
#include "sql_suite.h"

static void insert_client(PGconn *c, const char *client_id, const char *user)
{
	const char *p[] = {client_id, user};
	PQclear(pgt_query(c,
	                  "INSERT INTO synchro.clients (client_id, user_id, generation)"
	                  " VALUES ($1, $2, 1)",
	                  2, p));
}

#define BATCH_COLS                                                                                 \
	"(user_id, client_id, batch_id, protocol_version, client_generation, schema_version,"      \
	" schema_hash, fp_algorithm, fp_version, fp_domain, fingerprint, atomic, state,"           \
	" http_status, response, completed_at)"
#define BATCH_VALUES(user, client, batch, state, status, response, completed)                      \
	"('" user "', '" client "', '" batch "', 3, 1, 1, '" HASH64 "', 'sha256', 1,"              \
	" 'synchro:v3:push-batch-fingerprint:v1', " FP32 ", false, '" state "', " status           \
	", " response ", " completed ")"
#define MUTATION_INSERT(user, client, mutation, batch)                                             \
	"INSERT INTO synchro.mutations (user_id, client_id, mutation_id, fp_algorithm,"            \
	" fp_version, fp_domain, fingerprint, batch_id, ordinal, authored_schema_version,"         \
	" authored_schema_hash, submitted_schema_version, submitted_schema_hash, table_id,"        \
	" pk, operation, status, code, outcome, outcome_schema_version, outcome_schema_hash)"      \
	" VALUES ('" user "', '" client "', '" mutation "', 'sha256', 1,"                          \
	" 'synchro:v3:push-mutation-fingerprint:v1', " FP32 ", '" batch "', 0, 1, '" HASH64        \
	"', 1, '" HASH64 "', 'item', '1', 'insert', 'applied', NULL, '{}', 1, '" HASH64 "')"

#define APP_CLIENT "c0000000-0000-4000-8000-0000000000a1"
#define APP_BATCH  "b0000000-0000-4000-8000-0000000000a1"
#define APP_BATCH2 "b0000000-0000-4000-8000-0000000000a2"
#define APP_BATCH3 "b0000000-0000-4000-8000-0000000000a3"
#define APP_MUT    "a0000000-0000-4000-8000-0000000000a1"
#define APP_MUT2   "a0000000-0000-4000-8000-0000000000a2"

/*
 * The responders' role (migration 13): it registers clients and reads, but writes no
 * ledger, no fence and no application table; every push write is synchro_push's, as
 * synchro_owner. The ledger rules hold for the owner too: append-only, a claim
 * completes once.
 */
void test_app_role(void)
{
	pgt_exec(db, "CREATE ROLE test_app LOGIN IN ROLE synchro_app");
	/* what schema publish grants */
	pgt_exec(db, "GRANT SELECT ON todo, item TO synchro_app");
	pgt_exec(db, "GRANT SELECT, INSERT, UPDATE, DELETE ON todo, item TO synchro_owner");
	PGconn *app = pgt_connect("user=test_app");
	PGconn *own = pgt_connect(NULL);
	pgt_exec(own, "SET ROLE synchro_owner");
	discard();

	insert_client(app, APP_CLIENT, "alice");
	pgt_exec(app, "UPDATE synchro.clients SET generation = 2, last_seen_at = now()"
	              " WHERE client_id = '" APP_CLIENT "'");
	pgt_fails(app,
	          "UPDATE synchro.clients SET accepted_write_epoch = 2"
	          " WHERE client_id = '" APP_CLIENT "'",
	          "42501");
	pgt_exec(own, "UPDATE synchro.clients SET accepted_write_epoch = 2"
	              " WHERE client_id = '" APP_CLIENT "'");
	pgt_fails(app,
	          "UPDATE synchro.clients SET materialized_write_epoch = 2"
	          " WHERE client_id = '" APP_CLIENT "'",
	          "42501");
	pgt_exec(app, "SELECT * FROM synchro.client_progress");
	pgt_fails(app, "INSERT INTO synchro.client_progress VALUES ('" APP_CLIENT "', 2)", "42501");
	pgt_fails(app, "DELETE FROM synchro.clients", "42501");

	/* No ledger write but through synchro_push. */
	pgt_fails(app,
	          "INSERT INTO synchro.batches " BATCH_COLS " VALUES " BATCH_VALUES(
	                  "alice", APP_CLIENT, APP_BATCH, "claimed", "NULL", "NULL", "NULL"),
	          "42501");
	pgt_fails(app, MUTATION_INSERT("alice", APP_CLIENT, APP_MUT, APP_BATCH), "42501");
	pgt_fails(app, "UPDATE synchro.batches SET state = 'complete'", "42501");
	/* Claim, then complete with the canonical response (as the owner). */
	pgt_exec(own, "INSERT INTO synchro.batches " BATCH_COLS " VALUES " BATCH_VALUES(
	                      "alice", APP_CLIENT, APP_BATCH, "claimed", "NULL", "NULL", "NULL"));
	pgt_exec(own, MUTATION_INSERT("alice", APP_CLIENT, APP_MUT, APP_BATCH));
	pgt_exec(own, "UPDATE synchro.batches SET state = 'complete', http_status = 200,"
	              " response = '{\"ok\":1}', completed_at = now()"
	              " WHERE batch_id = '" APP_BATCH "'");
	/* A mutation row names a batch of its own client (migration 11, per statement). */
	pgt_fails(own, MUTATION_INSERT("alice", APP_CLIENT, APP_MUT2, APP_BATCH2), "23503");
	pgt_fails(own, MUTATION_INSERT("bob", APP_CLIENT, APP_MUT2, APP_BATCH), "23503");
	/* Checked for every batch a statement names, not only its first row's (migration 12). */
	pgt_fails(own,
	          MUTATION_INSERT("alice", APP_CLIENT, APP_MUT2,
	                          APP_BATCH) ", ('alice', '" APP_CLIENT "', gen_random_uuid(),"
	                                     " 'sha256', 1,"
	                                     " 'synchro:v3:push-mutation-fingerprint:v1', " FP32
	                                     ", '" APP_BATCH2 "', 1, 1, '" HASH64 "', 1, '" HASH64
	                                     "', 'item', '2', 'insert',"
	                                     " 'applied', NULL, '{}', 1, '" HASH64 "')",
	          "23503");
	/* ... and that batch stays while they do, even for a retired client (rolled back). */
	pgt_exec(db, "BEGIN");
	pgt_exec(db, "INSERT INTO synchro.retirements (client_id, user_id, retirement_id)"
	             " VALUES ('" APP_CLIENT "', 'alice', gen_random_uuid())");
	pgt_fails(db, "DELETE FROM synchro.batches WHERE batch_id = '" APP_BATCH "'", "23503");
	pgt_exec(db, "ROLLBACK");
	/* Complete is final, for any column. */
	pgt_fails(own, "UPDATE synchro.batches SET response = 'x' WHERE batch_id = '" APP_BATCH "'",
	          "SY002");
	pgt_fails(own,
	          "UPDATE synchro.batches SET state = 'claimed', http_status = NULL,"
	          " response = NULL, completed_at = NULL WHERE batch_id = '" APP_BATCH "'",
	          "SY002");
	/* Identity and fingerprint columns are not even granted. */
	pgt_fails(app,
	          "UPDATE synchro.batches SET fingerprint = fingerprint"
	          " WHERE batch_id = '" APP_BATCH "'",
	          "42501");
	/* A complete row without its response cannot exist. */
	pgt_fails(own,
	          "INSERT INTO synchro.batches " BATCH_COLS " VALUES " BATCH_VALUES(
	                  "alice", APP_CLIENT, APP_BATCH2, "complete", "200", "NULL", "now()"),
	          "23514");
	pgt_exec(own, "INSERT INTO synchro.batches " BATCH_COLS " VALUES " BATCH_VALUES(
	                      "alice", APP_CLIENT, APP_BATCH3, "claimed", "NULL", "NULL", "NULL"));
	pgt_fails(own,
	          "UPDATE synchro.batches SET state = 'complete', http_status = 200,"
	          " completed_at = now() WHERE batch_id = '" APP_BATCH3 "'",
	          "23514");
	/* Append-only: no DELETE, TRUNCATE or UPDATE of the mutation ledger. */
	pgt_fails(app, "DELETE FROM synchro.batches", "42501");
	pgt_fails(app, "TRUNCATE synchro.batches", "42501");
	pgt_fails(app, "DELETE FROM synchro.mutations", "42501");
	pgt_fails(app, "TRUNCATE synchro.mutations", "42501");
	pgt_fails(app, "UPDATE synchro.mutations SET code = NULL", "42501");
	pgt_fails(app, "DELETE FROM synchro.retirements", "42501");
	pgt_fails(app, "UPDATE synchro.retirements SET retired_at = now()", "42501");
	/* Fences are the trigger's alone. */
	pgt_fails(app,
	          "INSERT INTO synchro.row_fences (table_id, pk, state, version, source_xid)"
	          " VALUES ('item', '999', 'live', 'v', pg_current_xact_id())",
	          "42501");
	pgt_fails(app, "UPDATE synchro.row_fences SET version = 'v'", "42501");
	pgt_fails(app, "DELETE FROM synchro.row_fences", "42501");
	pgt_fails(app,
	          "INSERT INTO synchro.changelog (commit_lsn, ordinal, table_id, pk, version,"
	          " state) VALUES ('0/1', 0, 'item', '1', 'v', 'live')",
	          "42501");
	pgt_fails(app, "UPDATE synchro.writer_lease SET writer_id = 'x'", "42501");
	pgt_fails(app,
	          "INSERT INTO synchro.schema_versions (version, hash, manifest)"
	          " VALUES (99, '" HASH64 "', '{}')",
	          "42501");
	pgt_fails(app, "CREATE TABLE synchro.mine (x int)", "42501");
	pgt_fails(app, "SELECT synchro.install_fence_trigger('item', 'x', 'id', '', '')", "42501");
	pgt_fails(app, "SELECT synchro.backfill_fences('item', 'x', 'id', '')", "42501");
	/* The compare-and-swap locks fences inside synchro_push now (migration 13). */
	pgt_fails(app, "SELECT * FROM synchro.lock_fence('item', '2')", "42501");
	/* Application tables: read, never written but through synchro_push. */
	pgt_exec(app, "SELECT count(*) FROM item");
	pgt_fails(app, "INSERT INTO item (id, label) VALUES (21, 'app')", "42501");
	pgt_fails(app, "UPDATE item SET qty = 1", "42501");
	pgt_fails(app, "DELETE FROM item", "42501");
	/* The owner's writes to synced tables move fences, naming the push settings. */
	pgt_exec(own, "BEGIN");
	pgt_exec(own, "SELECT set_config('synchro.mutation_id', '" APP_MUT "', true),"
	              "       set_config('synchro.client_id', '" APP_CLIENT "', true),"
	              "       set_config('synchro.user_id', 'alice', true)");
	pgt_exec(own, "INSERT INTO item (id, label) VALUES (20, 'app')");
	pgt_exec(own, "COMMIT");
	fence f = get_fence("item", "20");
	CU_ASSERT_STRING_EQUAL(f.state, "live");
	CU_ASSERT_STRING_EQUAL(f.mutation_id, APP_MUT);
	CU_ASSERT_STRING_EQUAL(f.user_id, "alice");
	CU_ASSERT(drain(msgs, MAX_MESSAGES) == 1);
	PQfinish(own);
	PQfinish(app);

	/* walsync: the changelog and the lease, the materialized epoch, the fence LSN. */
	pgt_exec(db, "CREATE ROLE test_walsync LOGIN REPLICATION IN ROLE synchro_walsync");
	PGconn *ws = pgt_connect("user=test_walsync");
	pgt_exec(ws, "INSERT INTO synchro.changelog (commit_lsn, ordinal, table_id, pk, version,"
	             " state) VALUES ('0/1', 0, 'item', '20', 'v', 'live')");
	pgt_fails(ws, "DELETE FROM synchro.changelog", "42501");
	pgt_fails(ws, "UPDATE synchro.changelog SET version = 'w'", "42501");
	pgt_exec(ws, "INSERT INTO synchro.writer_lease (role, writer_id, writer_epoch,"
	             " fencing_token, lease_until) VALUES ('walsync', 'w1', 1,"
	             " gen_random_uuid(), now() + interval '30 s')");
	pgt_exec(ws, "UPDATE synchro.writer_lease SET heartbeat_at = now()");
	pgt_fails(ws, "DELETE FROM synchro.writer_lease", "42501");
	pgt_fails(ws,
	          "UPDATE synchro.clients SET materialized_write_epoch = 2"
	          " WHERE client_id = '" APP_CLIENT "'",
	          "42501");
	pgt_exec(ws, "INSERT INTO synchro.client_progress VALUES ('" APP_CLIENT "', 2)");
	pgt_exec(ws, "UPDATE synchro.client_progress SET materialized_write_epoch = 3"
	             " WHERE client_id = '" APP_CLIENT "'");
	pgt_fails(ws, "UPDATE synchro.client_progress SET materialized_write_epoch = 2", "SY002");
	pgt_fails(ws, "DELETE FROM synchro.client_progress", "42501");
	pgt_fails(ws, "UPDATE synchro.clients SET generation = 5", "42501");
	pgt_exec(ws, "UPDATE synchro.row_fences SET source_lsn = '0/1'"
	             " WHERE table_id = 'item' AND pk = '20'");
	pgt_fails(ws, "UPDATE synchro.row_fences SET version = 'v'", "42501");
	pgt_fails(ws, "SELECT * FROM synchro.batches", "42501");
	pgt_fails(ws, "SELECT * FROM synchro.mutations", "42501");
	PQfinish(ws);
}

#define RET_CLIENT  "c0000000-0000-4000-8000-0000000000b1"
#define KEEP_CLIENT "c0000000-0000-4000-8000-0000000000b2"
#define RET_BATCH   "b0000000-0000-4000-8000-0000000000b1"
#define RET_BATCH2  "b0000000-0000-4000-8000-0000000000b3"
#define KEEP_BATCH  "b0000000-0000-4000-8000-0000000000b2"
#define RET_MUT     "a0000000-0000-4000-8000-0000000000b1"

/* Retirement is permanent even for the owner; it alone makes ledger rows deletable. */
void test_retirement(void)
{
	insert_client(db, RET_CLIENT, "carol");
	insert_client(db, KEEP_CLIENT, "carol");
	pgt_exec(db, "INSERT INTO synchro.batches " BATCH_COLS " VALUES " BATCH_VALUES(
	                     "carol", RET_CLIENT, RET_BATCH, "complete", "200", "'r'", "now()"));
	pgt_exec(db, MUTATION_INSERT("carol", RET_CLIENT, RET_MUT, RET_BATCH));
	pgt_exec(db, "INSERT INTO synchro.batches " BATCH_COLS " VALUES " BATCH_VALUES(
	                     "carol", KEEP_CLIENT, KEEP_BATCH, "complete", "200", "'k'", "now()"));

	pgt_exec(db, "SET ROLE synchro_owner");
	/* No marker, no deletion. */
	pgt_fails(db, "DELETE FROM synchro.batches WHERE batch_id = '" KEEP_BATCH "'", "SY005");
	pgt_fails(db, "DELETE FROM synchro.mutations WHERE mutation_id = '" RET_MUT "'", "SY005");
	pgt_fails(db, "TRUNCATE synchro.batches CASCADE", "SY005");

	pgt_exec(db, "INSERT INTO synchro.retirements (client_id, user_id, retirement_id)"
	             " VALUES ('" RET_CLIENT "', 'carol', gen_random_uuid())");
	pgt_fails(db, "UPDATE synchro.retirements SET retired_at = now()", "SY003");
	pgt_fails(db, "DELETE FROM synchro.retirements", "SY003");
	pgt_fails(db, "TRUNCATE synchro.retirements", "SY005");
	/* Never registered again, never reconnected, no new batch. */
	pgt_fails(db,
	          "INSERT INTO synchro.clients (client_id, user_id) VALUES ('" RET_CLIENT "',"
	          " 'carol') ON CONFLICT DO NOTHING",
	          "SY004");
	pgt_fails(db,
	          "UPDATE synchro.clients SET generation = generation + 1"
	          " WHERE client_id = '" RET_CLIENT "'",
	          "SY004");
	pgt_fails(db,
	          "UPDATE synchro.clients SET accepted_write_epoch = accepted_write_epoch + 1"
	          " WHERE client_id = '" RET_CLIENT "'",
	          "SY004");
	pgt_fails(db,
	          "INSERT INTO synchro.batches " BATCH_COLS " VALUES " BATCH_VALUES(
	                  "carol", RET_CLIENT, RET_BATCH2, "claimed", "NULL", "NULL", "NULL"),
	          "SY004");
	/* walsync may still catch up with writes accepted before the retirement. */
	pgt_exec(db, "INSERT INTO synchro.client_progress VALUES ('" RET_CLIENT "', 2)");
	/* Identity never changes; counters never go back. */
	pgt_fails(db,
	          "UPDATE synchro.clients SET user_id = 'dave' WHERE client_id = '" KEEP_CLIENT "'",
	          "SY002");
	pgt_fails(db,
	          "UPDATE synchro.clients SET generation = 0 WHERE client_id = '" KEEP_CLIENT "'",
	          "SY002");
	pgt_exec(db,
	         "UPDATE synchro.clients SET generation = 2 WHERE client_id = '" KEEP_CLIENT "'");
	/* The retired client's ledger may now go (mutations first: they name their batch). */
	CU_ASSERT_EQUAL(
	        pgt_int(db,
	                "WITH d AS (DELETE FROM synchro.mutations WHERE client_id = '" RET_CLIENT
	                "' RETURNING 1) SELECT count(*) FROM d",
	                0, NULL),
	        1);
	CU_ASSERT_EQUAL(
	        pgt_int(db,
	                "WITH d AS (DELETE FROM synchro.batches WHERE client_id = '" RET_CLIENT
	                "' RETURNING 1) SELECT count(*) FROM d",
	                0, NULL),
	        1);
	pgt_fails(db, "DELETE FROM synchro.batches WHERE client_id = '" KEEP_CLIENT "'", "SY005");
	pgt_exec(db, "RESET ROLE");
	CU_ASSERT_EQUAL(
	        pgt_int(db,
	                "SELECT count(*) FROM synchro.retirements WHERE client_id = '" RET_CLIENT
	                "'",
	                0, NULL),
	        1);
}

/* The owner cannot rewrite history either: complete batches, mutations, manifests. */
void test_ledger_immutable(void)
{
	pgt_exec(db, "SET ROLE synchro_owner");
	pgt_fails(db,
	          "UPDATE synchro.batches SET http_status = 500 WHERE batch_id = '" KEEP_BATCH "'",
	          "SY002");
	pgt_fails(db, "UPDATE synchro.mutations SET code = NULL", "SY002");
	pgt_exec(db, "INSERT INTO synchro.schema_versions (version, hash, manifest)"
	             " VALUES (1, '" HASH64 "', '{\"tables\":[]}')");
	pgt_fails(db, "UPDATE synchro.schema_versions SET manifest = '{}'", "SY002");
	pgt_fails(db, "DELETE FROM synchro.schema_versions", "SY002");
	pgt_fails(db, "TRUNCATE synchro.schema_versions", "SY005");
	pgt_fails(db, "TRUNCATE synchro.row_fences", "SY005");
	pgt_fails(db, "TRUNCATE synchro.mutations", "SY005");
	pgt_fails(db,
	          "INSERT INTO synchro.schema_versions (version, hash, manifest)"
	          " VALUES (2, 'ABC', '{}')",
	          "23514");
	pgt_exec(db, "RESET ROLE");
}

/* Fences for rows that predate the trigger, once each, with one message each. */
void test_backfill(void)
{
	pgt_exec(db, "CREATE TABLE pre (id text PRIMARY KEY, who text, gone timestamptz)");
	pgt_exec(db, "INSERT INTO pre VALUES ('a', 'alice', NULL), ('b', 'bob', now()),"
	             " ('c', NULL, NULL)");
	discard();
	CU_ASSERT_EQUAL(pgt_int(db,
	                        "SELECT synchro.backfill_fences('pre', 'pre', 'id', 'gone',"
	                        " 'who')",
	                        0, NULL),
	                3);
	CU_ASSERT_STRING_EQUAL(get_fence("pre", "a").state, "live");
	CU_ASSERT_STRING_EQUAL(get_fence("pre", "b").state, "deleted");
	CU_ASSERT_TRUE(is_hex32(get_fence("pre", "c").version));
	int n = drain(msgs, MAX_MESSAGES);
	CU_ASSERT_EQUAL_FATAL(n, 3);
	int owners = 0;
	for (int i = 0; i < n; i++) {
		CU_ASSERT_STRING_EQUAL(msgs[i].table_id, "pre");
		CU_ASSERT_STRING_EQUAL(msgs[i].version, get_fence("pre", msgs[i].pk).version);
		CU_ASSERT_STRING_EQUAL(msgs[i].state, get_fence("pre", msgs[i].pk).state);
		CU_ASSERT_STRING_EQUAL(msgs[i].mutation_id, "<null>");
		CU_ASSERT_STRING_EQUAL(msgs[i].owner_before, "<null>");
		CU_ASSERT_EQUAL(msgs[i].nkeys, 9);
		if (strcmp(msgs[i].pk, "a") == 0 && strcmp(msgs[i].owner_after, "alice") == 0)
			owners++;
	}
	CU_ASSERT_EQUAL(owners, 1);
	/* The contract's four-argument form; nothing left to backfill. */
	CU_ASSERT_EQUAL(
	        pgt_int(db, "SELECT synchro.backfill_fences('pre', 'pre', 'id', 'gone')", 0, NULL),
	        0);
	CU_ASSERT_EQUAL(drain(msgs, MAX_MESSAGES), 0);
	pgt_exec(db, "SELECT synchro.install_fence_trigger('pre', 'pre', 'id', 'gone', 'who')");
	fence before = get_fence("pre", "a");
	pgt_exec(db, "UPDATE pre SET who = 'ann' WHERE id = 'a'");
	CU_ASSERT_STRING_NOT_EQUAL(get_fence("pre", "a").version, before.version);
	n = drain(msgs, MAX_MESSAGES);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_STRING_EQUAL(msgs[0].owner_before, "alice");
	CU_ASSERT_STRING_EQUAL(msgs[0].owner_after, "ann");
}

/* install_fence_trigger refuses configurations whose fences could be wrong, reinstalls in
 * place, and synced tables refuse TRUNCATE (it would skip the fences). */
void test_fence_config(void)
{
	pgt_exec(db, "CREATE TABLE bad (k integer, n numeric PRIMARY KEY, d date, t text UNIQUE)");
	pgt_fails(db, "SELECT synchro.install_fence_trigger('bad', 'bad', 'k', '', '')", "SY010");
	pgt_fails(db, "SELECT synchro.install_fence_trigger('bad', 'bad', 'n', '', '')", "SY010");
	pgt_fails(db, "SELECT synchro.install_fence_trigger('bad', 'bad', 'nope', '', '')",
	          "SY010");
	/* t is unique but nullable. */
	pgt_fails(db, "SELECT synchro.install_fence_trigger('bad', 'bad', 't', '', '')", "SY010");
	pgt_fails(db, "SELECT synchro.install_fence_trigger('item', 'item', 'id', 'due', '')",
	          "SY010");
	pgt_fails(db, "SELECT synchro.install_fence_trigger('item', 'item', 'id', '', 'nope')",
	          "SY010");
	pgt_fails(db, "SELECT synchro.install_fence_trigger('item', '', 'id', '', '')", "SY010");
	pgt_fails(db,
	          "SELECT synchro.install_fence_trigger('synchro.clients', 'c', 'client_id',"
	          " '', '')",
	          "SY010");
	pgt_exec(db, "SELECT synchro.install_fence_trigger('todo', 'todo', 'id', '', 'owner')");
	CU_ASSERT_EQUAL(pgt_int(db,
	                        "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'todo'::regclass"
	                        " AND NOT tgisinternal",
	                        0, NULL),
	                2);
	pgt_fails(db, "TRUNCATE todo", "SY005");
	pgt_fails(db, "TRUNCATE item", "SY005");
	/* The trigger function refuses to run outside its installed shape. */
	pgt_exec(db, "CREATE TABLE loose (id int PRIMARY KEY)");
	pgt_exec(db, "CREATE TRIGGER f AFTER INSERT ON loose FOR EACH ROW"
	             " EXECUTE FUNCTION synchro.version_fence()");
	pgt_fails(db, "INSERT INTO loose VALUES (1)", "SY010");
}

/* contrib/example: the manifest is the test vectors' copy, byte for byte, and every field
 * maps to a column of its portable type and nullability; no other column exists. */
void test_example(void)
{
	char path[4096];
	size_t len = 0, vlen = 0;
	snprintf(path, sizeof path, "%s/contrib/example/manifest.json", sy_test_src_dir());
	char *manifest = sy_test_read_file(path, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(manifest);
	snprintf(path, sizeof path, "%s/tests/vectors/manifests/example.json", sy_test_src_dir());
	char *vector = sy_test_read_file(path, &vlen);
	if (vector != NULL) {
		CU_ASSERT_EQUAL(len, vlen);
		CU_ASSERT(len == vlen && memcmp(manifest, vector, len) == 0);
	}
	free(vector);
	const char *p[] = {manifest};
	char *bad = pgt_value(
	        db,
	        "WITH t AS (SELECT jsonb_array_elements($1::jsonb -> 'tables') AS t),"
	        " f AS (SELECT t ->> 'relation' AS rel, f ->> 'column' AS col, f ->> 'type' AS typ,"
	        "              (f ->> 'nullable')::boolean AS nul"
	        "         FROM t, jsonb_array_elements(t -> 'fields') f"
	        "       UNION ALL SELECT t ->> 'relation', t -> 'pk' ->> 'column',"
	        "              t -> 'pk' ->> 'type', false FROM t),"
	        " m(typ, pg) AS (VALUES ('text', 'text'), ('int32', 'integer'),"
	        "   ('int64', 'bigint'), ('float64', 'double precision'), ('numeric', 'numeric'),"
	        "   ('bool', 'boolean'),"
	        "   ('timestamp', 'timestamp with time zone'), ('date', 'date'), ('uuid', 'uuid'),"
	        "   ('bytes', 'bytea'), ('json', 'jsonb')),"
	        " a AS (SELECT c.oid::regclass::text AS rel, a.attname::text AS col,"
	        "              format_type(a.atttypid, NULL) AS pg, a.attnotnull"
	        "         FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
	        "        WHERE c.oid IN ('public.todo'::regclass, 'public.item'::regclass,"
	        "                        'public.todo_list'::regclass, 'public.list_share'::regclass,"
	        "                        'public.list_leave'::regclass)"
	        "          AND a.attnum > 0 AND NOT a.attisdropped)"
	        "SELECT string_agg(coalesce(f.rel, 'public.' || a.rel) || '.' ||"
	        "                  coalesce(f.col, a.col), ', ')"
	        "  FROM f FULL JOIN a ON 'public.' || a.rel = f.rel AND a.col = f.col"
	        "  LEFT JOIN m ON m.typ = f.typ"
	        " WHERE f.col IS NULL OR a.col IS NULL OR m.pg IS DISTINCT FROM a.pg"
	        "    OR a.attnotnull = f.nul",
	        1, p);
	CU_ASSERT_PTR_NULL(bad);
	if (bad != NULL)
		fprintf(stderr, "manifest and schema.sql disagree on: %s\n", bad);
	free(bad);
	free(manifest);
}
