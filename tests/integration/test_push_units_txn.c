/* SPDX-License-Identifier: BSD-2-Clause */
/* test_push_units.pgt: the calling transaction (doc/contract.md#push-units: no
 * pending deferred event, the mode after a push), the trigger's authority, and one
 * subtransaction per unit: its modes, refusals and operational failures at a unit's end. */
#include "config.h"

#include <CUnit/CUnit.h>
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "pgtest.h"
#include "store/conn.h"
#include "store/migrations.h"
#include "store/push_call.h"
#include "store/schema.h"
#include "synchro/alloc.h"
#include "synchro/jcs.h"
#include "synchro/json.h"
#include "synchro/manifest.h"
#include "synchro/outcome.h"
#include "synchro/push.h"
#include "testutil.h"
#include "push_units_suite.h"
#include "push_request.h"

/* ---- 1. the calling transaction ---- */

/* In app's open transaction: synchro_push of json must fail with 25000 and leave nothing. */
static void push_refused_25000(const char *json, char (*ids)[SY_UUID_LEN + 1], size_t n)
{
	raw a = push_raw(app, ALICE, json, 5000);
	CU_ASSERT_FALSE(a.ok);
	CU_ASSERT_STRING_EQUAL(a.sqlstate, "25000");
	if (a.ok || strcmp(a.sqlstate, "25000") != 0)
		fprintf(stderr, "want 25000, got ok=%d status=%d %s %s\n", a.ok, a.status,
		        a.sqlstate, a.message);
	free(a.body);
	CU_ASSERT_EQUAL(PQtransactionStatus(app), PQTRANS_INERROR);
	pgt_exec(app, "ROLLBACK");
	no_ledger(json, ids, n);
}

void test_pending_event(void)
{
	ukey k;
	char ids[1][SY_UUID_LEN + 1];
	long long fired = seq_value("u_fired");

	/* a deferred constraint trigger's event: 25000; the event is never fired */
	fresh_key(&k, "who");
	mspec m = {.table = "u_who", .pk = k.json, .op = "insert", .cols = "{\"val\":\"p\"}"};
	char *json = build(NULL, &m, 1, ids);
	pgt_exec(app, "BEGIN");
	pgt_exec(app, "INSERT INTO u_pend_trig VALUES ('pend-1')");
	push_refused_25000(json, ids, 1);
	CU_ASSERT_EQUAL(seq_value("u_fired"), fired);
	absent("u_who", k.id);
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM u_pend_trig"), 0);

	/* refused under a savepoint: the event is still pending afterwards, and fires once
	 * when the caller asks for it */
	pgt_exec(app, "BEGIN");
	pgt_exec(app, "INSERT INTO u_pend_trig VALUES ('pend-2')");
	pgt_exec(app, "SAVEPOINT s");
	raw a = push_raw(app, ALICE, json, 5000);
	CU_ASSERT_FALSE(a.ok);
	CU_ASSERT_STRING_EQUAL(a.sqlstate, "25000");
	free(a.body);
	pgt_exec(app, "ROLLBACK TO SAVEPOINT s");
	CU_ASSERT_EQUAL(seq_value("u_fired"), fired);
	pgt_exec(app, "SET CONSTRAINTS ALL IMMEDIATE");
	CU_ASSERT_EQUAL(seq_value("u_fired"), fired + 1);
	fired++;
	/* no event is pending any more: the same call now runs (and commits with the caller) */
	a = push_raw(app, ALICE, json, 5000);
	result *r = read_answer(&a, json);
	expect_200(r);
	CU_ASSERT_FALSE(r->raw.replay);
	check(r, ids[0], "applied", NULL, true, true);
	result_free(r);
	pgt_exec(app, "ROLLBACK");
	no_ledger(json, ids, 1);
	absent("u_who", k.id);

	/* a pending FK check (DEFERRABLE INITIALLY DEFERRED) */
	pgt_exec(app, "BEGIN");
	pgt_exec(app, "INSERT INTO u_pend_fk VALUES ('pend-3', 'P-exists')");
	push_refused_25000(json, ids, 1);
	/* a DEFERRABLE INITIALLY IMMEDIATE trigger the caller deferred */
	pgt_exec(app, "BEGIN");
	pgt_exec(app, "SET CONSTRAINTS ALL DEFERRED");
	pgt_exec(app, "INSERT INTO u_pend_imm VALUES ('pend-4')");
	push_refused_25000(json, ids, 1);
	CU_ASSERT_EQUAL(seq_value("u_fired"), fired);

	/* a relation that got its deferrable trigger after this backend's first pushes */
	pgt_must(db, "CREATE TABLE u_pend_late (k text PRIMARY KEY);"
	             "GRANT SELECT, INSERT ON u_pend_late TO PUBLIC;"
	             "CREATE CONSTRAINT TRIGGER u_pend_late_fire AFTER INSERT ON u_pend_late"
	             "  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION u_fire()");
	pgt_exec(app, "BEGIN");
	pgt_exec(app, "INSERT INTO u_pend_late VALUES ('pend-5')");
	push_refused_25000(json, ids, 1);
	CU_ASSERT_EQUAL(seq_value("u_fired"), fired);

	/* a pending event on a synced table (the superuser writes it directly) */
	ukey d;
	fresh_key(&d, "pend-unit");
	char sql[256];
	snprintf(sql, sizeof sql,
	         "INSERT INTO u_unit (id, val, parent) VALUES ('%s', 'ok', "
	         "'P-exists')",
	         d.id);
	pgt_exec(db, "BEGIN");
	pgt_exec(db, sql);
	a = push_raw(db, ALICE, json, 5000);
	CU_ASSERT_FALSE(a.ok);
	CU_ASSERT_STRING_EQUAL(a.sqlstate, "25000");
	free(a.body);
	pgt_exec(db, "ROLLBACK");
	no_ledger(json, ids, 1);
	absent("u_unit", d.id);

	/* without a pending event, in an explicit transaction: a first execution that commits
	 * with the caller; a writing transaction without deferrable triggers is no obstacle */
	pgt_exec(app, "BEGIN");
	pgt_exec(app, "INSERT INTO u_plain VALUES ('plain-1')");
	a = push_raw(app, ALICE, json, 5000);
	r = read_answer(&a, json);
	expect_200(r);
	CU_ASSERT_FALSE(r->raw.replay);
	const sy_json *o = check(r, ids[0], "applied", NULL, true, true);
	char *first = o ? strdup(version_of(o)) : NULL;
	result_free(r);
	/* doc/contract.md#push-units: after synchro_push every deferrable constraint of the caller
	 * is IMMEDIATE */
	pgt_exec(app, "INSERT INTO u_pend_trig VALUES ('pend-6')");
	CU_ASSERT_EQUAL(seq_value("u_fired"), fired + 1);
	pgt_exec(app, "COMMIT");
	CU_ASSERT_EQUAL(seq_value("u_fired"), fired + 1);
	char v[160];
	fence_version("u_who", k.id, v);
	CU_ASSERT_STRING_EQUAL(v, first ? first : "-");
	free(first);
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM u_plain WHERE k = 'plain-1'"), 1);
	/* and the same request is now an exact replay */
	r = push_on(app, json);
	expect_200(r);
	CU_ASSERT_TRUE(r->raw.replay);
	result_free(r);
	free(json);
}

