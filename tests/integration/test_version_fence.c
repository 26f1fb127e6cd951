/* SPDX-License-Identifier: BSD-2-Clause */
/* The version fence in C (migration 20, src/pg/version_fence.c) beside the plpgsql function
 * it replaced, against a real PostgreSQL. Two databases of one cluster hold the same synced
 * tables (keys and owners of many types, soft-delete columns, domains, a composite) with the
 * same fence triggers: in one they call synchro.version_fence (C), in the other the plpgsql
 * body of the latest migration that defined it in plpgsql, created under another name there
 * only. The same generated transactions (inserts, updates, owner and key changes, soft and
 * hard deletes, re-inserts after a delete, several rows per statement, with the synchro.*
 * settings set, unset, empty and malformed, under several TimeZone / extra_float_digits /
 * IntervalStyle / bytea_output settings) run on both, and must give byte for byte:
 * - every error's SQLSTATE, message, DETAIL, HINT and schema/table/column/constraint
 *   fields (their CONTEXT names the function that raised them and differs);
 * - every change test_decoding reads from each database's slot: the application rows, the
 *   row_fences rows and the logical messages 'synchro', with only the random version masked
 *   (and, in row_fences rows, source_xid and updated_at, checked instead to be the writing
 *   transaction's pg_current_xact_id() and now()); each message's version must be the one
 *   its fence row received just before it, as walsync checks;
 * - the fences at the end.
 * Then the configurations the fence refuses, a NULL key, a call outside a trigger, and a
 * caller's hostile search_path, on both. */
#include "config.h"

#include <CUnit/CUnit.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgtest.h"
#include "store/migrations.h"
#include "testutil.h"

/* the slot of each database (slot names are the cluster's) */
#define SLOT_C   "synchro_fence_c"
#define SLOT_P   "synchro_fence_p"
#define OTHER_DB "fence_plpgsql"

static PGconn *dc; /* the fixture's database: the C function */
static PGconn *dp; /* OTHER_DB: the plpgsql function */

/* ---- the tables --------------------------------------------------------------------- */

typedef struct {
	const char *name; /* table and table_id */
	const char *pk_type;
	const char *owner_type; /* the owner column's type */
	bool owned;             /* the fence names the owner column */
	const char *soft_type;  /* the soft-delete column's type, NULL: not named */
	const char *const *pks; /* SQL literals, NULL-terminated */
	const char *const *owners;
	const char *const *softs;
} kind;

static const char *const pk_uuid[] = {
        "'e0000000-0000-4000-8000-000000000001'", "'E0000000-0000-4000-8000-000000000002'",
        "'{e0000000-0000-4000-8000-000000000003}'", "'e00000000000400080000000000000004'", NULL};
static const char *const pk_int[] = {"1", "2", "-3", "2147483647", "0", NULL};
static const char *const pk_int8[] = {"1", "9223372036854775807", "-9223372036854775808", "7",
                                      NULL};
static const char *const pk_int2[] = {"1", "-32768", "32767", "5", NULL};
static const char *const pk_text[] = {"'a'",
                                      "'o''brien \"quoted\"'",
                                      "'back\\slash'",
                                      "'\xc3\xa9\xe6\x97\xa5\xe6\x9c\xac'",
                                      "' lead and trail '",
                                      "E'tab\\there'",
                                      "E'new\\nline \\u0001'",
                                      NULL};
static const char *const o_text[] = {"NULL", "'alice'", "'bob \"b\" \\'", "'\xc3\xbcn\xc3\xaf'",
                                     "''",   NULL};
static const char *const o_int8[] = {"NULL", "1", "-9223372036854775808", "0", NULL};
static const char *const o_numeric[] = {"NULL",
                                        "1.50",
                                        "-0.000",
                                        "1e30",
                                        "'NaN'",
                                        "'Infinity'",
                                        "123456789012345678901234567890.123456789",
                                        NULL};
static const char *const o_bool[] = {"NULL", "true", "false", NULL};
static const char *const o_tstz[] = {
        "NULL",        "'2026-01-02 03:04:05.678+02'",    "'infinity'",
        "'-infinity'", "'1999-12-31 23:59:59.999999+00'", "'0044-03-15 12:00+00 BC'",
        NULL};
static const char *const o_float8[] = {
        "NULL",   "1e20", "0.1", "'NaN'", "'-Infinity'", "-0", "1.7976931348623157e308",
        "5e-324", NULL};
static const char *const o_real[] = {"NULL", "1.1", "3.4e38", "'NaN'", NULL};
static const char *const o_dint[] = {"NULL", "0", "17", NULL};
static const char *const o_jsonb[] = {"NULL",      "'null'", "'{\"b\": 1, \"a\": [1, \"x\"]}'",
                                      "'\"str\"'", "'3.10'", "'true'",
                                      "'[]'",      NULL};
