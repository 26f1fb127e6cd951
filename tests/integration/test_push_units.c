/* SPDX-License-Identifier: BSD-2-Clause */
/* synchro_push's units against a real PostgreSQL: the calling transaction, one subtransaction
 * per unit, the row after its unit, no redo, fences of deferred writes, conflicts whatever the
 * pk's deferrability, no value in the server log, backends killed mid-push, the grants, and the
 * schema publish. This file: the suite's tables, the statement and its answer, database state
 * and main; the tests are in test_push_units_txn.c, test_push_units_rows.c,
 * test_push_units_races.c and test_push_units_publish.c. */
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

PGconn *db;  /* the fixture's superuser */
PGconn *app; /* a login role in synchro_app, as a responder */
PGconn *mon; /* watches other sessions */
sy_schema_ref cur;
char *manifest_text; /* the published manifest (example tables + this suite's) */

/* ---- the suite's tables ---- */

static const char schema_sql[] =
        /* observations that survive a rollback (sequences) or are written by triggers */
        "CREATE TABLE u_log (n bigserial PRIMARY KEY, tag text NOT NULL, id text,"
        "  cur text, sess text);\n"
        "GRANT SELECT, INSERT ON u_log TO PUBLIC;\n"
        "GRANT USAGE ON SEQUENCE u_log_n_seq TO PUBLIC;\n"
        "CREATE SEQUENCE u_fired; CREATE SEQUENCE u_runs; CREATE SEQUENCE u_tries;\n"
        "GRANT USAGE, SELECT, UPDATE ON SEQUENCE u_fired, u_runs, u_tries TO PUBLIC;\n"
        "CREATE TABLE u_par (k text PRIMARY KEY);\n"
        "GRANT SELECT, INSERT ON u_par TO PUBLIC;\n"
        "INSERT INTO u_par VALUES ('P-exists');\n"
        /* 1: tables the responders write in their own transaction (not synced) */
        "CREATE FUNCTION u_fire() RETURNS trigger LANGUAGE plpgsql AS $f$"
        "BEGIN PERFORM nextval('u_fired'); RETURN NULL; END $f$;\n"
        "CREATE TABLE u_pend_fk (k text PRIMARY KEY,"
        "  parent text REFERENCES u_par DEFERRABLE INITIALLY DEFERRED);\n"
        "CREATE TABLE u_pend_trig (k text PRIMARY KEY);\n"
        "CREATE CONSTRAINT TRIGGER u_pend_fire AFTER INSERT ON u_pend_trig"
        "  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION u_fire();\n"
        "CREATE TABLE u_pend_imm (k text PRIMARY KEY);\n"
        "CREATE CONSTRAINT TRIGGER u_pend_imm_fire AFTER INSERT ON u_pend_imm"
        "  DEFERRABLE INITIALLY IMMEDIATE FOR EACH ROW EXECUTE FUNCTION u_fire();\n"
        "CREATE TABLE u_plain (k text PRIMARY KEY);\n"
        "GRANT SELECT, INSERT ON u_pend_fk, u_pend_trig, u_pend_imm, u_plain TO PUBLIC;\n"
        /* 2: who runs the trigger functions of a synced table */
        "CREATE TABLE u_who (id text PRIMARY KEY, val text);\n"
        "CREATE FUNCTION u_who_log() RETURNS trigger LANGUAGE plpgsql AS $f$"
        "BEGIN INSERT INTO u_log (tag, id, cur, sess)"
        "  VALUES (TG_ARGV[0], NEW.id, current_user, session_user);"
        "  IF TG_WHEN = 'BEFORE' THEN RETURN NEW; END IF; RETURN NULL; END $f$;\n"
        "CREATE TRIGGER u_who_before BEFORE INSERT ON u_who"
        "  FOR EACH ROW EXECUTE FUNCTION u_who_log('before');\n"
        "CREATE TRIGGER u_who_after AFTER INSERT ON u_who"
        "  FOR EACH ROW EXECUTE FUNCTION u_who_log('after');\n"
        "CREATE CONSTRAINT TRIGGER u_who_deferred AFTER INSERT ON u_who"
        "  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION u_who_log('deferred');\n"
        /* 3a: a DEFERRABLE INITIALLY IMMEDIATE FK that the insert's own AFTER trigger
         * satisfies (zz_ fires after the RI trigger: triggers fire in name order) */
        "CREATE TABLE u_kid (id text PRIMARY KEY, parent text NOT NULL"
        "  REFERENCES u_par DEFERRABLE INITIALLY IMMEDIATE);\n"
        "CREATE FUNCTION u_kid_parent() RETURNS trigger LANGUAGE plpgsql AS $f$"
        "BEGIN INSERT INTO u_par VALUES (NEW.parent) ON CONFLICT DO NOTHING;"
        "  RETURN NULL; END $f$;\n"
        "CREATE TRIGGER zz_kid_parent AFTER INSERT ON u_kid"
        "  FOR EACH ROW EXECUTE FUNCTION u_kid_parent();\n"
        /* 3b, 3c: checks at the unit end */
        "CREATE TABLE u_unit (id text PRIMARY KEY, val text,"
        "  parent text REFERENCES u_par DEFERRABLE INITIALLY DEFERRED);\n"
        "CREATE FUNCTION u_unit_check() RETURNS trigger LANGUAGE plpgsql AS $f$"
        "BEGIN"
        "  IF NEW.val = 'bad22' THEN RAISE EXCEPTION 'u_unit 22' USING ERRCODE = '22023';"
        "  ELSIF NEW.val = 'bad23' THEN RAISE EXCEPTION 'u_unit 23' USING ERRCODE = '23514';"
        "  ELSIF NEW.val = 'bad40' THEN PERFORM nextval('u_tries');"
        "    RAISE EXCEPTION 'u_unit 40' USING ERRCODE = '40001';"
        "  ELSIF NEW.val LIKE 'badP0%' THEN PERFORM nextval('u_tries');"
        "    RAISE EXCEPTION 'u_unit refuses %', NEW.val;"
        "  END IF; RETURN NULL; END $f$;\n"
        "CREATE FUNCTION u_unit_before() RETURNS trigger LANGUAGE plpgsql AS $f$"
        "BEGIN IF NEW.val = 'beforeP0' THEN PERFORM nextval('u_tries');"
        "  RAISE EXCEPTION 'u_unit refuses before'; END IF; RETURN NEW; END $f$;\n"
        "CREATE TRIGGER u_unit_before BEFORE INSERT ON u_unit"
        "  FOR EACH ROW EXECUTE FUNCTION u_unit_before();\n"
        "CREATE CONSTRAINT TRIGGER u_unit_check AFTER INSERT ON u_unit"
        "  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION u_unit_check();\n"
        /* 4, 6: writes after the mutation's own statement, immediate and deferred */
        "CREATE TABLE u_shadow (id text PRIMARY KEY, src text);\n"
        "CREATE TABLE u_after (id text PRIMARY KEY, val text, stamp text, late text,"
        "  ref text);\n"
        "CREATE FUNCTION u_after_stamp() RETURNS trigger LANGUAGE plpgsql AS $f$"
        "BEGIN UPDATE u_after SET stamp = 'stamped:' || NEW.val WHERE id = NEW.id;"
        "  IF NEW.ref IS NOT NULL THEN"
        "    UPDATE u_after SET val = 'touched-by-' || NEW.id WHERE id = NEW.ref;"
        "  END IF; RETURN NULL; END $f$;\n"
        "CREATE TRIGGER u_after_stamp AFTER INSERT ON u_after"
        "  FOR EACH ROW EXECUTE FUNCTION u_after_stamp();\n"
        "CREATE FUNCTION u_after_late() RETURNS trigger LANGUAGE plpgsql AS $f$"
        "BEGIN"
        "  IF NEW.val = 'vanish' THEN DELETE FROM u_after WHERE id = NEW.id; RETURN NULL;"
        "  END IF;"
        "  UPDATE u_after SET late = 'late:' || NEW.val WHERE id = NEW.id;"
        "  INSERT INTO u_shadow (id, src) VALUES ('sh-' || NEW.id, NEW.id);"
        "  RETURN NULL; END $f$;\n"
        "CREATE CONSTRAINT TRIGGER u_after_late AFTER INSERT ON u_after"
        "  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION u_after_late();\n"
        /* 5: executions counted by a sequence default and a trigger counter */
        "CREATE TABLE u_seq (id text PRIMARY KEY, seq bigserial NOT NULL,"
        "  qty integer CHECK (qty >= 0), tag text UNIQUE DEFERRABLE INITIALLY DEFERRED);\n"
        "CREATE FUNCTION u_seq_count() RETURNS trigger LANGUAGE plpgsql AS $f$"
        "BEGIN PERFORM nextval('u_runs');"
        "  INSERT INTO u_log (tag, id) VALUES ('seq', NEW.id); RETURN NULL; END $f$;\n"
        "CREATE TRIGGER u_seq_count AFTER INSERT ON u_seq"
        "  FOR EACH ROW EXECUTE FUNCTION u_seq_count();\n"
        /* 7: primary keys DEFERRABLE INITIALLY IMMEDIATE, hard and soft delete */
        "CREATE TABLE u_dpk (id text, val text,"
        "  CONSTRAINT u_dpk_pkey PRIMARY KEY (id) DEFERRABLE INITIALLY IMMEDIATE);\n"
        "CREATE TABLE u_dpks (id text, val text, deleted_at timestamptz,"
        "  CONSTRAINT u_dpks_pkey PRIMARY KEY (id) DEFERRABLE INITIALLY IMMEDIATE);\n"
        /* 8: every kind of refusal, with values to look for in the server log */
        "CREATE TABLE u_mark (id text PRIMARY KEY,"
        "  chk text CHECK (chk IS NULL OR chk NOT LIKE 'CHKMARK%'),"
        "  uniq text UNIQUE, duniq text UNIQUE DEFERRABLE INITIALLY DEFERRED,"
        "  ref text REFERENCES u_par, dref text REFERENCES u_par DEFERRABLE INITIALLY DEFERRED,"
        "  num text CHECK (num IS NULL OR num::integer >= 0), req text NOT NULL);\n"
        "CREATE FUNCTION u_mark_check() RETURNS trigger LANGUAGE plpgsql AS $f$"
        "BEGIN IF NEW.chk LIKE 'TRIGMARK%' THEN"
        "  RAISE EXCEPTION 'u_mark refuses %', NEW.chk USING ERRCODE = '23514',"
        "    DETAIL = 'Key (chk)=(' || NEW.chk || ')'; END IF; RETURN NULL; END $f$;\n"
        "CREATE CONSTRAINT TRIGGER u_mark_check AFTER INSERT ON u_mark"
        "  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION u_mark_check();\n"
        /* 9: killed pushes */
        "CREATE TABLE u_kill (id text PRIMARY KEY, val text);\n"
        /* 11: publish history */
        "CREATE TABLE u_ren (id text PRIMARY KEY, val text);\n"
        "CREATE TABLE u_ty (id integer PRIMARY KEY, val text);\n";

