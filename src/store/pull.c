/* SPDX-License-Identifier: BSD-2-Clause */
/* The read side's SQL: /v3/pull pages (changelog window, latest entry per row, current source
 * rows, all in one statement), /v3/rebuild sessions and pages, changelog compaction. */
#include "config.h"

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/prepared.h"
#include "store/pull_broken.h"
#include "store/pull_internal.h"
#include "store/pull.h"
#include "synchro/alloc.h"
#include "synchro/fingerprint.h"
#include "synchro/jcs.h"
#include "synchro/octets.h"
#include "synchro/json.h"
#include "synchro/manifest.h"
#include "synchro/types.h"

/* Reloads of the current manifest (or retries of a racing first page) before giving up. */
#define ATTEMPTS 3
/*
 * Most changelog entries one pull reads past its cursor: a caller whose read scope holds few
 * of them (owner-read tables, other users busy) gets an empty page with has_more and a
 * cursor past them, so no request scans an unbounded stretch of others' history.
 */
#define SCAN_BUDGET "10000"
/* The read-your-writes wait polls with sleeps growing to this. */
#define WAIT_STEP_MAX_MS 10

/* ---- positions, cursors, page tokens ---- */

int sy_store_position_cmp(const sy_store_position *a, const sy_store_position *b)
{
	if (a->lsn != b->lsn)
		return a->lsn < b->lsn ? -1 : 1;
	if (a->ordinal != b->ordinal)
		return a->ordinal < b->ordinal ? -1 : 1;
	return 0;
}

void sy_store_cursor_format(const sy_store_position *p, char out[SY_STORE_CURSOR_LEN + 1])
{
	snprintf(out, SY_STORE_CURSOR_LEN + 1, "c1.%016" PRIx64 ".%08" PRIx32, p->lsn, p->ordinal);
}

/* A lowercase hex digit's value; -1 for anything else (uppercase included). */
static int hexval(char c)
{
	return c >= 'A' && c <= 'F' ? -1 : sy_hex_digit(c);
}

/* n lowercase hex digits as a number; false on anything else. */
static bool hex_number(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		int d = hexval(s[i]);
		if (d < 0)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	*out = v;
	return true;
}

bool sy_store_cursor_parse(const char *s, size_t len, sy_store_position *out)
{
	uint64_t lsn, ord;
	if (len != SY_STORE_CURSOR_LEN || memcmp(s, "c1.", 3) != 0 || s[19] != '.' ||
	    !hex_number(s + 3, 16, &lsn) || !hex_number(s + 20, 8, &ord) || ord > INT32_MAX)
		return false;
	out->lsn = lsn;
	out->ordinal = (uint32_t)ord;
	return true;
}

/* Decodes the lowercase hex s[0..n) into a new NUL-terminated string; NULL when invalid
 * (empty, odd, not lowercase hex, a NUL byte) or out of memory (*nomem). */
static char *unhex(const char *s, size_t n, bool *nomem)
{
	if (n == 0 || n % 2 != 0)
		return NULL;
	char *out = sy_malloc(n / 2 + 1);
	if (out == NULL) {
		*nomem = true;
		return NULL;
	}
	for (size_t i = 0; i < n; i += 2) {
		int hi = hexval(s[i]), lo = hexval(s[i + 1]);
		if (hi < 0 || lo < 0 || (hi | lo) == 0) {
			sy_free(out);
			return NULL;
		}
		out[i / 2] = (char)(hi << 4 | lo);
	}
	out[n / 2] = '\0';
	return out;
}

bool sy_store_page_token_parse(const char *s, size_t len, char **table_id, char **pk, bool *nomem)
{
	*table_id = NULL;
	*pk = NULL;
	*nomem = false;
	if (len < 3 || memcmp(s, "r1.", 3) != 0)
		return false;
	const char *a = s + 3;
	const char *dot = memchr(a, '.', len - 3);
	if (dot == NULL)
		return false;
	*table_id = unhex(a, (size_t)(dot - a), nomem);
	if (*table_id != NULL)
		*pk = unhex(dot + 1, len - (size_t)(dot + 1 - s), nomem);
	if (*pk == NULL) {
		sy_free(*table_id);
		*table_id = NULL;
		return false;
	}
	return true;
}

static void put_hex(sy_buf *out, const char *s)
{
	static const char digits[] = "0123456789abcdef";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		sy_buf_putc(out, digits[*p >> 4]);
		sy_buf_putc(out, digits[*p & 15]);
	}
}

bool sy_store_page_token_format(sy_buf *out, const char *table_id, const char *pk)
{
	sy_buf_puts(out, "r1.");
	put_hex(out, table_id);
	sy_buf_putc(out, '.');
	put_hex(out, pk);
	return !out->failed;
}

/* "X/Y" (pg_lsn text) as a number; false when not that form. */
static bool lsn_parse(const char *s, uint64_t *out)
{
	char *end;
	if (*s == '\0' || *s == '-')
		return false;
	unsigned long long hi = strtoull(s, &end, 16);
	if (*end != '/' || hi > 0xffffffffULL || end[1] == '\0' || end[1] == '-')
		return false;
	unsigned long long lo = strtoull(end + 1, &end, 16);
	if (*end != '\0' || lo > 0xffffffffULL)
		return false;
	*out = (uint64_t)hi << 32 | lo;
	return true;
}

static void lsn_text(uint64_t lsn, char out[24])
{
	snprintf(out, 24, "%" PRIX32 "/%" PRIX32, (uint32_t)(lsn >> 32), (uint32_t)lsn);
}

/* ---- the current manifest and its statements ---- */

static void cache_clear(sy_store_pull *p)
{
	if (p->tabs != NULL && p->m != NULL) {
		for (size_t i = 0; i < p->m->table_count; i++) {
			sy_store_ptab *x = &p->tabs[i];
			sy_free(x->lit);
			sy_free(x->rel);
			sy_free(x->pk);
			sy_free(x->owner);
			if (x->cols != NULL)
				for (size_t j = 0; j < x->t->field_count; j++)
					sy_free(x->cols[j]);
			sy_free(x->cols);
			sy_free(x->first_sql);
			sy_free(x->after_sql);
		}
	}
	sy_free(p->tabs);
	sy_free(p->order);
	sy_free(p->all_tables);
	sy_free(p->owner_tables);
	sy_free(p->page_sql);
	sy_free(p->broken_tables);
	sy_manifest_free(p->m);
	memset(p, 0, sizeof *p);
}

sy_store_pull *sy_store_pull_new(void)
{
	return sy_calloc(1, sizeof(sy_store_pull));
}

void sy_store_pull_free(sy_store_pull *p)
{
	if (p == NULL)
		return;
	cache_clear(p);
	sy_free(p);
}

void sy_store_read_answer_clear(sy_store_read_answer *a)
{
	sy_buf_free(&a->body);
}