static const char *const o_array[] = {"NULL", "'{a,\"b c\",NULL}'", "'{}'", "'{{1,2},{3,4}}'",
                                      NULL};
static const char *const o_uuid[] = {"NULL", "'a0000000-0000-4000-8000-0000000000ff'",
                                     "'{A0000000-0000-4000-8000-0000000000EE}'", NULL};
static const char *const o_bytea[] = {"NULL", "'\\x00ff'", "''", NULL};
static const char *const o_interval[] = {"NULL", "'1 year 2 mons 3 days 04:05:06.7'", "'-1 day'",
                                         "'0'", NULL};
static const char *const o_date[] = {"NULL", "'2026-02-28'", "'infinity'", "'0001-01-01 BC'", NULL};
static const char *const o_ts[] = {"NULL", "'2026-02-28 01:02:03.456'", "'-infinity'", NULL};
static const char *const o_pair[] = {"NULL", "ROW(1, 'x')::fence_pair",
                                     "ROW(NULL, 'q\"')::fence_pair", NULL};
/* a regclass prints its schema unless the search_path sees it: the plpgsql function's
 * pinned path did not see public */
static const char *const o_regclass[] = {"NULL", "'pg_class'", "'public.k_plain'",
                                         "'synchro.row_fences'", NULL};
static const char *const s_tstz[] = {"NULL", "NULL", "'2026-03-01 00:00+00'", NULL};
static const char *const s_jsonb[] = {"NULL", "'null'", "'1'", "'{}'", NULL};

