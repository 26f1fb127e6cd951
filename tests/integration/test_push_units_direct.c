/* SPDX-License-Identifier: BSD-2-Clause */
/* test_push_units.pgt, 12: what synchro_push reads and writes without a statement. The ledger
 * rows written through the table and index access methods (src/pg/ledger_insert.c) are the
 * rows an INSERT writes: every index entry (amcheck's heapallindexed), the CHECK rules
 * (VALIDATE CONSTRAINT), the defaults' values, the epoch's message; a ledger table an operator
 * changed (an INSERT trigger, a column with a default, a dropped column) is still written as
 * an INSERT would write it; and a unit's row read (src/pg/push_row_read.c) sees what its
 * statement would see under row-level security and after a grant changed, in the session
 * that read the table before. */
#include "push_units_suite.h"

#define B_DIRECT  "b0000000-0000-4000-8000-00000000d001"
#define B_TRIGGER "b0000000-0000-4000-8000-00000000d002"
#define B_COLUMN  "b0000000-0000-4000-8000-00000000d003"
#define B_DROPPED "b0000000-0000-4000-8000-00000000d004"

/* Every entry of the ledger's btree indexes and every heap row agree (amcheck). */
static void ledger_indexes_intact(void)
{
	static const char *const indexes[] = {"synchro.batches_pkey", "synchro.mutations_pkey",
	                                      "synchro.mutations_batch", "synchro.clients_pkey"};
	for (size_t i = 0; i < sizeof indexes / sizeof indexes[0]; i++) {
		const char *p[] = {indexes[i]};
		char *v = pgt_value(db, "SELECT bt_index_check($1::regclass, true)::text", 1, p);
		CU_ASSERT_PTR_NOT_NULL(v);
		free(v);
	}
}

static long long batch_count(const char *batch, const char *sql)
{
	const char *p[] = {batch};
	return pgt_int(db, sql, 1, p);
}

/* A push of two fresh inserts and one insert over a live row (a conflict, with its code),
 * in batch; the batch's mutation rows are counted. */
static void push_three(const char *batch, const char *prefix)
{
	ukey live, a, b;
	char v[160];
	fresh_key(&live, prefix);
	fresh_key(&a, prefix);
	fresh_key(&b, prefix);
	make_row("u_kill", &live, "{\"val\":\"live\"}", v);
	char ids[3][SY_UUID_LEN + 1];
	mspec ms[3] = {
	        {.table = "u_kill", .pk = a.json, .op = "insert", .cols = "{\"val\":\"a\"}"},
	        {.table = "u_kill", .pk = live.json, .op = "insert", .cols = "{\"val\":\"x\"}"},
	        {.table = "u_kill", .pk = b.json, .op = "insert", .cols = "{\"val\":\"b\"}"},
	};
	rspec rs = {.batch = batch};
	char *json = build(&rs, ms, 3, ids);
	result *r = push_on(app, json);
	expect_200(r);
	CU_ASSERT_EQUAL(r->applied, 2);
	/* The stored response is the one answered: the exact replay answers the same bytes. */
	result *again = push_on(app, json);
	expect_200(again);
	CU_ASSERT_TRUE(again->raw.replay);
	CU_ASSERT_TRUE(again->raw.len == r->raw.len &&
	               memcmp(again->raw.body, r->raw.body, r->raw.len) == 0);
	result_free(again);
	result_free(r);
	free(json);
	CU_ASSERT_EQUAL(batch_count(batch, "SELECT count(*) FROM synchro.mutations"
	                                   " WHERE batch_id = $1::uuid"),
	                3);
	CU_ASSERT_EQUAL(batch_count(batch,
	                            "SELECT count(*) FROM synchro.mutations"
	                            " WHERE batch_id = $1::uuid AND code = 'row_already_exists'"
	                            "   AND status = 'conflict'"),
	                1);
}

