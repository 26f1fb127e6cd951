/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pull_statements.c: the read side's statement text, built from a manifest's tables
 * (store/pull_internal.h).
 *
 * Layer: base of src/store (doc/hacking.md).
 * Notes: It builds the page statement of POST /v3/pull and the two rebuild statements of
 * each table. It holds the helpers every statement builder of the read side shares: names
 * no earlier statement had, and a column as text. pull_cache.c, pull_page.c, pull_broken.c
 * and rebuild.c call it.
 */
#include "config.h"

#include <stdio.h>

#include "store/pull_internal.h"
#include "synchro/alloc.h"
#include "synchro/pgtypes.h"

/*
 * Most changelog entries one pull reads past its cursor: a caller whose read scope holds few
 * of them (owner-read tables, other users busy) gets an empty page with has_more and a
 * cursor past them, so no request scans an unbounded stretch of others' history.
 */
#define SCAN_BUDGET "10000"

unsigned long sy_store_pull_name_serial(void)
{
	static unsigned long serial;
	return ++serial;
}

char *sy_store_pull_steal(sy_buf *b)
{
	size_t len;
	if (b->failed) {
		sy_buf_free(b);
		return NULL;
	}
	return sy_buf_steal(b, &len);
}

/*
 * A column as text for the statements' common row shape: PostgreSQL's output function,
 * which is what sy_wire_decode_pg_text reads, except bool, whose cast to text spells the
 * word out.
 */
void sy_store_pull_put_value(sy_buf *b, const sy_store_ptab *x, size_t j)
{
	if (x->t->fields[j].type == SY_TYPE_BOOL)
		sy_buf_printf(b, ", left(r.%s::text, 1)", x->cols[j]);
	else
		sy_buf_printf(b, ", r.%s::text", x->cols[j]);
}

void sy_store_pull_put_reads(sy_buf *b, const sy_store_ptab *x, const char *user)
{
	sy_buf_putc(b, '(');
	if (x->owner != NULL)
		sy_buf_printf(b, "r.%s = %s OR ", x->owner, user);
	if (x->h_rel != NULL)
		sy_buf_printf(b,
		              "EXISTS (SELECT 1 FROM %s h JOIN %s m ON m.%s = h.%s"
		              " WHERE h.%s = r.%s AND m.%s = %s))",
		              x->h_rel, x->m_rel, x->m_match, x->h_col, x->h_key, x->hop_col,
		              x->m_user, user);
	else
		sy_buf_printf(b, "EXISTS (SELECT 1 FROM %s m WHERE m.%s = r.%s AND m.%s = %s))",
		              x->m_rel, x->m_match, x->hop_col, x->m_user, user);
}

/*
 * The changelog entry's key as a value of the table's key type, or NULL when it is not one:
 * a damaged or forged entry must not make the statement of every pull fail on its cast
 * (PostgreSQL 15 has no pg_input_is_valid). The guards accept exactly what the cast does
 * for the canonical text the fence trigger writes; CASE evaluates the cast only after them.
 */
static void put_entry_key(sy_buf *b, sy_type t)
{
	/* Digits short enough are always in range: only the longest ones pay for numeric. */
	switch (t) {
	case SY_TYPE_INT32:
		sy_buf_puts(b, "CASE WHEN p.pk ~ '^-?[0-9]{1,9}$' THEN p.pk::int4"
		               " WHEN p.pk ~ '^-?[0-9]{10}$' AND p.pk::numeric BETWEEN"
		               " -2147483648 AND 2147483647 THEN p.pk::int4 END");
		break;
	case SY_TYPE_INT64:
		sy_buf_puts(b, "CASE WHEN p.pk ~ '^-?[0-9]{1,18}$' THEN p.pk::int8"
		               " WHEN p.pk ~ '^-?[0-9]{19}$' AND p.pk::numeric BETWEEN"
		               " -9223372036854775808 AND 9223372036854775807 THEN p.pk::int8 END");
		break;
	case SY_TYPE_UUID:
		sy_buf_puts(b, "CASE WHEN p.pk ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
		               "[0-9a-f]{12}$' THEN p.pk::uuid END");
		break;
	default: sy_buf_puts(b, "p.pk"); break;
	}
}

/*
 * The page statement of a manifest. $1 client, $2 user, $3/$4 cursor, $5 limit, $6 tables
 * read by all, $7 tables read by owner, $8 broken tables, $9 tables read by members (only
 * when the manifest has some: else the statement is the one of manifests before members
 * scopes, and a members table's branch alone pays for the check below). A members table's
 * change is in the caller's scope (in_scope) when the entry names the caller as its owner or
 * a reader after it, and the caller reads the current row now: a row written after the
 * caller left its scope never reaches the caller, wherever the pages fall. The window holds the
 * first limit + 1 entries after the cursor, among the next SCAN_BUDGET, that concern the caller
 * (synchro.pull_window of migration 6, an ordered scan whatever the planner thinks); of the first
 * limit, the latest entry per row is joined with the row's fence and source row, one UNION ALL
 * branch per table. One statement, one snapshot: horizon, window and rows agree.
 */