static const kind kinds[] = {
        {"k_uuid", "uuid", "text", true, "timestamptz", pk_uuid, o_text, s_tstz},
        {"k_int4", "integer", "bigint", true, "timestamptz", pk_int, o_int8, s_tstz},
        {"k_int8", "bigint", "numeric", true, NULL, pk_int8, o_numeric, s_tstz},
        {"k_int2", "smallint", "boolean", true, "timestamptz", pk_int2, o_bool, s_tstz},
        {"k_text", "text", "timestamptz", true, "timestamptz", pk_text, o_tstz, s_tstz},
        {"k_varchar", "varchar(40)", "double precision", true, NULL, pk_text, o_float8, s_tstz},
        {"k_domain", "fence_dtext", "fence_dint", true, "timestamptz", pk_text, o_dint, s_tstz},
        {"k_jsonb", "integer", "jsonb", true, NULL, pk_int, o_jsonb, s_tstz},
        {"k_array", "text", "text[]", true, NULL, pk_text, o_array, s_tstz},
        {"k_uuid2", "uuid", "uuid", true, "timestamptz", pk_uuid, o_uuid, s_tstz},
        {"k_bytea", "bigint", "bytea", true, NULL, pk_int8, o_bytea, s_tstz},
        {"k_interval", "integer", "interval", true, "timestamptz", pk_int, o_interval, s_tstz},
        {"k_date", "text", "date", true, NULL, pk_text, o_date, s_tstz},
        {"k_ts", "smallint", "timestamp", true, "timestamptz", pk_int2, o_ts, s_tstz},
        {"k_real", "integer", "real", true, NULL, pk_int, o_real, s_tstz},
        {"k_pair", "integer", "fence_pair", true, NULL, pk_int, o_pair, s_tstz},
        {"k_plain", "text", "text", false, NULL, pk_text, o_text, s_tstz},
        {"k_softjson", "integer", "text", true, "jsonb", pk_int, o_text, s_jsonb},
        {"k_regclass", "integer", "regclass", true, NULL, pk_int, o_regclass, s_tstz},
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

static size_t count_of(const char *const *v)
{
	size_t n = 0;
	while (v[n] != NULL)
		n++;
	return n;
}

/* ---- comparing the two sides -------------------------------------------------------- */

static unsigned long long rng = 0x2545f4914f6cdd1dULL;

static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static const char *pick(const char *const *v)
{
	return v[rnd((unsigned)count_of(v))];
}

/* Counts over the whole run, so that the comparisons are shown to compare something. */
static struct {
	long statements, errors, messages, sy001, sy006, sy010, bad_uuid, dup, owner_changes;
} seen;

/* One statement's outcome as a comparable string: its status and rows, or its error's
 * fields. Returns whether it succeeded. */
static bool outcome(PGconn *c, const char *sql, char *out, size_t size)
{
	PGresult *r = PQexec(c, sql);
	ExecStatusType s = PQresultStatus(r);
	bool ok = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
	if (ok) {
		snprintf(out, size, "ok %s", PQcmdStatus(r));
	} else {
		static const int fields[] = {
		        PG_DIAG_SQLSTATE,     PG_DIAG_MESSAGE_PRIMARY, PG_DIAG_MESSAGE_DETAIL,
		        PG_DIAG_MESSAGE_HINT, PG_DIAG_SCHEMA_NAME,     PG_DIAG_TABLE_NAME,
		        PG_DIAG_COLUMN_NAME,  PG_DIAG_CONSTRAINT_NAME, PG_DIAG_DATATYPE_NAME};
		size_t len = (size_t)snprintf(out, size, "error");
		for (size_t i = 0; i < sizeof fields / sizeof fields[0] && len < size; i++) {
			const char *f = PQresultErrorField(r, fields[i]);
			len += (size_t)snprintf(out + len, size - len, " | %s", f ? f : "-");
		}
	}
	PQclear(r);
	return ok;
}

/* A not-null refusal of row_fences shows the failing row: its source_xid and updated_at
 * (after the version) become runs of '#'. */
static void mask_failing_row(char *s)
{
	char *p = strstr(s, "Failing row contains (");
	if (p == NULL || (p = strstr(p, ", V, ")) == NULL)
		return;
	char *w = p;
	for (; *p && *p != ')'; p++)
		if (!isdigit((unsigned char)*p) || !isdigit((unsigned char)p[1]))
			*w++ = isdigit((unsigned char)*p) ? '#' : *p;
	memmove(w, p, strlen(p) + 1);
}

/* Replaces, in place, every run of exactly 32 lowercase hex digits by "V", the digits of
 * source_xid[xid8]:'N' by X and the value of updated_at[...]:'...' by T. */
static void mask(char *s)
{
	char *w = s;
	for (char *p = s; *p;) {
		size_t n = 0;
		while (isxdigit((unsigned char)p[n]) && !isupper((unsigned char)p[n]))
			n++;
		if (n == 32 && (p == s || !isxdigit((unsigned char)p[-1]))) {
			*w++ = 'V';
			p += n;
			continue;
		}
		if (n > 0) {
			memmove(w, p, n);
			w += n;
			p += n;
			continue;
		}
		static const char xid[] = "source_xid[xid8]:";
		static const char upd[] = "updated_at[timestamp with time zone]:'";
		if (strncmp(p, xid, sizeof xid - 1) == 0) {
			memmove(w, p, sizeof xid - 1);
			w += sizeof xid - 1;
			p += sizeof xid - 1;
			bool quoted = *p == '\'';
			p += quoted;
			while (isdigit((unsigned char)*p))
				p++;
			p += quoted && *p == '\'';
			*w++ = 'X';
			continue;
		}
		if (strncmp(p, upd, sizeof upd - 1) == 0) {
			memmove(w, p, sizeof upd - 1);
			w += sizeof upd - 1;
			p += sizeof upd - 1;
			while (*p && *p != '\'')
				p++;
			*w++ = 'T';
			continue;
		}
		*w++ = *p++;
	}
	*w = '\0';
}

/* The changes of c's slot since the last call, one per line, checked: each 'synchro' message
 * carries the version its fence row (the row_fences change just before it) received. */
static char *changes(PGconn *c, const char *side)
{
	PGresult *r =
	        PQexec(c, c == dc ? "SELECT data FROM pg_logical_slot_get_changes('" SLOT_C
	                            "', NULL, NULL, 'include-xids', '0', 'skip-empty-xacts', '1')"
	                          : "SELECT data FROM pg_logical_slot_get_changes('" SLOT_P
	                            "', NULL, NULL, 'include-xids', '0', 'skip-empty-xacts', '1')");
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		fprintf(stderr, "%s: reading the slot: %s", side, PQerrorMessage(c));
		CU_FAIL("the slot could not be read");
		PQclear(r);
		return strdup("");
	}
	size_t size = 1, n = (size_t)PQntuples(r);
	for (size_t i = 0; i < n; i++)
		size += strlen(PQgetvalue(r, (int)i, 0)) + 1;
	char *all = malloc(size);
	CU_ASSERT_PTR_NOT_NULL_FATAL(all);
	all[0] = '\0';
	char last_fence_version[33] = "";
	for (size_t i = 0; i < n; i++) {
		const char *d = PQgetvalue(r, (int)i, 0);
		const char *v = strstr(d, "version[text]:'");
		if (strncmp(d, "table synchro.row_fences:", 25) == 0 && v != NULL) {
			snprintf(last_fence_version, sizeof last_fence_version, "%.32s", v + 15);
		} else if (strstr(d, "prefix: synchro, ") != NULL) {
			const char *mv = strstr(d, "\"version\": \"");
			bool same = mv != NULL && last_fence_version[0] != '\0' &&
			            strncmp(mv + 12, last_fence_version, 32) == 0 && mv[44] == '"';
			if (!same)
				fprintf(stderr,
				        "%s: a message without its fence row's version: %s\n", side,
				        d);
			CU_ASSERT_TRUE(same);
			last_fence_version[0] = '\0';
			if (strcmp(side, "C") == 0)
				seen.messages++;
		}
		strcat(all, d);
		strcat(all, "\n");
	}
	PQclear(r);
	mask(all);
	return all;
}