static const char tables_common[] =
        TABLE("u_who", FIELD("val", "true", "true")) ",\n" TABLE("u_kid", FIELD("parent", "false", "true")) ",\n" TABLE(
                "u_unit",
                FIELD("val", "true", "true") ", " FIELD(
                        "parent", "true",
                        "true")) ",\n" TABLE("u_shadow",
                                             FIELD("src", "true",
                                                   "true")) ",\n" TABLE("u_after",
                                                                        FIELD("val", "true", "true") ", " FIELD(
                                                                                "stamp", "true",
                                                                                "false") ", " FIELD("late",
                                                                                                    "true",
                                                                                                    "false") ", " FIELD("ref", "true", "true")) ",\n"
                                                                                                                                                "    {\"table_id\": \"u_seq\", \"relation\": \"public.u_seq\",\n"
                                                                                                                                                "     \"pk\": {\"field_id\": \"id\", \"column\": \"id\", \"type\": \"text\"},\n"
                                                                                                                                                "     \"fields\": [{\"field_id\": \"seq\", \"column\": \"seq\", \"type\": \"int64\","
                                                                                                                                                " \"nullable\": false, \"writable\": false},"
                                                                                                                                                " {\"field_id\": \"qty\", \"column\": \"qty\", \"type\": \"int32\", \"nullable\": true,"
                                                                                                                                                " \"writable\": true}, " FIELD("tag", "true", "true") "],\n"
                                                                                                                                                                                                      "     \"delete\": {\"mode\": \"hard\"}, \"policy\": {\"read\": \"all\", \"write\": "
                                                                                                                                                                                                      "\"all\"}},\n" TABLE("u_dpk",
                                                                                                                                                                                                                           FIELD("val", "true", "true")) ",\n"
                                                                                                                                                                                                                                                         "    {\"table_id\": \"u_dpks\", \"relation\": \"public.u_dpks\",\n"
                                                                                                                                                                                                                                                         "     \"pk\": {\"field_id\": \"id\", \"column\": \"id\", \"type\": \"text\"},\n"
                                                                                                                                                                                                                                                         "     \"fields\": [" FIELD("val",
                                                                                                                                                                                                                                                                                    "true",
                                                                                                                                                                                                                                                                                    "true") ", {\"field_id\": \"deleted_at\","
                                                                                                                                                                                                                                                                                            " \"column\": \"deleted_at\", \"type\": \"timestamp\", \"nullable\": true,"
                                                                                                                                                                                                                                                                                            " \"writable\": false}],\n"
                                                                                                                                                                                                                                                                                            "     \"delete\": {\"mode\": \"soft\", \"column\": \"deleted_at\"},"
                                                                                                                                                                                                                                                                                            " \"policy\": {\"read\": \"all\", \"write\": \"all\"}},\n" TABLE("u_mark", FIELD("chk",
                                                                                                                                                                                                                                                                                                                                                                             "true", "true") ", " FIELD("uniq", "true", "true") ", " FIELD("duniq",
                                                                                                                                                                                                                                                                                                                                                                                                                                           "true",
                                                                                                                                                                                                                                                                                                                                                                                                                                           "true") ", " FIELD("ref",
                                                                                                                                                                                                                                                                                                                                                                                                                                                              "true",
                                                                                                                                                                                                                                                                                                                                                                                                                                                              "true") ", " FIELD("dref",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                 "true", "true") ", " FIELD("num", "true", "true") ", " FIELD("req", "false", "true")) ",\n" TABLE("u_kill",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                   FIELD("val",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                         "true", "true")) ",\n"
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                          "    {\"table_id\": \"u_ty\", \"relation\": \"public.u_ty\",\n"
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                          "     \"pk\": {\"field_id\": \"id\", \"column\": \"id\", \"type\": \"int32\"},\n"
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                          "     \"fields\": [" FIELD("val",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                     "true",
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                     "true") "],\n"
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                             "     \"delete\": {\"mode\": \"hard\"}, \"policy\": {\"read\": \"all\", \"write\": "
                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                             "\"all\"}}";