bool sy_store_pull_build_page_sql(sy_store_pull *p, sy_error *err)
{
	sy_buf b = SY_BUF_INIT;
	sy_buf_puts(&b,
	            "WITH win0 AS MATERIALIZED ("
	            " SELECT * FROM synchro.pull_window($3::pg_lsn, $4::integer, $2, $6::text[],"
	            "                                   $7::text[], ");
	if (p->members_tables != NULL)
		sy_buf_puts(&b, "$9::text[], ");
	sy_buf_puts(
	        &b,
	        "$5::integer + 1, " SCAN_BUDGET ")),"
	        /* The window ends before the first entry whose source is not visible yet. */
	        " cut AS (SELECT commit_lsn, ordinal,"
	        "                CASE WHEN table_id = ANY ($8::text[]) THEN table_id END AS broken"
	        "           FROM win0 WHERE NOT visible OR table_id = ANY ($8::text[])"
	        "          ORDER BY commit_lsn, ordinal LIMIT 1),"
	        " win AS MATERIALIZED ("
	        " SELECT w.* FROM win0 w WHERE NOT EXISTS (SELECT 1 FROM cut"
	        "   WHERE (w.commit_lsn, w.ordinal) >= (cut.commit_lsn, cut.ordinal))),"
	        " pick AS MATERIALIZED ("
	        " SELECT DISTINCT ON (w.table_id, w.pk) w.*"
	        "   FROM (SELECT * FROM win ORDER BY commit_lsn, ordinal LIMIT $5::integer) w"
	        "  ORDER BY w.table_id, w.pk, w.commit_lsn DESC, w.ordinal DESC),"
	        " m AS ("
	        " SELECT " SY_STORE_GATE_COLS
	        ", (SELECT count(*) FROM win), lw.commit_lsn, lw.ordinal,"
	        "        bw.commit_lsn, bw.ordinal, EXISTS (SELECT 1 FROM cut), wl.commit_lsn,"
	        "        wl.ordinal, (SELECT broken FROM cut)" SY_STORE_GATE_FROM
	        "   LEFT JOIN (SELECT commit_lsn, ordinal FROM win ORDER BY commit_lsn, ordinal"
	        "               OFFSET $5::integer - 1 LIMIT 1) lw ON true"
	        /* Only when the window is short: a one-time filter skips the call else. */
	        "   LEFT JOIN (SELECT * FROM synchro.changelog_nth_after($3::pg_lsn, $4::integer,"
	        "                                                      " SCAN_BUDGET ")"
	        "               WHERE (SELECT count(*) FROM win) <= $5::integer"
	        "                 AND NOT EXISTS (SELECT 1 FROM cut)) bw ON true"
	        "   LEFT JOIN (SELECT commit_lsn, ordinal FROM win ORDER BY commit_lsn DESC,"
	        "               ordinal DESC LIMIT 1) wl ON true),"
	        " ch AS (");
	bool first = true;
	for (size_t i = 0; i < p->m->table_count; i++) {
		const sy_store_ptab *x = &p->tabs[i];
		if (x->broken)
			continue; /* its entries stop the window (cut) */
		sy_buf_printf(&b,
		              "%s SELECT %zu AS ti, p.commit_lsn, p.ordinal, p.pk, p.version,"
		              " CASE WHEN p.client_id = $1::uuid THEN p.mutation_id END AS mid,"
		              " p.owner_after, f.version AS fv, r.%s IS NOT NULL AS has_row",
		              first ? "" : " UNION ALL", i, x->pk);
		first = false;
		if (x->members_scope) {
			sy_buf_puts(&b, ", (p.owner_after = $2 OR p.reader_after) AND ");
			sy_store_pull_put_reads(&b, x, "$2::text");
			sy_buf_puts(&b, " AS in_scope");
		} else {
			sy_buf_puts(&b, ", NULL::boolean AS in_scope");
		}
		for (size_t j = 0; j < p->maxf; j++) {
			if (j < x->t->field_count)
				sy_store_pull_put_value(&b, x, j);
			else
				sy_buf_puts(&b, ", NULL::text");
		}
		/* Each entry's fence and row are looked up by their keys (LATERAL, OFFSET 0: see
		 * put_fence_lateral), whatever the plan thinks of the tables' sizes. */
		sy_buf_printf(&b,
		              " FROM pick p"
		              " LEFT JOIN LATERAL (SELECT f.version FROM synchro.row_fences f"
		              " WHERE f.table_id = %s AND f.pk = p.pk OFFSET 0) f ON true"
		              " LEFT JOIN LATERAL (SELECT * FROM %s r WHERE r.%s = ",
		              x->lit, x->rel, x->pk);
		put_entry_key(&b, x->t->pk.type);
		sy_buf_printf(&b, " OFFSET 0) r ON true WHERE p.table_id = %s", x->lit);
	}
	if (first) {
		/* Every table is broken: a branch of the same shape and no row. */
		sy_buf_puts(&b,
		            " SELECT NULL::integer AS ti, NULL::pg_lsn AS commit_lsn,"
		            " NULL::integer AS ordinal, NULL, NULL, NULL::uuid, NULL, NULL, NULL,"
		            " NULL::boolean");
		for (size_t j = 0; j < p->maxf; j++)
			sy_buf_puts(&b, ", NULL::text");
		sy_buf_puts(&b, " WHERE false");
	}
	sy_buf_puts(&b, ") SELECT m.*, ch.* FROM m LEFT JOIN ch ON true"
	                " ORDER BY ch.commit_lsn, ch.ordinal");
	sy_free(p->page_sql);
	p->page_sql = sy_store_pull_steal(&b);
	if (p->page_sql == NULL)
		return sy_store_fail(err, SY_STORE_NOMEM, "out of memory") == SY_STORE_OK;
	snprintf(p->page_name, sizeof p->page_name, "sy_pull_page_%lld_%lu", p->version,
	         sy_store_pull_name_serial());
	p->page = (sy_store_stmt)SY_STORE_STMT(p->page_name, p->page_sql,
	                                       p->members_tables != NULL ? 9 : 8);
	return true;
}