static bool same_text(const char *what, const char *sql, const char *a, const char *b)
{
	bool same = strcmp(a, b) == 0;
	if (!same)
		fprintf(stderr, "%s differ after: %s\n  C:       %s\n  plpgsql: %s\n", what, sql, a,
		        b);
	CU_ASSERT_TRUE(same);
	return same;
}

/* The fences this transaction wrote, with source_xid and updated_at checked to be its own. */
static const char own_fences[] =
        "SELECT coalesce(string_agg(table_id || '/' || pk || '/' || state || '/'"
        " || coalesce(mutation_id::text, '-') || '/' || coalesce(client_id::text, '-') || '/'"
        " || coalesce(user_id, '-') || '/' || (source_lsn IS NULL)::text || '/'"
        " || (updated_at = pg_catalog.now())::text || '/' || (version ~ '^[0-9a-f]{12}4[0-9a-f]{3}"
        "[89ab][0-9a-f]{15}$')::text, ',' ORDER BY table_id, pk), '')"
        " FROM synchro.row_fences WHERE source_xid = pg_catalog.pg_current_xact_id()";

static char *value_of(PGconn *c, const char *sql)
{
	char *v = pgt_value(c, sql, 0, NULL);
	return v ? v : strdup("<null>");
}

/* Runs one transaction of statements on both sides; compares each statement's outcome,
 * the fences it wrote and, after it ends, the slot's changes. */
static void both(const char *const *stmts, size_t n)
{
	char a[4096], b[4096];
	bool ok = true;
	pgt_exec(dc, "BEGIN");
	pgt_exec(dp, "BEGIN");
	for (size_t i = 0; i < n && ok; i++) {
		bool oa = outcome(dc, stmts[i], a, sizeof a);
		bool ob = outcome(dp, stmts[i], b, sizeof b);
		mask(a);
		mask(b);
		mask_failing_row(a);
		mask_failing_row(b);
		same_text("outcomes", stmts[i], a, b);
		seen.statements++;
		ok = oa && ob;
		if (!oa) {
			seen.errors++;
			seen.sy001 += strstr(a, "error | SY001") != NULL;
			seen.sy006 += strstr(a, "error | SY006") != NULL;
			seen.sy010 += strstr(a, "error | SY010") != NULL;
			seen.bad_uuid += strstr(a, "error | 22P02") != NULL;
			seen.dup += strstr(a, "error | 23505") != NULL;
		}
	}
	if (ok) {
		char *fa = value_of(dc, own_fences), *fb = value_of(dp, own_fences);
		same_text("fences written", stmts[n - 1], fa, fb);
		CU_ASSERT_PTR_NULL(strstr(fa, "/false"));
		free(fa);
		free(fb);
	}
	pgt_exec(dc, ok ? "COMMIT" : "ROLLBACK");
	pgt_exec(dp, ok ? "COMMIT" : "ROLLBACK");
	char *ca = changes(dc, "C"), *cb = changes(dp, "plpgsql");
	same_text("decoded changes", stmts[n - 1], ca, cb);
	free(ca);
	free(cb);
}

static void both1(const char *sql)
{
	both(&sql, 1);
}

static void must_both(const char *sql)
{
	pgt_must(dc, sql);
	pgt_must(dp, sql);
}

/* ---- the generated transactions ----------------------------------------------------- */

static const char *uuid_setting(void)
{
	static const char *const v[] = {NULL,
	                                NULL,
	                                "a1000000-0000-4000-8000-000000000001",
	                                "A1000000-0000-4000-8000-00000000000B",
	                                "{a1000000-0000-4000-8000-000000000002}",
	                                "a1000000000040008000000000000003",
	                                "",
	                                "not-a-uuid"};
	return v[rnd(sizeof v / sizeof v[0])];
}

static void set_local(char *out, size_t size, const char *name, const char *value)
{
	if (value == NULL)
		snprintf(out, size, "SELECT 1");
	else
		snprintf(out, size, "SELECT set_config('%s', '%s', true)", name, value);
}