/*
 * doc/contract.md#push-units: after a first execution, every deferrable constraint of the calling
 * transaction is IMMEDIATE. Seen from a caller's explicit transaction: a deferred event queued
 * after the call fires at its own statement, not at commit, also when no unit of the call was
 * released (a refusal, a conflict).
 */
void test_mode_after_push(void)
{
	ukey w, u;
	char ids[1][SY_UUID_LEN + 1];
	fresh_key(&w, "who");
	fresh_key(&u, "pend-unit");
	mspec applied = {.table = "u_who", .pk = w.json, .op = "insert", .cols = "{}"};
	mspec refused = {
	        .table = "u_unit", .pk = u.json, .op = "insert", .cols = "{\"val\":\"bad23\"}"};
	mspec conflict = {.table = "u_who", .pk = w.json, .op = "insert", .cols = "{}"};
	const mspec *probes[] = {&applied, &refused, &conflict};
	const char *status[] = {"applied", "rejected_terminal", "conflict"};
	const char *codes[] = {NULL, "validation_failed", "row_already_exists"};
	for (int i = 0; i < 3; i++) {
		long long fired = seq_value("u_fired");
		char *json = build(NULL, probes[i], 1, ids);
		pgt_exec(app, "BEGIN");
		raw a = push_raw(app, ALICE, json, 5000);
		result *r = read_answer(&a, json);
		expect_200(r);
		check(r, ids[0], status[i], codes[i], i != 1, i != 1);
		result_free(r);
		char ins[64];
		snprintf(ins, sizeof ins, "INSERT INTO u_pend_trig VALUES ('pend-7-%d')", i);
		pgt_exec(app, ins);
		long long now = seq_value("u_fired");
		CU_ASSERT_EQUAL(now, fired + 1);
		if (now != fired + 1)
			fprintf(stderr,
			        "after a push whose outcome is %s, a deferred event stays "
			        "pending\n",
			        status[i]);
		/* the first case commits: the third one's conflict needs the row */
		pgt_exec(app, i == 0 ? "COMMIT" : "ROLLBACK");
		free(json);
	}
}