/*
 * A table's rows joined with their fences, one fence looked up by its key for each row
 * (OFFSET 0 keeps the subquery apart, so the lookup stays a lookup): the page is an ordered
 * scan of the table's key that stops at its LIMIT whatever the statistics, for every table,
 * read by all, by owner or by members. Without them, after a bulk load, PostgreSQL otherwise
 * guesses a few dozen fences and compares every row with every fence: over 1 s a page of 1,000
 * rows at 20,000 rows, against under 10 ms.
 */
static void put_fence_lateral(sy_buf *b, const sy_store_ptab *x)
{
	sy_buf_printf(b,
	              " FROM %s r JOIN LATERAL (SELECT f.version, f.client_id, f.mutation_id"
	              " FROM synchro.row_fences f WHERE f.table_id = %s AND f.pk = r.%s::text"
	              " OFFSET 0) f ON true",
	              x->rel, x->lit, x->pk);
}

/* A table's rebuild statements: its first page, its page after a key, and the count of the
 * rows they deliver ($1 the caller for an owner- or members-scoped table). */
bool sy_store_rebuild_build_sql(sy_store_ptab *x)
{
	sy_buf cb = SY_BUF_INIT;
	sy_buf_printf(&cb,
	              "SELECT count(*) FROM %s r JOIN synchro.row_fences f"
	              " ON f.table_id = %s AND f.pk = r.%s::text",
	              x->rel, x->lit, x->pk);
	if (x->owner_scope)
		sy_buf_printf(&cb, " WHERE r.%s = $1::text", x->owner);
	if (x->members_scope) {
		sy_buf_puts(&cb, " WHERE ");
		sy_store_pull_put_reads(&cb, x, "$1::text");
	}
	if ((x->count_sql = sy_store_pull_steal(&cb)) == NULL)
		return false;
	x->count = (sy_store_stmt)SY_STORE_STMT(x->count_name, x->count_sql, x->user_scope ? 1 : 0);
	for (int after = 0; after < 2; after++) {
		sy_buf b = SY_BUF_INIT;
		sy_buf_printf(&b,
		              "SELECT r.%s::text, f.version,"
		              " CASE WHEN f.client_id = $1::uuid THEN f.mutation_id END",
		              x->pk);
		for (size_t j = 0; j < x->t->field_count; j++)
			sy_store_pull_put_value(&b, x, j);
		put_fence_lateral(&b, x);
		int n = 3;
		const char *w = " WHERE";
		if (after) {
			sy_buf_printf(&b, "%s r.%s > $%d::%s", w, x->pk, n++,
			              sy_type_pg_name(x->t->pk.type));
			w = " AND";
		}
		if (x->owner_scope)
			sy_buf_printf(&b, "%s r.%s = $%d::text", w, x->owner, n++);
		if (x->members_scope) {
			char user[16];
			snprintf(user, sizeof user, "$%d::text", n++);
			sy_buf_printf(&b, "%s ", w);
			sy_store_pull_put_reads(&b, x, user);
		}
		sy_buf_printf(&b, " ORDER BY r.%s LIMIT $2::integer", x->pk);
		char *sql = sy_store_pull_steal(&b);
		if (sql == NULL)
			return false;
		if (after) {
			x->after_sql = sql;
			x->after = (sy_store_stmt)SY_STORE_STMT(x->after_name, sql, n - 1);
		} else {
			x->first_sql = sql;
			x->first = (sy_store_stmt)SY_STORE_STMT(x->first_name, sql, n - 1);
		}
	}
	return true;
}