static void one_transaction(void)
{
	const kind *k = &kinds[rnd(NKINDS)];
	static char buf[8][1024];
	const char *stmts[8];
	size_t n = 0;
	static const char *const users[] = {NULL, NULL, "alice", "o'brien \"q\" \\ \xc3\xa9", ""};
	static const char *const resurrect[] = {NULL, NULL, "on", "off", "ON"};
	const char *user = users[rnd(5)], *nr = resurrect[rnd(5)];
	set_local(buf[n], sizeof buf[n], "synchro.mutation_id", uuid_setting());
	stmts[n] = buf[n];
	n++;
	set_local(buf[n], sizeof buf[n], "synchro.client_id", uuid_setting());
	stmts[n] = buf[n];
	n++;
	if (user != NULL) {
		/* the quote doubled for SQL */
		char q[64];
		size_t j = 0;
		for (const char *p = user; *p && j + 2 < sizeof q; p++) {
			if (*p == '\'')
				q[j++] = '\'';
			q[j++] = *p;
		}
		q[j] = '\0';
		set_local(buf[n], sizeof buf[n], "synchro.user_id", q);
	} else {
		set_local(buf[n], sizeof buf[n], "synchro.user_id", NULL);
	}
	stmts[n] = buf[n];
	n++;
	set_local(buf[n], sizeof buf[n], "synchro.no_resurrection", nr);
	stmts[n] = buf[n];
	n++;
	unsigned ops = 1 + rnd(3);
	for (unsigned i = 0; i < ops; i++, n++) {
		const char *pk = pick(k->pks), *pk2 = pick(k->pks);
		const char *owner = pick(k->owners), *soft = pick(k->softs);
		char *s = buf[n];
		size_t sz = sizeof buf[n];
		switch (rnd(10)) {
		case 0:
		case 1:
			snprintf(s, sz,
			         "INSERT INTO %s (id, owner, note, deleted_at) VALUES (%s, %s, "
			         "'n', %s)",
			         k->name, pk, owner, soft);
			break;
		case 2:
			snprintf(s, sz, "UPDATE %s SET note = note || 'x' WHERE id = %s", k->name,
			         pk);
			break;
		case 3:
			snprintf(s, sz, "UPDATE %s SET owner = %s WHERE id = %s", k->name, owner,
			         pk);
			seen.owner_changes++;
			break;
		case 4:
			snprintf(s, sz, "UPDATE %s SET id = %s WHERE id = %s", k->name, pk2, pk);
			break;
		case 5:
			snprintf(s, sz, "UPDATE %s SET deleted_at = %s WHERE id = %s", k->name,
			         soft, pk);
			break;
		case 6: snprintf(s, sz, "DELETE FROM %s WHERE id = %s", k->name, pk); break;
		case 7:
			snprintf(s, sz, "UPDATE %s SET note = 'all', owner = %s", k->name, owner);
			break;
		case 8:
			snprintf(s, sz,
			         "INSERT INTO %s (id, owner, note, deleted_at) VALUES (%s, %s, "
			         "'m', %s),"
			         " (%s, %s, 'm', NULL)",
			         k->name, pk, owner, soft, pk2, pick(k->owners));
			break;
		default:
			snprintf(s, sz,
			         "INSERT INTO %s AS t (id, owner, note) VALUES (%s, %s, 'u')"
			         " ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner,"
			         " note = t.note || 'u'",
			         k->name, pk, owner);
			break;
		}
		stmts[n] = s;
	}
	both(stmts, n);
}

static void test_generated(void)
{
	static const char *const phases[] = {
	        "SET TimeZone = 'UTC'; SET extra_float_digits = 1; SET IntervalStyle = 'postgres';"
	        " SET bytea_output = 'hex'",
	        "SET TimeZone = 'America/New_York'; SET extra_float_digits = 0;"
	        " SET IntervalStyle = 'iso_8601'; SET bytea_output = 'escape';"
	        " SET DateStyle = 'German, DMY'",
	        "SET TimeZone = 'Asia/Kolkata'; SET extra_float_digits = 3;"
	        " SET IntervalStyle = 'sql_standard'; SET DateStyle = 'SQL, MDY'",
	        "SET TimeZone = '+01:30'; SET extra_float_digits = -15;"
	        " SET IntervalStyle = 'postgres_verbose'; RESET DateStyle",
	};
	for (size_t p = 0; p < sizeof phases / sizeof phases[0]; p++) {
		must_both(phases[p]);
		for (int i = 0; i < 400; i++)
			one_transaction();
	}
	must_both("RESET ALL; SET client_min_messages = warning");
	static const char all_fences[] =
	        "SELECT string_agg(table_id || '/' || pk || '/' || state || '/'"
	        " || coalesce(mutation_id::text, '-') || '/' || coalesce(client_id::text, '-')"
	        " || '/' || coalesce(user_id, '-') || '/' || (source_lsn IS NULL)::text, ','"
	        " ORDER BY table_id, pk) FROM synchro.row_fences";
	char *fa = value_of(dc, all_fences), *fb = value_of(dp, all_fences);
	same_text("fences", "the generated transactions", fa, fb);
	free(fa);
	free(fb);
	fprintf(stderr,
	        "generated: %ld statements, %ld errors (SY001 %ld, SY006 %ld, 22P02 %ld,"
	        " 23505 %ld), %ld fence messages\n",
	        seen.statements, seen.errors, seen.sy001, seen.sy006, seen.bad_uuid, seen.dup,
	        seen.messages);
	/* Every kind of outcome occurred, often: the comparisons can fail. */
	CU_ASSERT(seen.messages > 1000);
	CU_ASSERT(seen.sy001 > 10);
	CU_ASSERT(seen.sy006 > 5);
	CU_ASSERT(seen.bad_uuid > 20);
	CU_ASSERT(seen.dup > 20);
}