static const char *pg_type(sy_type t)
{
	switch (t) {
	case SY_TYPE_INT32: return "int4";
	case SY_TYPE_INT64: return "int8";
	case SY_TYPE_UUID: return "uuid";
	default: return "text";
	}
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

char *sy_store_pull_steal(sy_buf *b)
{
	size_t len;
	if (b->failed) {
		sy_buf_free(b);
		return NULL;
	}
	return sy_buf_steal(b, &len);
}

static char *quote_literal(PGconn *c, const char *s, sy_error *err)
{
	char *q = PQescapeLiteral(c, s, strlen(s));
	if (q == NULL) {
		sy_store_fail(err, SY_STORE_INVALID, "cannot quote a table_id");
		return NULL;
	}
	char *out = sy_strndup(q, strlen(q));
	PQfreemem(q);
	if (out == NULL)
		sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	return out;
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

/* The rebuild statements of one table: $1 client, $2 limit, then [$3 after] and the user. */
static bool build_rebuild_sql(sy_store_ptab *x)
{
	for (int after = 0; after < 2; after++) {
		sy_buf b = SY_BUF_INIT;
		sy_buf_printf(&b,
		              "SELECT r.%s::text, f.version,"
		              " CASE WHEN f.client_id = $1::uuid THEN f.mutation_id END",
		              x->pk);
		for (size_t j = 0; j < x->t->field_count; j++)
			sy_store_pull_put_value(&b, x, j);
		sy_buf_printf(&b,
		              " FROM %s r JOIN synchro.row_fences f"
		              " ON f.table_id = %s AND f.pk = r.%s::text",
		              x->rel, x->lit, x->pk);
		int n = 3;
		const char *w = " WHERE";
		if (after) {
			sy_buf_printf(&b, "%s r.%s > $%d::%s", w, x->pk, n++,
			              pg_type(x->t->pk.type));
			w = " AND";
		}
		if (x->owner_scope)
			sy_buf_printf(&b, "%s r.%s = $%d::text", w, x->owner, n++);
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

/*
 * The gate columns both statements start with (see gate_read): the client bound to $2,
 * its generation and write epochs, retirement, the current schema, the compaction horizon,
 * the last changelog position and now().
 */
#define GATE_COLS                                                                                  \
	"c.user_id = $2, c.generation, c.accepted_write_epoch,"                                    \
	" CASE WHEN c.client_id IS NOT NULL THEN COALESCE(mp.materialized_write_epoch, 1) END,"    \
	" EXISTS (SELECT 1 FROM synchro.retirements rt WHERE rt.client_id = c.client_id),"         \
	" sv.version, sv.hash, h.commit_lsn, h.ordinal, t.commit_lsn, t.ordinal, now()"
#define GATE_FROM                                                                                  \
	" FROM (SELECT 1) one"                                                                     \
	" LEFT JOIN synchro.clients c ON c.client_id = $1::uuid"                                   \
	" LEFT JOIN synchro.client_progress mp ON mp.client_id = c.client_id"                      \
	" LEFT JOIN (SELECT version, hash FROM synchro.schema_versions"                            \
	"             ORDER BY version DESC LIMIT 1) sv ON true"                                   \
	" LEFT JOIN (SELECT commit_lsn, ordinal FROM synchro.changelog_horizon LIMIT 1) h ON true" \
	" LEFT JOIN (SELECT commit_lsn, ordinal FROM synchro.changelog"                            \
	"             ORDER BY commit_lsn DESC, ordinal DESC LIMIT 1) t ON true"
#define GATE_NCOLS 12

/* Columns of the page statement after the gate columns. */
enum {
	PC_COUNT = GATE_NCOLS, /* relevant entries in the window (at most limit + 1) */
	PC_LAST_LSN,           /* the limit-th of them */
	PC_LAST_ORD,
	PC_BUDGET_LSN, /* the SCAN_BUDGET-th entry after the cursor, when the window is short */
	PC_BUDGET_ORD,
	PC_CUT,     /* the window stopped before an entry whose source is not visible yet */
	PC_WIN_LSN, /* the window's last entry */
	PC_WIN_ORD,
	PC_CUT_TABLE, /* ... or of a broken table: that table_id (else NULL) */
	PC_TABLE,     /* index into tabs; NULL when the page has no change */
	PC_LSN,
	PC_ORD,
	PC_PK,
	PC_VERSION,
	PC_MUTATION, /* the entry's mutation_id when this client's push wrote it */
	PC_OWNER_AFTER,
	PC_FENCE,   /* the row's current fence version */
	PC_HAS_ROW, /* the source row exists now */
	PC_VALUES   /* the fields of the row, padded to maxf */
};

/*
 * The page statement of a manifest. $1 client, $2 user, $3/$4 cursor, $5 limit, $6 tables
 * read by all, $7 tables read by owner. The window holds the first limit + 1 entries after
 * the cursor, among the next SCAN_BUDGET, that concern the caller (synchro.pull_window of
 * migration 6, an ordered scan whatever the planner thinks); of the first limit, the latest
 * entry per row is joined with the row's fence and source row, one UNION ALL branch per
 * table. One statement, one snapshot: horizon, window and rows agree.
 */
bool sy_store_pull_build_page_sql(sy_store_pull *p, sy_error *err)
{
	sy_buf b = SY_BUF_INIT;
	sy_buf_puts(
	        &b,
	        "WITH win0 AS MATERIALIZED ("
	        " SELECT * FROM synchro.pull_window($3::pg_lsn, $4::integer, $2, $6::text[],"
	        "                                   $7::text[], $5::integer + 1, " SCAN_BUDGET ")),"
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
	        " SELECT " GATE_COLS ", (SELECT count(*) FROM win), lw.commit_lsn, lw.ordinal,"
	        "        bw.commit_lsn, bw.ordinal, EXISTS (SELECT 1 FROM cut), wl.commit_lsn,"
	        "        wl.ordinal, (SELECT broken FROM cut)" GATE_FROM
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
		for (size_t j = 0; j < p->maxf; j++) {
			if (j < x->t->field_count)
				sy_store_pull_put_value(&b, x, j);
			else
				sy_buf_puts(&b, ", NULL::text");
		}
		sy_buf_printf(
		        &b,
		        " FROM pick p"
		        " LEFT JOIN synchro.row_fences f ON f.table_id = p.table_id AND f.pk = p.pk"
		        " LEFT JOIN %s r ON r.%s = ",
		        x->rel, x->pk);
		put_entry_key(&b, x->t->pk.type);
		sy_buf_printf(&b, " WHERE p.table_id = %s", x->lit);
	}
	if (first) {
		/* Every table is broken: a branch of the same shape and no row. */
		sy_buf_puts(&b,
		            " SELECT NULL::integer AS ti, NULL::pg_lsn AS commit_lsn,"
		            " NULL::integer AS ordinal, NULL, NULL, NULL::uuid, NULL, NULL, NULL");
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
	snprintf(p->page_name, sizeof p->page_name, "sy_pull_page_%lld_%u", p->version,
	         p->page_gen++);
	p->page = (sy_store_stmt)SY_STORE_STMT(p->page_name, p->page_sql, 8);
	return true;
}

/* Orders p->order by table_id bytes (rebuild pages); a manifest has few tables. */
static void sort_tables(sy_store_pull *p, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		size_t v = p->order[i], j = i;
		while (j > 0 &&
		       strcmp(p->tabs[p->order[j - 1]].t->table_id, p->tabs[v].t->table_id) > 0) {
			p->order[j] = p->order[j - 1];
			j--;
		}
		p->order[j] = v;
	}
}

/* Array literal element (double-quoted, \ and " escaped). */
void sy_store_pull_array_elem(sy_buf *b, bool first, const char *s)
{
	if (!first)
		sy_buf_putc(b, ',');
	sy_buf_putc(b, '"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			sy_buf_putc(b, '\\');
		sy_buf_putc(b, *s);
	}
	sy_buf_putc(b, '"');
}

/* Makes m (taken over) the cached manifest of version and builds its statements. */
static sy_store_status cache_build(sy_store_pull *p, PGconn *c, long long version, sy_manifest *m,
                                   sy_error *err)
{
	cache_clear(p);
	p->version = version;
	p->m = m;
	snprintf(p->hash, sizeof p->hash, "%s", m->hash);
	size_t n = m->table_count;
	p->tabs = sy_calloc(n ? n : 1, sizeof *p->tabs);
	p->order = sy_calloc(n ? n : 1, sizeof *p->order);
	if (p->tabs == NULL || p->order == NULL)
		goto nomem;
	sy_buf all = SY_BUF_INIT, own = SY_BUF_INIT;
	sy_buf_putc(&all, '{');
	sy_buf_putc(&own, '{');
	for (size_t i = 0; i < n; i++) {
		sy_store_ptab *x = &p->tabs[i];
		const sy_table *t = &m->tables[i];
		x->t = t;
		p->order[i] = i;
		x->owner_scope = t->read == SY_POLICY_OWNER;
		if (t->field_count > p->maxf)
			p->maxf = t->field_count;
		x->lit = quote_literal(c, t->table_id, err);
		x->rel = x->lit ? sy_store_quote_relation(c, t->relation, err) : NULL;
		x->pk = x->rel ? sy_store_quote_ident(c, t->pk.column, err) : NULL;
		x->cols = sy_calloc(t->field_count ? t->field_count : 1, sizeof *x->cols);
		if (x->pk == NULL || x->cols == NULL)
			goto fail_lists;
		for (size_t j = 0; j < t->field_count; j++) {
			x->cols[j] = sy_store_quote_ident(c, t->fields[j].column, err);
			if (x->cols[j] == NULL)
				goto fail_lists;
			if (x->owner_scope && strcmp(t->fields[j].field_id, t->owner_field) == 0 &&
			    (x->owner = sy_store_quote_ident(c, t->fields[j].column, err)) == NULL)
				goto fail_lists;
		}
		if (x->owner_scope && x->owner == NULL) {
			sy_store_fail(err, SY_STORE_INVALID, "table %s: owner field not found",
			              t->table_id);
			goto fail_lists;
		}
		snprintf(x->first_name, sizeof x->first_name, "sy_rebuild_%lld_%zu_f", version, i);
		snprintf(x->after_name, sizeof x->after_name, "sy_rebuild_%lld_%zu_a", version, i);
		if (!build_rebuild_sql(x))
			goto nomem_lists;
		if (x->owner_scope)
			sy_store_pull_array_elem(&own, own.len == 1, t->table_id);
		else
			sy_store_pull_array_elem(&all, all.len == 1, t->table_id);
	}
	sy_buf_putc(&all, '}');
	sy_buf_putc(&own, '}');
	p->all_tables = sy_store_pull_steal(&all);
	p->owner_tables = sy_store_pull_steal(&own);
	if (p->all_tables == NULL || p->owner_tables == NULL)
		goto nomem;
	sort_tables(p, n);
	if (!sy_store_pull_build_page_sql(p, err))
		goto fail;
	return SY_STORE_OK;
nomem_lists:
	sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
fail_lists:
	sy_buf_free(&all);
	sy_buf_free(&own);
	goto fail;
nomem:
	sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
fail:
	cache_clear(p);
	return err->code == SY_ERR_NOMEM ? SY_STORE_NOMEM : SY_STORE_FAILED;
}

/* Reads the current manifest into the cache (when its version is not the cached one). */
static sy_store_status cache_load(sy_store_pull *p, PGconn *c, sy_error *err)
{
	static sy_store_stmt stmt =
	        SY_STORE_STMT("sy_pull_manifest",
	                      "SELECT version, hash, manifest FROM synchro.schema_versions"
	                      " ORDER BY version DESC LIMIT 1",
	                      0);
	sy_store_status st;
	PGresult *r = sy_store_exec_stmt(c, &stmt, NULL, PGRES_TUPLES_OK, "current schema", NULL,
	                                 &st, err);
	if (r == NULL)
		return st;
	if (PQntuples(r) != 1) {
		PQclear(r);
		cache_clear(p);
		return SY_STORE_NOT_FOUND;
	}
	long long version = atoll(PQgetvalue(r, 0, 0));
	if (version == p->version && strcmp(PQgetvalue(r, 0, 1), p->hash) == 0) {
		PQclear(r);
		return SY_STORE_OK;
	}
	sy_error e = {0};
	sy_manifest *m = sy_manifest_parse(PQgetvalue(r, 0, 2), (size_t)PQgetlength(r, 0, 2), &e);
	bool same = m != NULL && strcmp(m->hash, PQgetvalue(r, 0, 1)) == 0;
	PQclear(r);
	if (m == NULL && e.code == SY_ERR_NOMEM)
		return sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	if (!same) {
		sy_manifest_free(m);
		return sy_store_fail(
		        err, SY_STORE_FAILED,
		        "the current schema manifest (version %lld) does not reproduce "
		        "its hash",
		        version);
	}
	return cache_build(p, c, version, m, err);
}

/* ---- the gates ---- */

typedef struct {
	bool found, bound, retired;
	long long generation, accepted, materialized;
	bool schema_found;
	sy_schema_ref current;
	sy_store_position horizon, tail; /* tail: the last entry, or the horizon when later */
	char now[SY_STORE_TIME_LEN + 1];
} gates;

static bool get_ll(const PGresult *r, int row, int col, long long *out)
{
	const char *s = PQgetvalue(r, row, col);
	char *end;
	if (PQgetisnull(r, row, col) || *s == '\0')
		return false;
	*out = strtoll(s, &end, 10);
	return *end == '\0';
}

static bool get_pos(const PGresult *r, int row, int col, sy_store_position *out)
{
	long long ord;
	out->lsn = 0;
	out->ordinal = 0;
	if (PQgetisnull(r, row, col))
		return true;
	if (!lsn_parse(PQgetvalue(r, row, col), &out->lsn) || !get_ll(r, row, col + 1, &ord) ||
	    ord < 0 || ord > INT32_MAX)
		return false;
	out->ordinal = (uint32_t)ord;
	return true;
}

static bool gate_read(const PGresult *r, gates *g)
{
	memset(g, 0, sizeof *g);
	g->found = !PQgetisnull(r, 0, 0);
	if (g->found) {
		g->bound = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
		g->retired = strcmp(PQgetvalue(r, 0, 4), "t") == 0;
		if (!get_ll(r, 0, 1, &g->generation) || !get_ll(r, 0, 2, &g->accepted) ||
		    !get_ll(r, 0, 3, &g->materialized))
			return false;
	}
	g->schema_found = !PQgetisnull(r, 0, 5);
	if (g->schema_found) {
		long long v;
		if (!get_ll(r, 0, 5, &v) || v <= 0 || PQgetlength(r, 0, 6) != SY_HASH_HEX_LEN)
			return false;
		g->current.version = (uint64_t)v;
		memcpy(g->current.hash, PQgetvalue(r, 0, 6), SY_HASH_HEX_LEN + 1);
	}
	if (!get_pos(r, 0, 7, &g->horizon) || !get_pos(r, 0, 9, &g->tail))
		return false;
	if (sy_store_position_cmp(&g->tail, &g->horizon) < 0)
		g->tail = g->horizon; /* compaction removed every entry */
	return sy_store_format_time(PQgetvalue(r, 0, 11), g->now);
}

/* ---- one request ---- */

typedef struct {
	sy_store_pull *p;
	PGconn *c;
	sy_store_read_answer *out;
	sy_error *err;
	sy_store_status st;
	sy_json_doc *doc;
	sy_json *schema; /* the current schema reference, shared by every change */
	sy_json *items;
} rd;

static sy_store_status answer_error(rd *x, sy_errcode code, const char *message)
{
	x->out->error = code;
	snprintf(x->out->message, sizeof x->out->message, "%s", message);
	return SY_STORE_OK;
}

/* An operational failure: 503, and the status behind it for the caller. */
static sy_store_status op_fail(rd *x, sy_store_status st)
{
	sy_store_rollback(x->c);
	x->out->error = SY_ERR_TEMPORARY_UNAVAILABLE;
	snprintf(x->out->message, sizeof x->out->message, "temporarily unavailable; retry");
	return st == SY_STORE_OK ? SY_STORE_FAILED : st;
}

static sy_store_status nomem(rd *x)
{
	sy_store_fail(x->err, SY_STORE_NOMEM, "out of memory");
	return op_fail(x, SY_STORE_NOMEM);
}

static sy_store_status bad_result(rd *x, const char *what)
{
	sy_store_fail(x->err, SY_STORE_FAILED, "%s: unexpected result", what);
	return op_fail(x, SY_STORE_FAILED);
}

/*
 * The gates after the structural ones. SY_STORE_OK with *pass true: continue; false: the
 * answer is set (or *reload: the current schema is not the cached one).
 */
static void gate_decide(rd *x, const gates *g, uint64_t generation, const sy_schema_ref *schema,
                        bool *pass, bool *reload)
{
	*pass = false;
	*reload = false;
	if (!g->found || !g->bound) {
		answer_error(x, SY_ERR_AUTH_REQUIRED, "the client is not registered to this user");
		return;
	}
	if (g->retired) {
		answer_error(x, SY_ERR_CLIENT_RETIRED, "the client is retired");
		return;
	}
	if ((long long)generation != g->generation) {
		answer_error(x, SY_ERR_CLIENT_GENERATION_EXPIRED,
		             "client_generation is not the current generation; connect again");
		return;
	}
	if (!g->schema_found) {
		answer_error(x, SY_ERR_TEMPORARY_UNAVAILABLE,
		             "no schema is published yet; retry later");
		return;
	}
	if (schema->version != g->current.version || strcmp(schema->hash, g->current.hash) != 0) {
		x->out->current = g->current;
		x->out->received = *schema;
		answer_error(x, SY_ERR_SCHEMA_MISMATCH,
		             "the request schema is not the current schema");
		return;
	}
	if ((long long)g->current.version != x->p->version ||
	    strcmp(g->current.hash, x->p->hash) != 0) {
		*reload = true;
		return;
	}
	*pass = true;
}

static sy_json *schema_json(sy_json_doc *doc, const sy_schema_ref *ref)
{
	sy_json *o = sy_json_new_object(doc);
	if (o == NULL || !sy_json_object_put(doc, o, "hash", sy_json_new_cstring(doc, ref->hash)) ||
	    !sy_json_object_put(doc, o, "version", sy_json_new_int(doc, (int64_t)ref->version)))
		return NULL;
	return o;
}

/* Starts the body document of a 200 answer. */
static bool body_start(rd *x)
{
	x->doc = sy_json_doc_new();
	if (x->doc == NULL)
		return false;
	sy_schema_ref ref = {.version = (uint64_t)x->p->version};
	memcpy(ref.hash, x->p->hash, sizeof ref.hash);
	x->schema = schema_json(x->doc, &ref);
	x->items = sy_json_new_array(x->doc);
	return x->schema != NULL && x->items != NULL;
}

typedef enum { ITEM_OK, ITEM_NOMEM, ITEM_INVALID, ITEM_BAD_KEY } item_status;

/*
 * Appends one change (or rebuild row) to the body: the row from r's columns col.. when
 * upsert, its checksum under the current schema, the mutation id when given.
 */
static item_status add_item(rd *x, const sy_store_ptab *pt, const char *pk, const char *version,
                            const char *mutation_id, bool upsert, const PGresult *r, int row,
                            int col, sy_error *why)
{
	sy_json_doc *doc = x->doc;
	const sy_table *t = pt->t;
	sy_json *pkv = NULL;
	sy_wire_status ws = sy_wire_decode_pg_text(doc, t->pk.type, pk, strlen(pk), &pkv);
	if (ws != SY_WIRE_OK) {
		sy_error_set(why, SY_ERR_INVALID_REQUEST, "table %s: a key has no wire form",
		             t->table_id);
		return ws == SY_WIRE_NOMEM ? ITEM_NOMEM : ITEM_BAD_KEY;
	}
	sy_json *o = sy_json_new_object(doc);
	sy_json *pko = sy_json_new_object(doc);
	if (o == NULL || pko == NULL ||
	    !sy_json_object_put(doc, pko, "field", sy_json_new_cstring(doc, t->pk.field_id)) ||
	    !sy_json_object_put(doc, pko, "value", pkv) ||
	    !sy_json_object_put(doc, o, "table", sy_json_new_cstring(doc, t->table_id)) ||
	    !sy_json_object_put(doc, o, "pk", pko) ||
	    !sy_json_object_put(doc, o, "op",
	                        sy_json_new_cstring(doc, upsert ? "upsert" : "delete")) ||
	    !sy_json_object_put(doc, o, "server_version", sy_json_new_cstring(doc, version)) ||
	    !sy_json_object_put(doc, o, "schema", x->schema))
		return ITEM_NOMEM;
	if (mutation_id != NULL &&
	    !sy_json_object_put(doc, o, "mutation_id", sy_json_new_cstring(doc, mutation_id)))
		return ITEM_NOMEM;
	if (upsert) {
		sy_json *rowo = sy_json_new_object(doc);
		if (rowo == NULL)
			return ITEM_NOMEM;
		for (size_t j = 0; j < t->field_count; j++) {
			const sy_field *f = &t->fields[j];
			int cj = col + (int)j;
			sy_json *v = NULL;
			if (PQgetisnull(r, row, cj)) {
				v = sy_json_new_null(doc);
			} else {
				ws = sy_wire_decode_pg_text(doc, f->type, PQgetvalue(r, row, cj),
				                            (size_t)PQgetlength(r, row, cj), &v);
				if (ws != SY_WIRE_OK) {
					sy_error_set(why, SY_ERR_INVALID_REQUEST,
					             "table %s field %s: a stored value has no "
					             "wire form",
					             t->table_id, f->field_id);
					return ws == SY_WIRE_NOMEM ? ITEM_NOMEM : ITEM_INVALID;
				}
			}
			if (v == NULL || !sy_json_object_put(doc, rowo, f->field_id, v))
				return ITEM_NOMEM;
		}
		char hex[SY_FP_HEX_LEN + 1];
		sy_schema_ref ref = {.version = (uint64_t)x->p->version};
		memcpy(ref.hash, x->p->hash, sizeof ref.hash);
		sy_error e = {0};
		if (!sy_fp_row_checksum(&ref, t->table_id, strlen(t->table_id), t->pk.field_id,
		                        strlen(t->pk.field_id), pkv, rowo, hex, &e)) {
			sy_error_set(why, e.code, "table %s: row checksum: %s", t->table_id,
			             e.message);
			return e.code == SY_ERR_NOMEM ? ITEM_NOMEM : ITEM_INVALID;
		}
		if (!sy_json_object_put(doc, o, "row", rowo) ||
		    !sy_json_object_put(doc, o, "row_checksum", sy_json_new_cstring(doc, hex)))
			return ITEM_NOMEM;
	}
	if (!sy_json_array_push(doc, x->items, o))
		return ITEM_NOMEM;
	x->out->items++;
	return ITEM_OK;
}

static sy_store_status item_failed(rd *x, item_status s, const sy_error *why)
{
	if (s == ITEM_NOMEM)
		return nomem(x);
	sy_store_fail(x->err, SY_STORE_FAILED, "%s", why->message);
	return op_fail(x, SY_STORE_FAILED);
}

/* Writes the finished document as the canonical 200 body. */
static sy_store_status body_finish(rd *x, sy_json *root)
{
	sy_error e = {0};
	sy_json_doc_set_root(x->doc, root);
	sy_buf_reset(&x->out->body);
	if (!sy_jcs_write(&x->out->body, root, &e)) {
		if (e.code == SY_ERR_NOMEM)
			return nomem(x);
		sy_store_fail(x->err, SY_STORE_FAILED, "response: %s", e.message);
		return op_fail(x, SY_STORE_FAILED);
	}
	x->out->error = SY_ERR_NONE;
	return SY_STORE_OK;
}

/* Monotonic milliseconds: the read-your-writes wait is immune to clock steps. */
static double now_ms(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return 0;
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static sy_store_stmt gate_stmt = SY_STORE_STMT(
        "sy_read_gates",
        "SELECT " GATE_COLS ", s.accepted_write_epoch, s.stream_lsn, s.stream_ordinal" GATE_FROM
        " LEFT JOIN synchro.rebuild_sessions s"
        "   ON s.user_id = $2 AND s.client_id = $1::uuid AND s.rebuild_id = $3::uuid",
        3);

static sy_store_stmt epoch_stmt =
        SY_STORE_STMT("sy_pull_epoch",
                      "SELECT COALESCE(p.materialized_write_epoch, 1) FROM synchro.clients c"
                      " LEFT JOIN synchro.client_progress p ON p.client_id = c.client_id"
                      " WHERE c.client_id = $1::uuid",
                      1);

/*
 * ADR: pull waits until every push the client had accepted is materialized: polls until
 * materialized_write_epoch reaches target, or sets *timed_out after wait_ms.
 */
static sy_store_status wait_materialized(rd *x, const char *client_id, long long target,
                                         int wait_ms, bool *timed_out)
{
	double start = now_ms();
	int step = 1, slept = 0;
	*timed_out = false;
	for (;;) {
		double elapsed = now_ms() - start;
		if (elapsed < slept)
			elapsed = slept;
		if (elapsed >= wait_ms) {
			*timed_out = true;
			break;
		}
		int nap = step < wait_ms - elapsed ? step : (int)(wait_ms - elapsed) + 1;
		(void)poll(NULL, 0, nap);
		slept += nap;
		if (step < WAIT_STEP_MAX_MS)
			step *= 2;
		const char *pv[] = {client_id};
		sy_store_status st;
		x->out->statements++;
		PGresult *r = sy_store_exec_stmt(x->c, &epoch_stmt, pv, PGRES_TUPLES_OK,
		                                 "read-your-writes wait", NULL, &st, x->err);
		if (r == NULL)
			return op_fail(x, st);
		long long m = 0;
		bool ok = PQntuples(r) == 1 && get_ll(r, 0, 0, &m);
		PQclear(r);
		if (!ok)
			return bad_result(x, "read-your-writes wait");
		if (m >= target)
			break;
	}
	double took = now_ms() - start;
	x->out->waited_ms = took > slept ? (unsigned)took : (unsigned)slept;
	return SY_STORE_OK;
}

/* ---- pull ---- */

/* Builds the 200 body of a pull page from the page statement's result. */
static sy_store_status pull_body(rd *x, const sy_store_pull_request *req, const gates *g,
                                 const PGresult *r)
{
	sy_store_pull *p = x->p;
	long long n;
	if (!get_ll(r, 0, PC_COUNT, &n))
		return bad_result(x, "pull");
	bool more = n > (long long)req->limit;
	sy_store_position next = req->cursor;
	if (more) {
		if (!get_pos(r, 0, PC_LAST_LSN, &next))
			return bad_result(x, "pull");
	} else if (strcmp(PQgetvalue(r, 0, PC_CUT), "t") == 0 && n == 0 &&
	           !PQgetisnull(r, 0, PC_CUT_TABLE)) {
		/* The next change is of a table whose mapping is broken: this client's own error,
		 * until a publish or the table is mended; never a cursor past the change. */
		char msg[SY_ERROR_MESSAGE_MAX];
		snprintf(msg, sizeof msg,
		         "table %s cannot be read now: its relation no longer matches the schema;"
		         " retry later",
		         PQgetvalue(r, 0, PC_CUT_TABLE));
		return answer_error(x, SY_ERR_TEMPORARY_UNAVAILABLE, msg);
	} else if (strcmp(PQgetvalue(r, 0, PC_CUT), "t") == 0) {
		/* A source commit is an instant from visible: stop before it, come back at once.
		 * (Or the next change is of a broken table: deliver up to it.) */
		if (n > 0 && !get_pos(r, 0, PC_WIN_LSN, &next))
			return bad_result(x, "pull");
		more = true;
	} else if (!PQgetisnull(r, 0, PC_BUDGET_LSN)) {
		/* The scan budget ran out first: continue after what was read. */
		if (!get_pos(r, 0, PC_BUDGET_LSN, &next))
			return bad_result(x, "pull");
		more = true;
	} else if (sy_store_position_cmp(&g->tail, &next) > 0) {
		/* Nothing more in scope up to the end: skip the entries of others for good. */
		next = g->tail;
	}
	x->out->scanned = (size_t)n;
	x->out->more = more;
	if (!body_start(x))
		return nomem(x);
	for (int i = 0; i < PQntuples(r); i++) {
		if (PQgetisnull(r, i, PC_TABLE))
			continue;
		long long ti;
		if (!get_ll(r, i, PC_TABLE, &ti) || ti < 0 || (size_t)ti >= p->m->table_count)
			return bad_result(x, "pull");
		const sy_store_ptab *pt = &p->tabs[ti];
		const char *version = PQgetvalue(r, i, PC_VERSION);
		const char *mid =
		        PQgetisnull(r, i, PC_MUTATION) ? NULL : PQgetvalue(r, i, PC_MUTATION);
		bool upsert;
		if (pt->owner_scope && (PQgetisnull(r, i, PC_OWNER_AFTER) ||
		                        strcmp(PQgetvalue(r, i, PC_OWNER_AFTER), req->user) != 0)) {
			/* The row left the caller's scope here (or was deleted): its version then.
			 */
			upsert = false;
		} else if (PQgetisnull(r, i, PC_FENCE) ||
		           strcmp(PQgetvalue(r, i, PC_FENCE), version) != 0) {
			/* Superseded: a later entry, in scope as well (its owner before is the
			 * caller, or the table is read by all), delivers the current state. */
			continue;
		} else {
			/* A live row or a soft tombstone; no row left: hard-deleted. */
			upsert = strcmp(PQgetvalue(r, i, PC_HAS_ROW), "t") == 0;
		}
		sy_error why = {0};
		item_status s = add_item(x, pt, PQgetvalue(r, i, PC_PK), version, mid, upsert, r, i,
		                         PC_VALUES, &why);
		if (s == ITEM_BAD_KEY) {
			/* No client can hold such a row: skip it, and the caller logs it. */
			if (x->out->skipped++ == 0)
				snprintf(x->out->skipped_table, sizeof x->out->skipped_table, "%s",
				         pt->t->table_id);
			continue;
		}
		if (s != ITEM_OK)
			return item_failed(x, s, &why);
	}
	char cursor[SY_STORE_CURSOR_LEN + 1];
	sy_store_cursor_format(&next, cursor);
	sy_json_doc *doc = x->doc;
	sy_json *root = sy_json_new_object(doc);
	if (root == NULL || !sy_json_object_put(doc, root, "changes", x->items) ||
	    !sy_json_object_put(doc, root, "cursor", sy_json_new_cstring(doc, cursor)) ||
	    !sy_json_object_put(doc, root, "has_more", sy_json_new_bool(doc, more)) ||
	    !sy_json_object_put(doc, root, "server_time", sy_json_new_cstring(doc, g->now)))
		return nomem(x);
	return body_finish(x, root);
}

/* The gate statement alone (pull with a null cursor): gates, then rebuild_required. */
static sy_store_status pull_without_cursor(rd *x, const sy_store_pull_request *req)
{
	for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
		const char *pv[] = {req->client_id, req->user, NULL};
		sy_store_status st;
		x->out->statements++;
		PGresult *r = sy_store_exec_stmt(x->c, &gate_stmt, pv, PGRES_TUPLES_OK, "pull",
		                                 NULL, &st, x->err);
		if (r == NULL)
			return op_fail(x, st);
		gates g;
		bool ok = PQntuples(r) == 1 && gate_read(r, &g);
		PQclear(r);
		if (!ok)
			return bad_result(x, "pull");
		bool pass, reload;
		gate_decide(x, &g, req->client_generation, &req->schema, &pass, &reload);
		if (pass)
			return answer_error(x, SY_ERR_REBUILD_REQUIRED,
			                    "no cursor: rebuild, then pull from its cursor");
		if (!reload)
			return SY_STORE_OK;
		if ((st = cache_load(x->p, x->c, x->err)) != SY_STORE_OK)
			return op_fail(x, st);
	}
	sy_store_fail(x->err, SY_STORE_FAILED, "pull: the current schema kept changing");
	return op_fail(x, SY_STORE_FAILED);
}

sy_store_status sy_store_pull_handle(sy_store_pull *p, PGconn *c, const sy_store_pull_request *req,
                                     sy_store_read_answer *out, sy_error *err)
{
	rd x = {.p = p, .c = c, .out = out, .err = err};
	sy_store_status st = SY_STORE_OK;
	out->error = SY_ERR_NONE;
	out->message[0] = '\0';
	out->items = out->scanned = 0;
	out->more = false;
	out->waited_ms = out->statements = 0;
	out->skipped = 0;
	if (p->version == 0) {
		out->statements++;
		st = cache_load(p, c, err);
		if (st == SY_STORE_NOT_FOUND) {
			/* Nothing is published, so no client can hold a current schema. */
			st = answer_error(&x, SY_ERR_TEMPORARY_UNAVAILABLE,
			                  "no schema is published yet; retry later");
			goto done;
		}
		if (st != SY_STORE_OK) {
			st = op_fail(&x, st);
			goto done;
		}
	}
	if (!req->has_cursor) {
		st = pull_without_cursor(&x, req);
		goto done;
	}
	char lsn[24], ord[16], limit[16];
	lsn_text(req->cursor.lsn, lsn);
	snprintf(ord, sizeof ord, "%" PRIu32, req->cursor.ordinal);
	snprintf(limit, sizeof limit, "%u", req->limit);
	long long target = -1; /* the accepted epoch to wait for, once seen */
	if (p->nbroken > 0 && sy_store_mono_ms() >= p->probe_at_ms) {
		bool changed;
		if ((st = sy_store_pull_probe_tables(p, c, true, &changed, err)) != SY_STORE_OK) {
			st = op_fail(&x, st);
			goto done;
		}
	}
	bool probed = false;
	for (int attempt = 0; attempt < ATTEMPTS + 2; attempt++) {
		const char *pv[] = {req->client_id,
		                    req->user,
		                    lsn,
		                    ord,
		                    limit,
		                    p->all_tables,
		                    p->owner_tables,
		                    p->broken_tables ? p->broken_tables : "{}"};
		char sqlstate[6] = "";
		x.out->statements++;
		PGresult *r = sy_store_exec_stmt(c, &p->page, pv, PGRES_TUPLES_OK, "pull", sqlstate,
		                                 &st, err);
		if (r == NULL && st == SY_STORE_FAILED && sy_store_sqlstate_is_mapping(sqlstate) &&
		    !probed) {
			/* A table no longer matches its mapping: a publish may have mended it (the
			 * responder reads the current manifest again), else the tables that fail
			 * their probe leave the statement and every other table keeps serving. */
			probed = true;
			long long was = p->version;
			x.out->statements++;
			if ((st = cache_load(p, c, err)) == SY_STORE_OK && p->version == was) {
				bool changed = false;
				st = sy_store_pull_probe_tables(p, c, false, &changed, err);
				if (st == SY_STORE_OK && !changed)
					st = sy_store_fail(
					        err, SY_STORE_FAILED,
					        "pull: statement failed (SQLSTATE %s) and no "
					        "table fails its probe",
					        sqlstate);
			}
			if (st == SY_STORE_OK)
				continue;
		}
		if (r == NULL) {
			st = op_fail(&x, st);
			goto done;
		}
		gates g;
		if (PQntuples(r) < 1 || !gate_read(r, &g)) {
			PQclear(r);
			st = bad_result(&x, "pull");
			goto done;
		}
		bool pass, reload;
		gate_decide(&x, &g, req->client_generation, &req->schema, &pass, &reload);
		if (reload) {
			PQclear(r);
			x.out->statements++;
			if ((st = cache_load(p, c, err)) != SY_STORE_OK) {
				st = op_fail(&x, st);
				goto done;
			}
			continue;
		}
		if (!pass) {
			PQclear(r);
			goto done;
		}
		if (sy_store_position_cmp(&req->cursor, &g.horizon) < 0 ||
		    sy_store_position_cmp(&req->cursor, &g.tail) > 0) {
			PQclear(r);
			st = answer_error(&x, SY_ERR_CURSOR_EXPIRED,
			                  "the cursor is older than the retained history; rebuild");
			goto done;
		}
		if (target < 0)
			target = g.accepted;
		if (g.materialized < target) {
			PQclear(r);
			bool timed_out;
			st = wait_materialized(&x, req->client_id, target, req->wait_ms,
			                       &timed_out);
			if (st != SY_STORE_OK)
				goto done;
			if (timed_out) {
				st = answer_error(
				        &x, SY_ERR_TEMPORARY_UNAVAILABLE,
				        "this client's accepted pushes are not materialized yet;"
				        " retry");
				goto done;
			}
			continue;
		}
		st = pull_body(&x, req, &g, r);
		PQclear(r);
		goto done;
	}
	sy_store_fail(err, SY_STORE_FAILED, "pull: the current schema kept changing");
	st = op_fail(&x, SY_STORE_FAILED);
done:
	sy_json_doc_free(x.doc);
	return st;
}

/* ---- rebuild ---- */

/* Transactions not yet visible are among the latest commits; this many entries are looked at. */
static sy_store_stmt visible_tail_stmt =
        SY_STORE_STMT("sy_rebuild_tail",
                      "SELECT commit_lsn, ordinal FROM synchro.changelog_visible_tail(10000)", 0);

static sy_store_stmt session_insert_stmt =
        SY_STORE_STMT("sy_rebuild_session",
                      "INSERT INTO synchro.rebuild_sessions (user_id, client_id, rebuild_id, "
                      "accepted_write_epoch,"
                      "       stream_lsn, stream_ordinal)"
                      " VALUES ($1, $2::uuid, $3::uuid, $4::bigint, $5::pg_lsn, $6::integer)",
                      6);

/* Reads rows of the caller's scope from table order[k] on; k/pk say where the page starts.
 * Fills up to limit rows; *more when a row beyond them exists. */
static sy_store_status rebuild_rows(rd *x, const sy_store_rebuild_request *req, size_t k,
                                    const char *after, bool *more, sy_buf *token)
{
	sy_store_pull *p = x->p;
	unsigned left = req->limit;
	const sy_store_ptab *last_tab = NULL;
	char *last_pk = NULL;
	sy_store_status st = SY_STORE_OK;
	*more = false;
	for (; k < p->m->table_count && !*more; k++, after = NULL) {
		sy_store_ptab *pt = &p->tabs[p->order[k]];
		char lim[16];
		snprintf(lim, sizeof lim, "%u", left + 1);
		const char *pv[4] = {req->client_id, lim};
		int n = 2;
		if (after != NULL)
			pv[n++] = after;
		if (pt->owner_scope)
			pv[n++] = req->user;
		x->out->statements++;
		PGresult *r = sy_store_exec_stmt(x->c, after != NULL ? &pt->after : &pt->first, pv,
		                                 PGRES_TUPLES_OK, "rebuild", NULL, &st, x->err);
		if (r == NULL) {
			st = op_fail(x, st);
			goto done;
		}
		int rows = PQntuples(r);
		for (int i = 0; i < rows; i++) {
			if (left == 0) {
				*more = true;
				break;
			}
			const char *mid = PQgetisnull(r, i, 2) ? NULL : PQgetvalue(r, i, 2);
			sy_error why = {0};
			item_status s = add_item(x, pt, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1),
			                         mid, true, r, i, 3, &why);
			if (s != ITEM_OK) {
				PQclear(r);
				st = item_failed(x, s, &why);
				goto done;
			}
			left--;
			sy_free(last_pk);
			last_pk = sy_strndup(PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0));
			last_tab = pt;
			if (last_pk == NULL) {
				PQclear(r);
				st = nomem(x);
				goto done;
			}
		}
		PQclear(r);
	}
	if (*more && (last_tab == NULL ||
	              !sy_store_page_token_format(token, last_tab->t->table_id, last_pk)))
		st = nomem(x);
done:
	sy_free(last_pk);
	return st;
}

/* The first table (in page order) at or after the token's, and the key to start after. */
static sy_store_status token_start(rd *x, const sy_store_rebuild_request *req, size_t *k,
                                   const char **after, bool *valid)
{
	sy_store_pull *p = x->p;
	*k = 0;
	*after = NULL;
	*valid = true;
	if (req->token_table == NULL)
		return SY_STORE_OK;
	while (*k < p->m->table_count &&
	       strcmp(p->tabs[p->order[*k]].t->table_id, req->token_table) < 0)
		(*k)++;
	if (*k < p->m->table_count &&
	    strcmp(p->tabs[p->order[*k]].t->table_id, req->token_table) == 0) {
		const sy_table *t = p->tabs[p->order[*k]].t;
		sy_json *v = NULL;
		sy_wire_status ws = sy_wire_decode_pg_text(x->doc, t->pk.type, req->token_pk,
		                                           strlen(req->token_pk), &v);
		if (ws == SY_WIRE_NOMEM)
			return nomem(x);
		if (ws != SY_WIRE_OK) {
			*valid = false;
			return SY_STORE_OK;
		}
		*after = req->token_pk;
	}
	return SY_STORE_OK;
}

/* The session of this page: created by the first page, else found and still valid. */
static sy_store_status rebuild_session(rd *x, const sy_store_rebuild_request *req, const gates *g,
                                       const PGresult *r, sy_store_position *pos, bool *ok,
                                       char sqlstate[6])
{
	*ok = false;
	bool exists = !PQgetisnull(r, 0, GATE_NCOLS);
	if (!exists && req->token_table != NULL) {
		answer_error(x, SY_ERR_REBUILD_INVALIDATED,
		             "no rebuild session of this client has this rebuild_id; start again "
		             "with page_token null");
		return SY_STORE_OK;
	}
	if (exists) {
		long long epoch;
		if (!get_ll(r, 0, GATE_NCOLS, &epoch) || !get_pos(r, 0, GATE_NCOLS + 1, pos))
			return bad_result(x, "rebuild");
		if (epoch != g->accepted) {
			answer_error(x, SY_ERR_REBUILD_INVALIDATED,
			             "a push was accepted for this client after the rebuild began; "
			             "start a"
			             " new rebuild");
			return SY_STORE_OK;
		}
		*ok = true;
		return SY_STORE_OK;
	}
	/* ADR: the session binds the accepted epoch observed now, and the stream position of
	 * this snapshot, which is no later than the rows the pages read: the last entry whose
	 * source is visible in it (the pages read in this snapshot too), or the horizon. */
	sy_store_status st;
	x->out->statements++;
	PGresult *vt = sy_store_exec_stmt(x->c, &visible_tail_stmt, NULL, PGRES_TUPLES_OK,
	                                  "rebuild position", sqlstate, &st, x->err);
	if (vt == NULL)
		return st;
	pos->lsn = 0;
	pos->ordinal = 0;
	bool ok_pos = PQntuples(vt) == 0 || get_pos(vt, 0, 0, pos);
	PQclear(vt);
	if (!ok_pos)
		return bad_result(x, "rebuild position");
	if (sy_store_position_cmp(pos, &g->horizon) < 0)
		*pos = g->horizon;
	char epoch[24], lsn[24], ord[16];
	snprintf(epoch, sizeof epoch, "%lld", g->accepted);
	lsn_text(pos->lsn, lsn);
	snprintf(ord, sizeof ord, "%" PRIu32, pos->ordinal);
	const char *pv[] = {req->user, req->client_id, req->rebuild_id, epoch, lsn, ord};
	x->out->statements++;
	PGresult *ins = sy_store_exec_stmt(x->c, &session_insert_stmt, pv, PGRES_COMMAND_OK,
	                                   "rebuild session", sqlstate, &st, x->err);
	if (ins == NULL)
		return st;
	PQclear(ins);
	*ok = true;
	return SY_STORE_OK;
}

static bool retry_state(const char *sqlstate)
{
	/* A racing first page of the same session, or a serialization failure. */
	return strcmp(sqlstate, "23505") == 0 || strcmp(sqlstate, "40001") == 0 ||
	       strcmp(sqlstate, "40P01") == 0;
}

/* One attempt at a page in its own REPEATABLE READ transaction; *again: retry. */
static sy_store_status rebuild_page(rd *x, const sy_store_rebuild_request *req, bool *again)
{
	sy_store_pull *p = x->p;
	PGresult *r = NULL;
	sy_store_status st;
	char sqlstate[6] = "";
	*again = false;
	x->out->statements++;
	st = sy_store_command(x->c, "BEGIN ISOLATION LEVEL REPEATABLE READ", "rebuild", x->err);
	if (st != SY_STORE_OK)
		return op_fail(x, st);
	const char *pv[] = {req->client_id, req->user, req->rebuild_id};
	x->out->statements++;
	r = sy_store_exec_stmt(x->c, &gate_stmt, pv, PGRES_TUPLES_OK, "rebuild", sqlstate, &st,
	                       x->err);
	if (r == NULL)
		goto failed;
	gates g;
	if (PQntuples(r) != 1 || !gate_read(r, &g)) {
		PQclear(r);
		return bad_result(x, "rebuild");
	}
	bool pass, reload;
	gate_decide(x, &g, req->client_generation, &req->schema, &pass, &reload);
	if (!pass) {
		PQclear(r);
		sy_store_rollback(x->c);
		if (reload) {
			x->out->statements++;
			if ((st = cache_load(p, x->c, x->err)) != SY_STORE_OK)
				return op_fail(x, st);
			*again = true;
		}
		return SY_STORE_OK;
	}
	sy_store_position pos;
	bool ok;
	st = rebuild_session(x, req, &g, r, &pos, &ok, sqlstate);
	PQclear(r);
	if (st != SY_STORE_OK)
		goto failed;
	if (!ok) {
		sy_store_rollback(x->c);
		return SY_STORE_OK;
	}
	if (!body_start(x))
		return nomem(x);
	size_t k;
	const char *after;
	bool valid;
	if ((st = token_start(x, req, &k, &after, &valid)) != SY_STORE_OK)
		return st;
	if (!valid) {
		sy_store_rollback(x->c);
		return answer_error(x, SY_ERR_INVALID_REQUEST,
		                    "page_token: the key is not a value of its table's key type");
	}
	bool more;
	sy_buf token = SY_BUF_INIT;
	st = rebuild_rows(x, req, k, after, &more, &token);
	if (st != SY_STORE_OK) {
		sy_buf_free(&token);
		return st;
	}
	x->out->statements++;
	st = sy_store_command(x->c, "COMMIT", "rebuild", x->err);
	if (st != SY_STORE_OK) {
		sy_buf_free(&token);
		return op_fail(x, st);
	}
	x->out->more = more;
	sy_json_doc *doc = x->doc;
	sy_json *root = sy_json_new_object(doc);
	bool built = root != NULL && sy_json_object_put(doc, root, "rows", x->items) &&
	             sy_json_object_put(doc, root, "server_time", sy_json_new_cstring(doc, g.now));
	if (built && more) {
		built = sy_json_object_put(doc, root, "page_token",
		                           sy_json_new_string(doc, token.data, token.len));
	} else if (built) {
		char cursor[SY_STORE_CURSOR_LEN + 1];
		sy_store_cursor_format(&pos, cursor);
		built = sy_json_object_put(doc, root, "page_token", sy_json_new_null(doc)) &&
		        sy_json_object_put(doc, root, "cursor", sy_json_new_cstring(doc, cursor));
	}
	sy_buf_free(&token);
	if (!built)
		return nomem(x);
	return body_finish(x, root);
failed:
	if (st == SY_STORE_FAILED && retry_state(sqlstate)) {
		sy_store_rollback(x->c);
		*again = true;
		return SY_STORE_OK;
	}
	return op_fail(x, st);
}

sy_store_status sy_store_rebuild_handle(sy_store_pull *p, PGconn *c,
                                        const sy_store_rebuild_request *req,
                                        sy_store_read_answer *out, sy_error *err)
{
	rd x = {.p = p, .c = c, .out = out, .err = err};
	sy_store_status st = SY_STORE_OK;
	out->error = SY_ERR_NONE;
	out->message[0] = '\0';
	out->items = out->scanned = 0;
	out->more = false;
	out->waited_ms = out->statements = 0;
	if (p->version == 0) {
		out->statements++;
		st = cache_load(p, c, err);
		if (st == SY_STORE_NOT_FOUND)
			return answer_error(&x, SY_ERR_TEMPORARY_UNAVAILABLE,
			                    "no schema is published yet; retry later");
		if (st != SY_STORE_OK)
			return op_fail(&x, st);
	}
	for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
		bool again;
		sy_json_doc_free(x.doc);
		x.doc = NULL;
		out->items = 0;
		st = rebuild_page(&x, req, &again);
		if (st != SY_STORE_OK || !again)
			goto done;
	}
	sy_store_fail(err, SY_STORE_FAILED, "rebuild: the session or schema kept changing");
	st = op_fail(&x, SY_STORE_FAILED);
done:
	sy_json_doc_free(x.doc);
	return st;
}

/* ---- compaction ---- */

sy_store_status sy_store_changelog_compact(PGconn *c, long long before_s, sy_store_compacted *out,
                                           sy_error *err)
{
	/*
	 * The horizon row lock orders concurrent compactions. The cut is the last position
	 * whose entry committed before the cutoff; every entry at or below the (never lowered)
	 * horizon goes, with the rebuild sessions whose cursor would have expired.
	 */
	static const char sql[] =
	        "WITH cut AS ("
	        "  SELECT l.commit_lsn, l.ordinal FROM synchro.changelog l"
	        "   WHERE l.committed_at < now() - $1::bigint * interval '1 second'"
	        "   ORDER BY l.commit_lsn DESC, l.ordinal DESC LIMIT 1),"
	        " old AS (SELECT h.commit_lsn, h.ordinal FROM synchro.changelog_horizon h FOR "
	        "UPDATE),"
	        " hz AS ("
	        "  SELECT CASE WHEN cut.commit_lsn IS NOT NULL"
	        "               AND (cut.commit_lsn, cut.ordinal) > (old.commit_lsn, old.ordinal)"
	        "              THEN cut.commit_lsn ELSE old.commit_lsn END AS commit_lsn,"
	        "         CASE WHEN cut.commit_lsn IS NOT NULL"
	        "               AND (cut.commit_lsn, cut.ordinal) > (old.commit_lsn, old.ordinal)"
	        "              THEN cut.ordinal ELSE old.ordinal END AS ordinal,"
	        "         cut.commit_lsn IS NOT NULL"
	        "           AND (cut.commit_lsn, cut.ordinal) > (old.commit_lsn, old.ordinal) AS "
	        "moved"
	        "    FROM old LEFT JOIN cut ON true),"
	        " up AS ("
	        "  UPDATE synchro.changelog_horizon h SET commit_lsn = hz.commit_lsn,"
	        "         ordinal = hz.ordinal, compacted_at = now()"
	        "    FROM hz WHERE hz.moved RETURNING 1),"
	        " del AS ("
	        "  DELETE FROM synchro.changelog l USING hz"
	        "   WHERE (l.commit_lsn, l.ordinal) <= (hz.commit_lsn, hz.ordinal) RETURNING 1),"
	        " ses AS ("
	        "  DELETE FROM synchro.rebuild_sessions s USING hz"
	        "   WHERE (s.stream_lsn, s.stream_ordinal) < (hz.commit_lsn, hz.ordinal) RETURNING "
	        "1)"
	        " SELECT (SELECT count(*) FROM del), (SELECT count(*) FROM ses), hz.moved,"
	        "        hz.commit_lsn, hz.ordinal, now() - $1::bigint * interval '1 second',"
	        "        (SELECT count(*) FROM up)"
	        "   FROM hz";
	memset(out, 0, sizeof *out);
	if (before_s < 0)
		return sy_store_fail(err, SY_STORE_INVALID, "changelog compact: negative duration");
	char secs[24];
	snprintf(secs, sizeof secs, "%lld", before_s);
	const char *pv[] = {secs};
	sy_store_status st;
	PGresult *r =
	        sy_store_exec(c, sql, 1, pv, PGRES_TUPLES_OK, "changelog compact", NULL, &st, err);
	if (r == NULL)
		return st;
	bool ok = PQntuples(r) == 1 && get_ll(r, 0, 0, &out->removed) &&
	          get_ll(r, 0, 1, &out->sessions) && get_pos(r, 0, 3, &out->horizon) &&
	          sy_store_format_time(PQgetvalue(r, 0, 5), out->cutoff);
	if (ok)
		out->moved = strcmp(PQgetvalue(r, 0, 2), "t") == 0;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return sy_store_fail(err, SY_STORE_FAILED,
		                     "changelog compact: synchro.changelog_horizon has no row");
	}
	PQclear(r);
	if (!ok)
		return sy_store_fail(err, SY_STORE_FAILED, "changelog compact: unexpected result");
	return SY_STORE_OK;
}