void test_ledger_rows_direct(void)
{
	pgt_exec(db, "CREATE EXTENSION IF NOT EXISTS amcheck");
	pgt_exec(db, "SELECT pg_create_logical_replication_slot('u_ledger', 'test_decoding')");
	long long e0 = epoch();
	push_three(B_DIRECT, "direct");
	CU_ASSERT_EQUAL(epoch(), e0 + 2); /* make_row's push and this one */
	/* Each advance is announced to walsync as clients_accepted_epoch announces it. */
	char *got = pgt_value(db,
	                      "SELECT string_agg(data, '|' ORDER BY lsn) FROM"
	                      " pg_logical_slot_get_changes('u_ledger', NULL, NULL)"
	                      " WHERE data LIKE 'message:%prefix: synchro-epoch,%'",
	                      0, NULL);
	char *want =
	        pgt_value(db,
	                  "SELECT string_agg('message: transactional: 1 prefix: synchro-epoch,"
	                  " sz: ' || octet_length(j) || ' content:' || j, '|' ORDER BY e) FROM"
	                  " (SELECT e, json_build_object('client_id', client_id, 'epoch', e)::text"
	                  "  AS j FROM synchro.clients, generate_series(accepted_write_epoch - 1,"
	                  "  accepted_write_epoch) e WHERE client_id = '" CA1 "') s",
	                  0, NULL);
	CU_ASSERT_STRING_EQUAL(got ? got : "-", want ? want : "");
	if (got == NULL || want == NULL || strcmp(got, want) != 0)
		fprintf(stderr, "epoch messages:\n%s\nwant:\n%s\n", got ? got : "-",
		        want ? want : "-");
	free(got);
	free(want);
	pgt_exec(db, "SELECT pg_drop_replication_slot('u_ledger')");
	/* The defaults an INSERT would have taken: now() of the push's transaction for the
	 * batch's created_at and every mutation row's completed_at; completed_at of the batch
	 * at or after it (clock_timestamp()). */
	CU_ASSERT_EQUAL(
	        batch_count(B_DIRECT,
	                    "SELECT count(*) FROM synchro.batches b JOIN synchro.mutations m"
	                    "  USING (user_id, client_id, batch_id)"
	                    " WHERE b.batch_id = $1::uuid AND m.completed_at = b.created_at"
	                    "   AND b.completed_at >= b.created_at AND b.state = 'complete'"
	                    "   AND b.http_status = 200 AND b.response IS NOT NULL"),
	        3);
	ledger_indexes_intact();
	pgt_exec(db, "BEGIN");
	pgt_exec(db, "ALTER TABLE synchro.batches VALIDATE CONSTRAINT batches_row_rules");
	pgt_exec(db, "ALTER TABLE synchro.mutations VALIDATE CONSTRAINT mutations_row_rules");
	pgt_exec(db, "ROLLBACK");
	/* An index scan finds the rows (the entries point at them). */
	pgt_exec(db, "SET enable_seqscan = off");
	CU_ASSERT_EQUAL(batch_count(B_DIRECT, "SELECT count(*) FROM synchro.batches"
	                                      " WHERE user_id = 'alice' AND client_id = '" CA1 "'"
	                                      "   AND batch_id = $1::uuid"),
	                1);
	pgt_exec(db, "RESET enable_seqscan");
}

void test_ledger_operator_changes(void)
{
	/* An operator's INSERT triggers on both ledger tables fire for a push's rows. */
	pgt_exec(db, "CREATE TABLE public.u_ledger_audit (tab text NOT NULL, batch uuid NOT NULL)");
	pgt_exec(db, "GRANT INSERT ON public.u_ledger_audit TO synchro_owner");
	pgt_exec(db, "CREATE FUNCTION public.u_ledger_audit() RETURNS trigger LANGUAGE plpgsql AS"
	             " $$BEGIN INSERT INTO public.u_ledger_audit VALUES (TG_TABLE_NAME,"
	             " NEW.batch_id); RETURN NULL; END$$");
	pgt_exec(db, "CREATE TRIGGER u_audit AFTER INSERT ON synchro.batches FOR EACH ROW"
	             " EXECUTE FUNCTION public.u_ledger_audit()");
	pgt_exec(db, "CREATE TRIGGER u_audit AFTER INSERT ON synchro.mutations FOR EACH ROW"
	             " EXECUTE FUNCTION public.u_ledger_audit()");
	push_three(B_TRIGGER, "trig");
	CU_ASSERT_EQUAL(batch_count(B_TRIGGER, "SELECT count(*) FROM public.u_ledger_audit"
	                                       " WHERE tab = 'batches' AND batch = $1::uuid"),
	                1);
	CU_ASSERT_EQUAL(batch_count(B_TRIGGER, "SELECT count(*) FROM public.u_ledger_audit"
	                                       " WHERE tab = 'mutations' AND batch = $1::uuid"),
	                3);
	pgt_exec(db, "DROP TRIGGER u_audit ON synchro.batches");
	pgt_exec(db, "DROP TRIGGER u_audit ON synchro.mutations");
	pgt_exec(db, "DROP FUNCTION public.u_ledger_audit()");
	pgt_exec(db, "DROP TABLE public.u_ledger_audit");

	/* A column the module does not know gets its default. */
	pgt_exec(db, "ALTER TABLE synchro.batches ADD COLUMN u_note text");
	pgt_exec(db, "ALTER TABLE synchro.batches ALTER COLUMN u_note SET DEFAULT 'noted'");
	push_three(B_COLUMN, "col");
	CU_ASSERT_EQUAL(batch_count(B_COLUMN, "SELECT count(*) FROM synchro.batches"
	                                      " WHERE batch_id = $1::uuid AND u_note = 'noted'"),
	                1);
	/* Dropped, it leaves a dropped attribute behind: the rows are written around it. */
	pgt_exec(db, "ALTER TABLE synchro.batches DROP COLUMN u_note");
	push_three(B_DROPPED, "drop");
	CU_ASSERT_EQUAL(batch_count(B_DROPPED, "SELECT count(*) FROM synchro.batches"
	                                       " WHERE batch_id = $1::uuid AND state = 'complete'"),
	                1);
	ledger_indexes_intact();
}