/* ---- refusals outside the generated runs -------------------------------------------- */

/* The same DDL on both sides, FN standing for the side's fence function. */
static void ddl_both(const char *fmt)
{
	char a[2048], b[2048];
	const char *at = strstr(fmt, "FN");
	CU_ASSERT_PTR_NOT_NULL_FATAL(at);
	snprintf(a, sizeof a, "%.*ssynchro.version_fence%s", (int)(at - fmt), fmt, at + 2);
	snprintf(b, sizeof b, "%.*ssynchro.version_fence_plpgsql%s", (int)(at - fmt), fmt, at + 2);
	pgt_must(dc, a);
	pgt_must(dp, b);
}

static void test_refusals(void)
{
	must_both("CREATE TABLE cfg (id int PRIMARY KEY, owner text, deleted_at timestamptz)");
	/* installed otherwise than install_fence_trigger installs it */
	static const char *const shapes[] = {
	        "CREATE TRIGGER f BEFORE INSERT ON cfg FOR EACH ROW EXECUTE FUNCTION FN('cfg', "
	        "'id',"
	        " '', '')",
	        "CREATE TRIGGER f AFTER INSERT ON cfg FOR EACH STATEMENT EXECUTE FUNCTION FN('cfg',"
	        " 'id', '', '')",
	        "CREATE TRIGGER f AFTER INSERT ON cfg FOR EACH ROW EXECUTE FUNCTION FN('cfg', 'id',"
	        " '')",
	        "CREATE TRIGGER f AFTER INSERT ON cfg FOR EACH ROW EXECUTE FUNCTION FN()",
	        "CREATE TRIGGER f AFTER INSERT ON cfg FOR EACH ROW EXECUTE FUNCTION FN('', 'id', "
	        "'',"
	        " '')",
	        "CREATE TRIGGER f AFTER INSERT ON cfg FOR EACH ROW EXECUTE FUNCTION FN('cfg', '', "
	        "'',"
	        " '')",
	        "CREATE TRIGGER f AFTER INSERT ON cfg FOR EACH ROW EXECUTE FUNCTION FN('cfg', "
	        "'nope',"
	        " '', '')",
	        "CREATE TRIGGER f AFTER INSERT ON cfg FOR EACH ROW EXECUTE FUNCTION FN('cfg', 'id',"
	        " 'gone', '')",
	        "CREATE TRIGGER f AFTER INSERT ON cfg FOR EACH ROW EXECUTE FUNCTION FN('cfg', 'id',"
	        " '', 'gone')",
	        "CREATE TRIGGER f AFTER INSERT ON cfg FOR EACH ROW EXECUTE FUNCTION FN('cfg', 'id',"
	        " 'deleted_at', 'owner', 'extra', 'more')",
	};
	long before = seen.sy010;
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
		ddl_both(shapes[i]);
		both1("INSERT INTO cfg VALUES (1, 'o', NULL)");
		must_both("DROP TRIGGER f ON cfg");
	}
	CU_ASSERT_EQUAL(seen.sy010 - before, 10);

	/* DDL between publishes: the key, soft-delete and owner columns renamed or dropped */
	ddl_both("CREATE TRIGGER synchro_version_fence AFTER INSERT OR UPDATE OR DELETE ON cfg"
	         " FOR EACH ROW EXECUTE FUNCTION FN('cfg', 'id', 'deleted_at', 'owner')");
	both1("INSERT INTO cfg VALUES (1, 'o', NULL)");
	must_both("ALTER TABLE cfg RENAME COLUMN owner TO owner2");
	both1("UPDATE cfg SET deleted_at = now() WHERE id = 1");
	both1("DELETE FROM cfg WHERE id = 1");
	must_both("ALTER TABLE cfg RENAME COLUMN owner2 TO owner");
	must_both("ALTER TABLE cfg RENAME COLUMN deleted_at TO gone_at");
	both1("UPDATE cfg SET owner = 'p' WHERE id = 1");
	both1("DELETE FROM cfg WHERE id = 1"); /* a hard delete does not read it */
	must_both("ALTER TABLE cfg DROP COLUMN gone_at");
	both1("INSERT INTO cfg VALUES (2, 'o')");
	must_both("ALTER TABLE cfg ADD COLUMN deleted_at timestamptz");
	both1("INSERT INTO cfg VALUES (3, 'o', NULL)");
	must_both("ALTER TABLE cfg RENAME COLUMN id TO key");
	both1("INSERT INTO cfg VALUES (4, 'o', NULL)");
	must_both("ALTER TABLE cfg DROP COLUMN owner");
	both1("DELETE FROM cfg");
	CU_ASSERT(seen.sy010 - before >= 16);

	/* a NULL key under a unique index that allows it: row_fences refuses the NULL */
	ddl_both("CREATE TABLE nk (id text UNIQUE, owner text);"
	         "CREATE TRIGGER synchro_version_fence AFTER INSERT OR UPDATE OR DELETE ON nk"
	         " FOR EACH ROW EXECUTE FUNCTION FN('nk', 'id', '', 'owner')");
	both1("INSERT INTO nk VALUES (NULL, 'o')");
	both1("INSERT INTO nk VALUES ('k', NULL)");
	both1("UPDATE nk SET id = NULL WHERE id = 'k'");
	/* the table_id and key quoted in messages as given */
	ddl_both("CREATE TABLE \"we\"\"ird\" (id text PRIMARY KEY, deleted_at timestamptz);"
	         "CREATE TRIGGER synchro_version_fence AFTER INSERT OR UPDATE OR DELETE ON"
	         " \"we\"\"ird\" FOR EACH ROW EXECUTE FUNCTION FN('t%s \"x\"', 'id', 'deleted_at',"
	         " '')");
	both1("INSERT INTO \"we\"\"ird\" VALUES ('%d', NULL)");
	both1("UPDATE \"we\"\"ird\" SET id = '%s' WHERE id = '%d'");
	both1("DELETE FROM \"we\"\"ird\"");
	const char *resurrect[] = {"SELECT set_config('synchro.no_resurrection', 'on', true)",
	                           "INSERT INTO \"we\"\"ird\" VALUES ('%d', NULL)"};
	both(resurrect, 2);
	/* outside a trigger */
	char a[1024], b[1024];
	outcome(dc, "SELECT synchro.version_fence()", a, sizeof a);
	outcome(dp, "SELECT synchro.version_fence_plpgsql()", b, sizeof b);
	same_text("outcomes", "a call outside a trigger", a, b);
}