/* ---- 2. authority ---- */

void test_trigger_authority(void)
{
	ukey k1, k2, k3;
	char ids[2][SY_UUID_LEN + 1];
	fresh_key(&k1, "who");
	fresh_key(&k2, "who");
	fresh_key(&k3, "who");
	mspec m = {.table = "u_who", .pk = k1.json, .op = "insert", .cols = "{\"val\":\"a\"}"};
	result *r = run(NULL, &m, 1, ids);
	expect_200(r);
	check(r, ids[0], "applied", NULL, true, true);
	result_free(r);
	mspec g[2] = {{.table = "u_who", .pk = k2.json, .op = "insert", .cols = "{}"},
	              {.table = "u_who", .pk = k3.json, .op = "insert", .cols = "{}"}};
	r = run(&(rspec){.atomic = true}, g, 2, ids);
	expect_200(r);
	check(r, ids[0], "applied", NULL, true, true);
	check(r, ids[1], "applied", NULL, true, true);
	result_free(r);
	const char *keys[] = {k1.id, k2.id, k3.id};
	for (int i = 0; i < 3; i++) {
		const char *p[] = {keys[i]};
		/* one row per trigger (before, after, deferred), each run as synchro_owner for
		 * the responders' login role */
		CU_ASSERT_EQUAL(pgt_int(db, "SELECT count(*) FROM u_log WHERE id = $1", 1, p), 3);
		CU_ASSERT_EQUAL(pgt_int(db,
		                        "SELECT count(*) FROM u_log WHERE id = $1"
		                        "   AND cur = 'synchro_owner' AND sess = '" APP_ROLE "'"
		                        "   AND tag IN ('before', 'after', 'deferred')",
		                        1, p),
		                3);
		char *bad = pgt_value(db,
		                      "SELECT coalesce(string_agg(tag || ':' || cur || '/' || sess,"
		                      " ', '), '') FROM u_log WHERE id = $1"
		                      "  AND (cur <> 'synchro_owner' OR sess <> '" APP_ROLE "')",
		                      1, p);
		CU_ASSERT_STRING_EQUAL(bad ? bad : "", "");
		free(bad);
	}
}

/* ---- 3. one subtransaction per unit ---- */

void test_unit_modes(void)
{
	ukey a, b, c, d;
	char ids[2][SY_UUID_LEN + 1];
	fresh_key(&a, "kid");
	fresh_key(&b, "kid");
	fresh_key(&c, "kid");
	fresh_key(&d, "kid");

	/* the control: outside a push, the immediate FK refuses what the trigger satisfies
	 * later (caught in PL/pgSQL, so nothing reaches the server log) */
	CU_ASSERT_TRUE(pgt_exec(db, "DO $c$ BEGIN"
	                            "  BEGIN INSERT INTO u_kid VALUES ('kid-control', 'P-control');"
	                            "  EXCEPTION WHEN foreign_key_violation THEN RETURN; END;"
	                            "  RAISE EXCEPTION 'the immediate FK did not refuse';"
	                            " END $c$"));
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM u_kid WHERE id = 'kid-control'"), 0);

	/* non-atomic: each unit starts DEFERRED, so the FK is checked at the unit end */
	char pa[128], pb[128];
	snprintf(pa, sizeof pa, "{\"parent\":\"P-%s\"}", a.id);
	snprintf(pb, sizeof pb, "{\"parent\":\"P-%s\"}", b.id);
	mspec ms[2] = {{.table = "u_kid", .pk = a.json, .op = "insert", .cols = pa},
	               {.table = "u_kid", .pk = b.json, .op = "insert", .cols = pb}};
	result *r = run(NULL, ms, 2, ids);
	expect_200(r);
	const sy_json *o = check(r, ids[0], "applied", NULL, true, true);
	char want[128];
	snprintf(want, sizeof want, "\"P-%s\"", a.id);
	CHECK_ROW_VALUE(o, "parent", want);
	check(r, ids[1], "applied", NULL, true, true);
	result_free(r);
	/* the same in an atomic group */
	char pc[128], pd[128];
	snprintf(pc, sizeof pc, "{\"parent\":\"P-%s\"}", c.id);
	snprintf(pd, sizeof pd, "{\"parent\":\"P-%s\"}", d.id);
	mspec ga[2] = {{.table = "u_kid", .pk = c.json, .op = "insert", .cols = pc},
	               {.table = "u_kid", .pk = d.json, .op = "insert", .cols = pd}};
	r = run(&(rspec){.atomic = true}, ga, 2, ids);
	expect_200(r);
	check(r, ids[0], "applied", NULL, true, true);
	check(r, ids[1], "applied", NULL, true, true);
	result_free(r);
	/* the caller's own constraint mode does not matter (explicit transaction, IMMEDIATE) */
	ukey e;
	fresh_key(&e, "kid");
	char pe[128];
	snprintf(pe, sizeof pe, "{\"parent\":\"P-%s\"}", e.id);
	mspec me = {.table = "u_kid", .pk = e.json, .op = "insert", .cols = pe};
	char *json = build(NULL, &me, 1, ids);
	pgt_exec(app, "BEGIN");
	pgt_exec(app, "SET CONSTRAINTS ALL IMMEDIATE");
	raw x = push_raw(app, ALICE, json, 5000);
	r = read_answer(&x, json);
	expect_200(r);
	check(r, ids[0], "applied", NULL, true, true);
	result_free(r);
	pgt_exec(app, "COMMIT");
	free(json);
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM u_kid WHERE id LIKE 'kid-%'"), 5);
}