/* A restrictive SELECT policy hides a row from synchro_owner: the unit's re-read of its own
 * insert finds a live fence without its row, an operational failure (503, nothing kept), as
 * the statement "SELECT ... FROM u_kill WHERE id = $1" under that policy would make it. */
void test_row_read_security(void)
{
	ukey k;
	fresh_key(&k, "rls");
	char ids[1][SY_UUID_LEN + 1];
	mspec m = {.table = "u_kill", .pk = k.json, .op = "insert", .cols = "{\"val\":\"hidden\"}"};
	pgt_exec(db, "CREATE POLICY u_all ON u_kill USING (true) WITH CHECK (true)");
	pgt_exec(db, "CREATE POLICY u_hide ON u_kill AS RESTRICTIVE FOR SELECT"
	             " USING (val IS DISTINCT FROM 'hidden')");
	pgt_exec(db, "ALTER TABLE u_kill ENABLE ROW LEVEL SECURITY");
	char *json = build(NULL, &m, 1, ids);
	result *r = push_on(app, json);
	expect_error(r, SY_ERR_TEMPORARY_UNAVAILABLE);
	result_free(r);
	no_ledger(json, ids, 1);
	absent("u_kill", k.id);
	/* The same push with the policy gone is applied. */
	pgt_exec(db, "ALTER TABLE u_kill DISABLE ROW LEVEL SECURITY");
	pgt_exec(db, "DROP POLICY u_hide ON u_kill");
	pgt_exec(db, "DROP POLICY u_all ON u_kill");
	r = push_on(app, json);
	expect_200(r);
	CU_ASSERT_EQUAL(r->applied, 1);
	result_free(r);
	free(json);
}

/* The row reader decides once per table and session how it reads (push_row_read.c): a
 * grant changed after this session read u_kill directly changes the next read as it would
 * change its statement's. SELECT revoked from synchro_owner: the unit's read is refused, an
 * operational failure (503, nothing kept); granted again: applied. */
void test_row_read_after_grant(void)
{
	ukey a, b;
	fresh_key(&a, "grant");
	fresh_key(&b, "grant");
	char ids[1][SY_UUID_LEN + 1];
	mspec ma = {.table = "u_kill", .pk = a.json, .op = "insert", .cols = "{\"val\":\"a\"}"};
	mspec mb = {.table = "u_kill", .pk = b.json, .op = "insert", .cols = "{\"val\":\"b\"}"};
	char *json = build(NULL, &ma, 1, ids);
	result *r = push_on(app, json);
	expect_200(r);
	CU_ASSERT_EQUAL(r->applied, 1);
	result_free(r);
	free(json);
	pgt_exec(db, "REVOKE SELECT ON u_kill FROM synchro_owner");
	json = build(NULL, &mb, 1, ids);
	r = push_on(app, json);
	expect_error(r, SY_ERR_TEMPORARY_UNAVAILABLE);
	result_free(r);
	no_ledger(json, ids, 1);
	absent("u_kill", b.id);
	pgt_exec(db, "GRANT SELECT ON u_kill TO synchro_owner");
	r = push_on(app, json);
	expect_200(r);
	CU_ASSERT_EQUAL(r->applied, 1);
	result_free(r);
	free(json);
}