/* A caller's search_path with its own text = and its own row_fences changes nothing: the C
 * function names its schema, functions and operators (the plpgsql one pinned its path). */
static void test_search_path(void)
{
	must_both("CREATE SCHEMA blind;"
	          "CREATE FUNCTION blind.never(text, text) RETURNS boolean"
	          " LANGUAGE sql IMMUTABLE AS 'SELECT false';"
	          "CREATE OPERATOR blind.= (LEFTARG = text, RIGHTARG = text,"
	          " FUNCTION = blind.never);"
	          "CREATE TABLE blind.row_fences (LIKE synchro.row_fences);"
	          "CREATE FUNCTION blind.now() RETURNS timestamptz LANGUAGE sql"
	          " AS $$SELECT '2000-01-01'::timestamptz$$;"
	          "SET search_path = blind, pg_catalog, public");
	both1("INSERT INTO k_text (id, owner, note) VALUES ('blind', NULL, 'b')");
	both1("UPDATE k_text SET deleted_at = '2026-01-01' WHERE id = 'blind'");
	const char *again[] = {"SELECT set_config('synchro.no_resurrection', 'on', true)",
	                       "DELETE FROM k_text WHERE id = 'blind'",
	                       "INSERT INTO k_text (id, note) VALUES ('blind', 'b')"};
	both(again, 3);
	CU_ASSERT_EQUAL(pgt_int(dc, "SELECT count(*) FROM blind.row_fences", 0, NULL), 0);
	must_both("RESET search_path; DROP SCHEMA blind CASCADE");
}

/* The fixture's database runs the C function, through the triggers install_fence_trigger
 * made, under the declaration migration 20 gave it. */
static void test_declaration(void)
{
	char *v = pgt_value(
	        dc,
	        "SELECT l.lanname || ' ' || p.prosecdef || ' '"
	        " || pg_get_userbyid(p.proowner) || ' ' || coalesce(p.proconfig::text, '-')"
	        " || ' ' || coalesce(p.proacl::text, '-')"
	        " FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang"
	        " WHERE p.oid = 'synchro.version_fence()'::regprocedure",
	        0, NULL);
	CU_ASSERT_STRING_EQUAL(v ? v : "",
	                       "c true synchro_owner - {synchro_owner=X/synchro_owner}");
	free(v);
	pgt_exec(dc, "CREATE TABLE inst (id uuid PRIMARY KEY, owner text, deleted_at timestamptz);"
	             "SELECT synchro.install_fence_trigger('inst', 'inst', 'id', 'deleted_at',"
	             " 'owner')");
	CU_ASSERT_EQUAL(pgt_int(dc,
	                        "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'inst'::regclass"
	                        " AND tgfoid = 'synchro.version_fence()'::regprocedure",
	                        0, NULL),
	                1);
	pgt_exec(dc, "DROP TABLE inst; DELETE FROM synchro.row_fences WHERE table_id = 'inst'");
	char *drop = changes(dc, "C");
	free(drop);
}

/* ---- setup -------------------------------------------------------------------------- */