const char table_ren[] = TABLE("u_ren", FIELD("val", "true", "true"));

/* The example manifest with extra tables spliced in before its tables' closing bracket. */
static char *manifest_with(const char *example, const char *extra)
{
	const char *end = strrchr(example, ']');
	if (end == NULL)
		return NULL;
	size_t head = (size_t)(end - example);
	while (head > 0 && (example[head - 1] == '\n' || example[head - 1] == ' '))
		head--;
	size_t len = head + strlen(extra) + strlen(end) + 8;
	char *out = malloc(len);
	if (out == NULL)
		return NULL;
	snprintf(out, len, "%.*s,\n%s\n  %s", (int)head, example, extra, end);
	return out;
}

/* ---- identifiers ---- */

unsigned long serial = 0x7000;

void fresh_key(ukey *k, const char *prefix)
{
	static unsigned long n = 0;
	snprintf(k->id, sizeof k->id, "%.16s-%lu", prefix, ++n);
	snprintf(k->json, sizeof k->json, "\"%.40s\"", k->id);
}

/* ---- the statement ---- */

static const char push_sql[] = "SELECT status, response, replay, retry_after"
                               "  FROM synchro.synchro_push($1, $2, $3::integer)";

static uint32_t be32(const char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return ntohl(v);
}

raw push_raw(PGconn *c, const char *user, const char *json, int lock_timeout_ms)
{
	raw r;
	memset(&r, 0, sizeof r);
	r.retry_after = -1;
	char lt[16];
	snprintf(lt, sizeof lt, "%d", lock_timeout_ms);
	const char *vals[3] = {user, json, lt};
	int lens[3] = {0, (int)strlen(json), 0};
	int fmts[3] = {0, 1, 0};
	Oid types[3] = {25 /* text */, 17 /* bytea */, 23 /* int4 */};
	PGresult *pr = PQexecParams(c, push_sql, 3, types, vals, lens, fmts, 1);
	if (PQresultStatus(pr) != PGRES_TUPLES_OK || PQntuples(pr) != 1) {
		const char *st = PQresultErrorField(pr, PG_DIAG_SQLSTATE);
		snprintf(r.sqlstate, sizeof r.sqlstate, "%s", st ? st : "");
		snprintf(r.message, sizeof r.message, "%s", PQerrorMessage(c));
		r.conn_lost = PQstatus(c) != CONNECTION_OK;
		PQclear(pr);
		return r;
	}
	r.ok = true;
	r.status = (int)be32(PQgetvalue(pr, 0, 0));
	r.len = (size_t)PQgetlength(pr, 0, 1);
	r.body = malloc(r.len + 1);
	memcpy(r.body, PQgetvalue(pr, 0, 1), r.len);
	r.body[r.len] = '\0';
	r.replay = PQgetvalue(pr, 0, 2)[0] != 0;
	if (!PQgetisnull(pr, 0, 3))
		r.retry_after = (int)be32(PQgetvalue(pr, 0, 3));
	PQclear(pr);
	return r;
}