void test_unit_end_refusals(void)
{
	ukey k[5];
	char ids[5][SY_UUID_LEN + 1];
	for (int i = 0; i < 5; i++)
		fresh_key(&k[i], "unit");
	long long e0 = epoch();
	/* deferred FK (23503), class 22 and class 23 at the unit end: validation_failed; the
	 * others of the non-atomic request apply */
	mspec ms[5] = {
	        {.table = "u_unit",
	         .pk = k[0].json,
	         .op = "insert",
	         .cols = "{\"val\":\"ok\",\"parent\":\"P-exists\"}"},
	        {.table = "u_unit",
	         .pk = k[1].json,
	         .op = "insert",
	         .cols = "{\"val\":\"ok\",\"parent\":\"P-missing\"}"},
	        {.table = "u_unit", .pk = k[2].json, .op = "insert", .cols = "{\"val\":\"bad22\"}"},
	        {.table = "u_unit", .pk = k[3].json, .op = "insert", .cols = "{\"val\":\"bad23\"}"},
	        {.table = "u_unit",
	         .pk = k[4].json,
	         .op = "insert",
	         .cols = "{\"val\":\"ok\",\"parent\":\"P-exists\"}"},
	};
	result *r = run(NULL, ms, 5, ids);
	expect_200(r);
	check(r, ids[0], "applied", NULL, true, true);
	for (int i = 1; i <= 3; i++)
		check(r, ids[i], "rejected_terminal", "validation_failed", false, false);
	check(r, ids[4], "applied", NULL, true, true);
	CU_ASSERT_EQUAL(r->applied, 2);
	result_free(r);
	for (int i = 1; i <= 3; i++)
		absent("u_unit", k[i].id);
	char v[160];
	fence_version("u_unit", k[4].id, v);
	CU_ASSERT(v[0] != '\0');
	CU_ASSERT_EQUAL(epoch(), e0 + 1);

	/* an update refused at its unit end (deferred FK) keeps the row and its version; the
	 * update beside it applies */
	char v0[160], v4[160];
	fence_version("u_unit", k[0].id, v0);
	fence_version("u_unit", k[4].id, v4);
	mspec up[2] = {
	        {.table = "u_unit",
	         .pk = k[0].json,
	         .op = "update",
	         .base = v0,
	         .cols = "{\"parent\":\"P-missing\"}"},
	        {.table = "u_unit",
	         .pk = k[4].json,
	         .op = "update",
	         .base = v4,
	         .cols = "{\"val\":\"ok2\"}"},
	};
	r = run(NULL, up, 2, ids);
	expect_200(r);
	check(r, ids[0], "rejected_terminal", "validation_failed", false, false);
	const sy_json *o = check(r, ids[1], "applied", NULL, true, true);
	CHECK_ROW_VALUE(o, "val", "\"ok2\"");
	result_free(r);
	fence_version("u_unit", k[0].id, v);
	CU_ASSERT_STRING_EQUAL(v, v0);
	char *parent = row_field("u_unit", k[0].id, "parent");
	CU_ASSERT_STRING_EQUAL(parent ? parent : "", "P-exists");
	free(parent);
	CU_ASSERT_EQUAL(epoch(), e0 + 2);
	e0 = epoch();

	/* atomic: a failed check at the group end is validation_failed of the last mutation,
	 * wherever the refused row is */
	ukey g[2];
	fresh_key(&g[0], "unit");
	fresh_key(&g[1], "unit");
	mspec ga[2] = {
	        {.table = "u_unit", .pk = g[0].json, .op = "insert", .cols = "{\"val\":\"bad23\"}"},
	        {.table = "u_unit", .pk = g[1].json, .op = "insert", .cols = "{\"val\":\"ok\"}"},
	};
	r = run(&(rspec){.atomic = true}, ga, 2, ids);
	expect_200(r);
	check(r, ids[0], "rejected_terminal", "atomic_batch_rejected", false, false);
	check(r, ids[1], "rejected_terminal", "validation_failed", false, false);
	CU_ASSERT_EQUAL(r->applied, 0);
	result_free(r);
	absent("u_unit", g[0].id);
	absent("u_unit", g[1].id);
	CU_ASSERT_EQUAL(epoch(), e0);
}