/* The last plpgsql definition of synchro.version_fence in the migrations, renamed. */
static char *plpgsql_fence(void)
{
	const char *body = NULL;
	for (size_t i = 0; i < sy_sql_migration_count; i++) {
		const char *sql = sy_sql_migrations[i].sql;
		const char *p = strstr(sql, "FUNCTION synchro.version_fence() RETURNS trigger\n"
		                            "LANGUAGE plpgsql");
		if (p != NULL)
			body = p;
	}
	if (body == NULL)
		return NULL;
	const char *end = strstr(body, "\n$fn$;");
	if (end == NULL)
		return NULL;
	const char *name_end = body + strlen("FUNCTION synchro.version_fence");
	size_t size = (size_t)(end - body) + 256;
	char *out = malloc(size);
	if (out != NULL)
		snprintf(out, size,
		         "SET ROLE synchro_owner; CREATE FUNCTION "
		         "synchro.version_fence_plpgsql%.*s\n"
		         "$fn$; REVOKE ALL ON FUNCTION synchro.version_fence_plpgsql() FROM PUBLIC;"
		         " RESET ROLE",
		         (int)(end - name_end), name_end);
	return out;
}

static void setup_side(PGconn *c, const char *fn, const char *slot)
{
	pgt_must(c, "SET client_min_messages = warning");
	if (pgt_migrate(c, sy_sql_migrations, sy_sql_migration_count) < 0) {
		fprintf(stderr, "the migrations did not apply\n");
		exit(99);
	}
	pgt_must(c, "CREATE DOMAIN fence_dtext AS text CHECK (VALUE <> 'forbidden');"
	            "CREATE DOMAIN fence_dint AS integer CHECK (VALUE >= 0);"
	            "CREATE TYPE fence_pair AS (a integer, b text)");
	for (size_t i = 0; i < NKINDS; i++) {
		const kind *k = &kinds[i];
		char sql[1024];
		snprintf(sql, sizeof sql,
		         "CREATE TABLE %s (id %s PRIMARY KEY, owner %s, note text, deleted_at %s);"
		         "CREATE TRIGGER synchro_version_fence AFTER INSERT OR UPDATE OR DELETE ON "
		         "%s"
		         " FOR EACH ROW EXECUTE FUNCTION %s('%s', 'id', '%s', '%s')",
		         k->name, k->pk_type, k->owner_type,
		         k->soft_type ? k->soft_type : "timestamptz", k->name, fn, k->name,
		         k->soft_type ? "deleted_at" : "", k->owned ? "owner" : "");
		pgt_must(c, sql);
	}
	/* Its own statement: a slot cannot be created in a transaction that wrote. */
	char sql[256];
	snprintf(sql, sizeof sql,
	         "SELECT pg_create_logical_replication_slot('%s', 'test_decoding')", slot);
	pgt_must(c, sql);
}

int main(void)
{
	pgt_require_fixture();
	dc = pgt_connect(NULL);
	pgt_must(dc, "SET client_min_messages = warning");
	/* The two sides' decoded changes are compared line by line, and a statement's rows
	 * come in heap order. An autovacuum worker's snapshot in one database would let HOT
	 * pruning free space on one side only, and a later insert would land elsewhere in the
	 * heap there: no autovacuum in this throwaway cluster. */
	pgt_must(dc, "ALTER SYSTEM SET autovacuum = off");
	pgt_must(dc, "SELECT pg_reload_conf()");
	pgt_must(dc, "CREATE DATABASE " OTHER_DB);
	dp = pgt_connect("dbname=" OTHER_DB);
	setup_side(dc, "synchro.version_fence", SLOT_C);
	char *fence = plpgsql_fence();
	if (fence == NULL) {
		fprintf(stderr, "no plpgsql synchro.version_fence in the migrations\n");
		return 99;
	}
	pgt_must(dp, "SET client_min_messages = warning");
	if (pgt_migrate(dp, sy_sql_migrations, sy_sql_migration_count) !=
	    (int)sy_sql_migration_count) {
		fprintf(stderr, "the migrations did not apply\n");
		return 99;
	}
	pgt_must(dp, fence);
	free(fence);
	/* setup_side migrates again: nothing left to apply */
	setup_side(dp, "synchro.version_fence_plpgsql", SLOT_P);

	static const CU_TestInfo tests[] = {
	        {"the C fence is declared as migration 20 says", test_declaration},
	        {"generated writes: same errors, fences and WAL", test_generated},
	        {"refused configurations and odd keys: the same refusals", test_refusals},
	        {"a caller's search_path changes nothing", test_search_path},
	        {NULL, NULL},
	};
	sy_test_add_suite("version fence", tests);
	int status = sy_test_run();
	pgt_must(dc, "SELECT pg_drop_replication_slot('" SLOT_C "')");
	pgt_must(dp, "SELECT pg_drop_replication_slot('" SLOT_P "')");
	PQfinish(dp);
	pgt_must(dc, "DROP DATABASE " OTHER_DB);
	PQfinish(dc);
	return status;
}