void result_free(result *r)
{
	if (r == NULL)
		return;
	free(r->raw.body);
	sy_json_doc_free(r->doc);
	free(r);
}

/* Reads an answer: a 200 body is validated against its request (sy_outcome_validate_response),
 * an error body gives its code. */
result *read_answer(const raw *a, const char *json)
{
	result *r = calloc(1, sizeof *r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	r->raw = *a;
	r->error = SY_ERR__COUNT;
	if (!a->ok)
		return r;
	sy_error e = {0};
	sy_json_doc *d = sy_json_parse(a->body, a->len, &e);
	CU_ASSERT_PTR_NOT_NULL(d);
	if (d == NULL)
		return r;
	const sy_json *root = sy_json_doc_root(d);
	const sy_json *err = sy_json_get(root, "error");
	if (a->status == 200) {
		CU_ASSERT_PTR_NULL(err);
		r->error = SY_ERR_NONE;
		sy_push_request *req = sy_push_parse(json, strlen(json), &e);
		CU_ASSERT_PTR_NOT_NULL(req);
		if (req != NULL) {
			sy_error ve = {0};
			bool ok = sy_outcome_validate_response(req, root, &ve);
			CU_ASSERT_TRUE(ok);
			if (!ok)
				fprintf(stderr, "response invalid: %s\n%s\n", ve.message, a->body);
		}
		sy_push_request_free(req);
		const sy_json *acc = sy_json_get(root, "accepted");
		r->applied = acc != NULL ? acc->u.array.count : 0;
		r->doc = d;
		return r;
	}
	const sy_json *code = err ? sy_json_get(err, "code") : NULL;
	for (int i = 1; code != NULL && r->error == SY_ERR__COUNT && i < SY_ERR__COUNT; i++)
		if (strcmp(sy_errcode_name((sy_errcode)i), code->u.string.data) == 0)
			r->error = (sy_errcode)i;
	CU_ASSERT_EQUAL(a->status, sy_errcode_http_status(r->error));
	sy_json_doc_free(d);
	return r;
}

result *push_on(PGconn *c, const char *json)
{
	raw a = push_raw(c, ALICE, json, 5000);
	return read_answer(&a, json);
}

/* Builds and runs one request of alice on CA1 as the responders' role, outside any
 * explicit transaction (the adapter's shape). */
result *run(const rspec *rs, const mspec *ms, size_t n, char (*ids)[SY_UUID_LEN + 1])
{
	char *json = build(rs, ms, n, ids);
	result *r = push_on(app, json);
	CU_ASSERT_EQUAL(PQtransactionStatus(app), PQTRANS_IDLE);
	free(json);
	return r;
}

void expect_200_at(const result *r, const char *file, int line)
{
	bool ok = r->raw.ok && r->error == SY_ERR_NONE && r->raw.status == 200;
	CU_ASSERT_TRUE(ok);
	if (!ok)
		fprintf(stderr, "%s:%d: want 200, got ok=%d status=%d sqlstate=%s %s%s\n", file,
		        line, r->raw.ok, r->raw.status, r->raw.sqlstate, r->raw.message,
		        r->raw.body ? r->raw.body : "");
}

void expect_error_at(const result *r, sy_errcode code, const char *file, int line)
{
	bool ok = r->raw.ok && r->error == code && r->raw.status == sy_errcode_http_status(code);
	CU_ASSERT_TRUE(ok);
	if (!ok)
		fprintf(stderr, "%s:%d: want %s, got ok=%d status=%d sqlstate=%s %s%s\n", file,
		        line, sy_errcode_name(code), r->raw.ok, r->raw.status, r->raw.sqlstate,
		        r->raw.message, r->raw.body ? r->raw.body : "");
}

const char *version_of(const sy_json *o)
{
	const char *v = str(o, "server_version");
	return v ? v : "<none>";
}

/* ---- database state (read as the superuser) ---- */

/* The fence version of (table, pk), or "" without a fence. */
void fence_version(const char *table, const char *pk, char out[160])
{
	const char *p[] = {table, pk};
	PGresult *r = pgt_query(db,
	                        "SELECT version FROM synchro.row_fences WHERE table_id = $1"
	                        " AND pk = $2",
	                        2, p);
	snprintf(out, 160, "%s", r && PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "");
	PQclear(r);
}

/* A column of the fence of (table, pk) as text ("<null>"; NULL without a fence). */
char *fence_field(const char *table, const char *pk, const char *column)
{
	char sql[256];
	snprintf(sql, sizeof sql,
	         "SELECT coalesce(%s::text, '<null>') FROM synchro.row_fences"
	         " WHERE table_id = $1 AND pk = $2",
	         column);
	const char *p[] = {table, pk};
	PGresult *r = pgt_query(db, sql, 2, p);
	char *out = r && PQntuples(r) == 1 ? strdup(PQgetvalue(r, 0, 0)) : NULL;
	PQclear(r);
	return out;
}

long long count(const char *sql)
{
	return pgt_int(db, sql, 0, NULL);
}

static long long count1(const char *sql, const char *p1)
{
	const char *p[] = {p1};
	return pgt_int(db, sql, 1, p);
}

/* A column of a row of the suite's table (text), NULL when there is no row. */
char *row_field(const char *table, const char *id, const char *column)
{
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT coalesce(%s::text, '<null>') FROM %s WHERE id = $1",
	         column, table);
	const char *p[] = {id};
	PGresult *r = pgt_query(db, sql, 1, p);
	char *out = r && PQntuples(r) == 1 ? strdup(PQgetvalue(r, 0, 0)) : NULL;
	PQclear(r);
	return out;
}