/*
 * A push whose unit end raises a class other than 22/23: an operational failure of the whole
 * request, nothing committed. P0001 is answered 503; 40001 (a serialization failure) fails
 * the statement with that SQLSTATE, for the adapter to run it again in a new transaction
 * (doc/protocol.md "Writing an adapter"), and the adapter (sy_store_push_call) answers 503
 * after its attempts.
 */
static void operational(const rspec *rs, const char *val, bool adapter)
{
	ukey ok, bad;
	char ids[2][SY_UUID_LEN + 1];
	fresh_key(&ok, "unit");
	fresh_key(&bad, "unit");
	char cols[96];
	snprintf(cols, sizeof cols, "{\"val\":\"%s\"}", val);
	mspec ms[2] = {
	        {.table = "u_unit", .pk = ok.json, .op = "insert", .cols = "{\"val\":\"ok\"}"},
	        {.table = "u_unit", .pk = bad.json, .op = "insert", .cols = cols},
	};
	long long e0 = epoch(), tries = seq_value("u_tries");
	long long batches = count("SELECT count(*) FROM synchro.batches");
	long long mutations = count("SELECT count(*) FROM synchro.mutations");
	char *json = build(rs, ms, 2, ids);
	if (strcmp(val, "bad40") == 0) {
		raw a = push_raw(app, ALICE, json, 5000);
		CU_ASSERT_FALSE(a.ok);
		CU_ASSERT_STRING_EQUAL(a.sqlstate, "40001");
		CU_ASSERT_FALSE(a.conn_lost);
		free(a.body);
		CU_ASSERT_EQUAL(seq_value("u_tries"), tries + 1);
		tries++;
	}
	if (adapter) {
		sy_store_push_answer ans;
		memset(&ans, 0, sizeof ans);
		sy_store_push_params prm = {.user = ALICE,
		                            .body = json,
		                            .body_len = strlen(json),
		                            .lock_timeout_ms = 5000,
		                            .retry_after_s = 1};
		char state[6] = "";
		sy_error e = {0};
		sy_store_status st = sy_store_push_call(app, &prm, &ans, state, &e);
		/* the adapter's own 503: the statement failed every attempt */
		CU_ASSERT_EQUAL(st, SY_STORE_FAILED);
		CU_ASSERT_STRING_EQUAL(state, "40001");
		sy_store_push_answer_clear(&ans);
		CU_ASSERT_EQUAL(seq_value("u_tries"), tries + 3);
	} else {
		result *r = push_on(app, json);
		expect_error(r, SY_ERR_TEMPORARY_UNAVAILABLE);
		CU_ASSERT(r->raw.retry_after > 0);
		result_free(r);
		CU_ASSERT_EQUAL(seq_value("u_tries"), tries + 1);
	}
	CU_ASSERT_EQUAL(PQtransactionStatus(app), PQTRANS_IDLE);
	no_ledger(json, ids, 2);
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM synchro.batches"), batches);
	CU_ASSERT_EQUAL(count("SELECT count(*) FROM synchro.mutations"), mutations);
	absent("u_unit", ok.id);
	absent("u_unit", bad.id);
	CU_ASSERT_EQUAL(epoch(), e0);
	free(json);
}

void test_unit_end_operational(void)
{
	operational(NULL, "badP0-OPMARK-7d1e", false);
	CU_ASSERT_TRUE(server_log_has("not committed: SQLSTATE P0001"));
	operational(&(rspec){.atomic = true}, "badP0-OPMARK-7d1f", false);
	operational(NULL, "bad40", true);
	operational(&(rspec){.atomic = true}, "bad40", true);
	CU_ASSERT_TRUE(server_log_has("rolled back: SQLSTATE 40001"));
	CU_ASSERT_FALSE(server_log_has("OPMARK"));
}