long long epoch(void)
{
	return count("SELECT accepted_write_epoch FROM synchro.clients WHERE client_id = '" CA1
	             "'");
}

long long seq_value(const char *seq)
{
	char sql[128];
	snprintf(sql, sizeof sql, "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM %s",
	         seq);
	return count(sql);
}

/* Nothing of a request remains: no batch row, no mutation row of ids. */
void no_ledger_at(const char *json, char (*ids)[SY_UUID_LEN + 1], size_t n, const char *file,
                  int line)
{
	const char *b = strstr(json, "\"batch_id\":\"");
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	char batch[SY_UUID_LEN + 1];
	snprintf(batch, sizeof batch, "%.36s", b + 12);
	long long nb = count1("SELECT count(*) FROM synchro.batches WHERE batch_id = $1", batch);
	CU_ASSERT_EQUAL(nb, 0);
	if (nb != 0)
		fprintf(stderr, "%s:%d: batch %s has a ledger row\n", file, line, batch);
	for (size_t i = 0; i < n; i++) {
		long long nm = count1(
		        "SELECT count(*) FROM synchro.mutations WHERE mutation_id = $1", ids[i]);
		CU_ASSERT_EQUAL(nm, 0);
		if (nm != 0)
			fprintf(stderr, "%s:%d: mutation %s has a ledger row\n", file, line,
			        ids[i]);
	}
}

/* No row and no fence of (table, id). */
void absent_at(const char *table, const char *id, const char *file, int line)
{
	char v[160], *val = row_field(table, id, "id");
	fence_version(table, id, v);
	CU_ASSERT_PTR_NULL(val);
	CU_ASSERT_STRING_EQUAL(v, "");
	if (val != NULL || v[0] != '\0')
		fprintf(stderr, "%s:%d: %s %s: row %s, fence '%s'\n", file, line, table, id,
		        val ? "present" : "absent", v);
	free(val);
}

bool server_log_has(const char *needle)
{
	const char *path = getenv("SYNCHRO_PG_LOG");
	FILE *f = path ? fopen(path, "r") : NULL;
	char line[8192];
	bool found = false;
	CU_ASSERT_PTR_NOT_NULL(f);
	while (f != NULL && !found && fgets(line, sizeof line, f) != NULL)
		found = strstr(line, needle) != NULL;
	if (f != NULL)
		fclose(f);
	return found;
}

/* Runs sql on c expecting the SQLSTATE (the transaction, if any, is then aborted). */
bool fails_with(PGconn *c, const char *sql, const char *state)
{
	PGresult *r = PQexec(c, sql);
	const char *st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	bool ok = PQresultStatus(r) == PGRES_FATAL_ERROR && st && strcmp(st, state) == 0;
	if (!ok)
		fprintf(stderr, "want %s from: %s\ngot %s %s\n", state, sql, st ? st : "-",
		        PQresultErrorMessage(r));
	PQclear(r);
	return ok;
}

/* The suite's clients never reconnect: every request carries generation 1. */
static long long first_generation(const char *client)
{
	(void)client;
	return 1;
}

int main(void)
{
	pgt_require_fixture();
	generation_of = first_generation;
	sy_error e = {0};
	db = sy_store_connect(NULL, "test_push_units", &e);
	if (db == NULL) {
		fprintf(stderr, "%s\n", e.message);
		return 99;
	}
	pgt_must(db, "SET client_min_messages = warning");
	if (pgt_migrate(db, sy_sql_migrations, sy_sql_migration_count) !=
	    (int)sy_sql_migration_count) {
		fprintf(stderr, "the migrations did not apply\n");
		return 99;
	}
	char path[4096];
	snprintf(path, sizeof path, "%s/contrib/example/schema.sql", sy_test_src_dir());
	char *schema = sy_test_read_file(path, NULL);
	snprintf(path, sizeof path, "%s/contrib/example/manifest.json", sy_test_src_dir());
	char *example = sy_test_read_file(path, NULL);
	if (schema == NULL || example == NULL) {
		fprintf(stderr, "cannot read contrib/example\n");
		return 99;
	}
	pgt_must(db, schema);
	free(schema);
	pgt_must(db, schema_sql);
	size_t n = strlen(tables_common) + strlen(table_ren) + 8;
	char *extra = malloc(n);
	snprintf(extra, n, "%s,\n%s", tables_common, table_ren);
	manifest_text = manifest_with(example, extra);
	free(extra);
	free(example);
	if (manifest_text == NULL)
		return 99;
	sy_manifest *m = sy_manifest_parse(manifest_text, strlen(manifest_text), &e);
	if (m == NULL) {
		fprintf(stderr, "manifest: %s\n%s\n", e.message, manifest_text);
		return 99;
	}
	sy_store_published pub;
	if (sy_store_schema_publish(db, m, NULL, NULL, &pub, &e) != SY_STORE_OK) {
		fprintf(stderr, "publish: %s\n", e.message);
		return 99;
	}
	sy_manifest_free(m);
	cur.version = (uint64_t)pub.version;
	snprintf(cur.hash, sizeof cur.hash, "%s", pub.hash);
	pgt_must(db, "CREATE ROLE " APP_ROLE " LOGIN IN ROLE synchro_app");
	pgt_must(db, "CREATE ROLE " PUBLIC_ROLE " LOGIN");
	pgt_must(db, "GRANT USAGE ON SCHEMA synchro TO " PUBLIC_ROLE);
	pgt_must(db, "INSERT INTO synchro.clients (client_id, user_id, generation) VALUES"
	             " ('" CA1 "', 'alice', 1)");
	app = connect_app();
	mon = pgt_connect(NULL);
	if (app == NULL)
		return 99;

	static const CU_TestInfo tests[] = {
	        {"1 a pending deferred event in the calling transaction: 25000",
	         test_pending_event},
	        {"1 after a first execution the caller's constraints are IMMEDIATE",
	         test_mode_after_push},
	        {"2 trigger functions run as synchro_owner", test_trigger_authority},
	        {"3a each unit starts deferred (an FK its own trigger satisfies)", test_unit_modes},
	        {"3b classes 22/23 at the unit end: validation_failed", test_unit_end_refusals},
	        {"3c another class at the unit end: 503, nothing committed",
	         test_unit_end_operational},
	        {"4 the accepted outcome is the row after its unit", test_row_after_unit},
	        {"5 no redo of other units", test_no_redo},
	        {"6 fences of deferred writes carry the unit's mutation", test_deferred_fences},
	        {"6 the push's settings end with the call", test_settings_end_with_call},
	        {"7 conflicts on a DEFERRABLE pk", test_deferrable_pk},
	        {"7 an insert over a live or deleted row conflicts before its write",
	         test_conflict_before_write},
	        {"7 a racing direct insert, ordinary and DEFERRABLE pk", test_pk_race},
	        {"7 an insert or update of a row without a fence fails, writing nothing",
	         test_fenceless_row},
	        {"9 pg_terminate_backend mid-push leaves nothing", test_terminated},
	        {"9 kill -9 mid-push leaves nothing", test_killed},
	        {"10 the responders' role writes only through synchro_push", test_grants},
	        {"11 publish keeps a table's pk; replay after a publish", test_publish_pk},
	        {"12 ledger rows without an INSERT are an INSERT's rows", test_ledger_rows_direct},
	        {"12 an operator's ledger trigger and column still apply",
	         test_ledger_operator_changes},
	        {"12 a unit's row read under row-level security", test_row_read_security},
	        {"12 a unit's row read after a grant changed", test_row_read_after_grant},
	        {"8 caught errors never reach the server log", test_log_markers},
	        {NULL, NULL},
	};
	sy_test_add_suite("push units", tests);
	int status = sy_test_run();
	sy_store_disconnect(app);
	sy_store_disconnect(db);
	PQfinish(mon);
	free(manifest_text);
	return status;
}
