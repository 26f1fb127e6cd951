/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * changelog_scopes.c: membership scopes in walsync's changelog writes.
 *
 * Layer: middle of src/store (doc/hacking.md).
 * Rules: doc/protocol.md#membership-scopes (the mirror and the scope changes).
 * Notes: It writes the mirror's rows that the batch changed (synchro.scope_members,
 * synchro.scope_links). It writes the entries of each scope change. They are read from the
 * live synced table, with its current fence versions. Identifiers are quoted, and values
 * go as parameters. The writer lease fences every statement, as it fences the entries'
 * insert. The file also reads the whole mirror when walsync starts streaming, and the WAL
 * position after a write.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/changelog_scopes.h"
#include "store/conn.h"
#include "synchro/alloc.h"
#include "synchro/buf.h"

/* The text[] parameters of the mirror's two statements. */
enum {
	M_DEL_SCOPE, /* (scope, key) whose users are replaced */
	M_DEL_KEY,
	M_INS_SCOPE, /* their users now */
	M_INS_KEY,
	M_INS_USER,
	L_DEL_LINK, /* (link, key) without a target now */
	L_DEL_KEY,
	L_SET_LINK, /* (link, key, target) */
	L_SET_KEY,
	L_SET_TARGET,
	M_COUNT
};

typedef struct {
	sy_store_scope_rows r; /* its strings in one allocation, text */
	char *text;
} rows_item;

struct sy_store_scope_ops {
	sy_buf col[M_COUNT];
	size_t n[M_COUNT];
	rows_item *rows;
	size_t nrows, cap;
	bool failed;
};

sy_store_scope_ops *sy_store_scope_ops_new(void)
{
	sy_store_scope_ops *o = sy_calloc(1, sizeof *o);
	if (o && !sy_store_scope_ops_clear(o)) {
		sy_store_scope_ops_free(o);
		return NULL;
	}
	return o;
}

void sy_store_scope_ops_free(sy_store_scope_ops *o)
{
	if (!o)
		return;
	for (int i = 0; i < M_COUNT; i++)
		sy_buf_free(&o->col[i]);
	for (size_t i = 0; i < o->nrows; i++)
		sy_free(o->rows[i].text);
	sy_free(o->rows);
	sy_free(o);
}

bool sy_store_scope_ops_clear(sy_store_scope_ops *o)
{
	bool ok = true;
	for (int i = 0; i < M_COUNT; i++) {
		sy_buf_reset(&o->col[i]);
		ok &= sy_buf_putc(&o->col[i], '{');
		o->n[i] = 0;
	}
	for (size_t i = 0; i < o->nrows; i++)
		sy_free(o->rows[i].text);
	o->nrows = 0;
	o->failed = !ok;
	return ok;
}

static void elem(sy_store_scope_ops *o, int col, const char *s)
{
	sy_store_array_elem(&o->col[col], o->n[col] == 0, s);
	o->n[col]++;
	if (o->col[col].failed)
		o->failed = true;
}

bool sy_store_scope_ops_member(sy_store_scope_ops *o, const char *scope, const char *key,
                               const char *const *users, size_t n)
{
	elem(o, M_DEL_SCOPE, scope);
	elem(o, M_DEL_KEY, key);
	for (size_t i = 0; i < n; i++) {
		elem(o, M_INS_SCOPE, scope);
		elem(o, M_INS_KEY, key);
		elem(o, M_INS_USER, users[i]);
	}
	return !o->failed;
}

bool sy_store_scope_ops_link(sy_store_scope_ops *o, const char *link, const char *key,
                             const char *target)
{
	if (!target) {
		elem(o, L_DEL_LINK, link);
		elem(o, L_DEL_KEY, key);
	} else {
		elem(o, L_SET_LINK, link);
		elem(o, L_SET_KEY, key);
		elem(o, L_SET_TARGET, target);
	}
	return !o->failed;
}

/* Copies s into *pos (NULL stays NULL). */
static const char *put(char **pos, const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	memcpy(*pos, s, n);
	char *at = *pos;
	*pos += n;
	return at;
}

bool sy_store_scope_ops_rows(sy_store_scope_ops *o, const sy_store_scope_rows *x)
{
	if (o->failed)
		return false;
	const char *s[] = {x->table_id,   x->relation,       x->pk_column,
	                   x->hop_column, x->hop_type,       x->owner_column,
	                   x->keys,       x->readers_before, x->readers_after};
	size_t len = 0;
	for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
		len += s[i] ? strlen(s[i]) + 1 : 0;
	if (o->nrows == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 8;
		rows_item *r = sy_realloc(o->rows, cap * sizeof *r);
		if (!r) {
			o->failed = true;
			return false;
		}
		o->rows = r;
		o->cap = cap;
	}
	char *text = sy_malloc(len ? len : 1);
	if (!text) {
		o->failed = true;
		return false;
	}
	rows_item *it = &o->rows[o->nrows++];
	char *pos = text;
	it->text = text;
	it->r = *x;
	it->r.table_id = put(&pos, x->table_id);
	it->r.relation = put(&pos, x->relation);
	it->r.pk_column = put(&pos, x->pk_column);
	it->r.hop_column = put(&pos, x->hop_column);
	it->r.hop_type = put(&pos, x->hop_type);
	it->r.owner_column = put(&pos, x->owner_column);
	it->r.keys = put(&pos, x->keys);
	it->r.readers_before = put(&pos, x->readers_before);
	it->r.readers_after = put(&pos, x->readers_after);
	return true;
}

size_t sy_store_scope_ops_count(const sy_store_scope_ops *o)
{
	return o->n[M_DEL_SCOPE] + o->n[L_DEL_LINK] + o->n[L_SET_LINK] + o->nrows;
}

#define LEASE_CTE                                                                                  \
	"WITH lease AS MATERIALIZED ("                                                             \
	"  SELECT 1 FROM synchro.writer_lease"                                                     \
	"   WHERE role = $1 AND writer_epoch = $2::bigint AND fencing_token = $3::uuid"            \
	"     AND lease_until > now())"

/* The users of each (scope, key) are replaced: their rows deleted here, inserted by the next
 * statement (one statement could not: its insert would not see its own deletes). */
static const char mirror_del_sql[] =
        LEASE_CTE ","
                  " dm AS (DELETE FROM synchro.scope_members m"
                  "         USING unnest($4::text[], $5::text[]) AS d(s, k)"
                  "        WHERE m.scope = d.s AND m.key = d.k AND EXISTS (SELECT 1 FROM lease)"
                  "        RETURNING 1),"
                  " dl AS (DELETE FROM synchro.scope_links m"
                  "         USING unnest($6::text[], $7::text[]) AS d(s, k)"
                  "        WHERE m.link = d.s AND m.key = d.k AND EXISTS (SELECT 1 FROM lease)"
                  "        RETURNING 1)"
                  " SELECT (SELECT count(*) FROM lease), (SELECT count(*) FROM dm), (SELECT "
                  "count(*) FROM dl)";
static const char mirror_ins_sql[] = LEASE_CTE
        ","
        " im AS (INSERT INTO synchro.scope_members (scope, key, user_id)"
        "        SELECT s, k, u FROM unnest($4::text[], $5::text[], $6::text[]) AS i(s, k, u)"
        "         WHERE EXISTS (SELECT 1 FROM lease)"
        "        ON CONFLICT DO NOTHING RETURNING 1),"
        " il AS (INSERT INTO synchro.scope_links (link, key, target)"
        "        SELECT s, k, t FROM unnest($7::text[], $8::text[], $9::text[]) AS i(s, k, t)"
        "         WHERE EXISTS (SELECT 1 FROM lease)"
        "        ON CONFLICT (link, key) DO UPDATE SET target = EXCLUDED.target RETURNING 1)"
        " SELECT (SELECT count(*) FROM lease), (SELECT count(*) FROM im), (SELECT count(*) FROM "
        "il)";

/* Runs one fenced statement of n parameters after the lease's three; *fenced when the lease
 * refused it. */
static sy_store_status fenced_exec(PGconn *c, const sy_store_lease *l, const char *sql,
                                   const char *const *params, int n, bool *fenced, long long *count,
                                   sy_error *err)
{
	char epoch[24];
	snprintf(epoch, sizeof epoch, "%lld", l->epoch);
	const char *p[16] = {SY_STORE_LEASE_ROLE, epoch, l->token};
	for (int i = 0; i < n && i < 13; i++)
		p[3 + i] = params[i];
	sy_store_status st;
	PGresult *r = sy_store_exec(c, sql, 3 + n, p, PGRES_TUPLES_OK, "write the scope mirror",
	                            NULL, &st, err);
	if (!r)
		return st;
	*fenced = strcmp(PQgetvalue(r, 0, 0), "1") != 0;
	if (count)
		*count += strtoll(PQgetvalue(r, 0, 1), NULL, 10);
	PQclear(r);
	return SY_STORE_OK;
}

sy_store_status sy_store_scope_ops_write_mirror(PGconn *c, const sy_store_lease *l,
                                                sy_store_scope_ops *o, bool *fenced, sy_error *err)
{
	*fenced = false;
	if (o->failed)
		return sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	if (o->n[M_DEL_SCOPE] + o->n[L_DEL_LINK] + o->n[L_SET_LINK] == 0)
		return SY_STORE_OK;
	bool ok = true;
	for (int i = 0; i < M_COUNT; i++)
		ok &= sy_buf_putc(&o->col[i], '}');
	sy_store_status st = SY_STORE_OK;
	if (!ok)
		st = sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	if (st == SY_STORE_OK) {
		const char *p[] = {o->col[M_DEL_SCOPE].data, o->col[M_DEL_KEY].data,
		                   o->col[L_DEL_LINK].data, o->col[L_DEL_KEY].data};
		st = fenced_exec(c, l, mirror_del_sql, p, 4, fenced, NULL, err);
	}
	if (st == SY_STORE_OK && !*fenced) {
		const char *p[] = {o->col[M_INS_SCOPE].data, o->col[M_INS_KEY].data,
		                   o->col[M_INS_USER].data,  o->col[L_SET_LINK].data,
		                   o->col[L_SET_KEY].data,   o->col[L_SET_TARGET].data};
		st = fenced_exec(c, l, mirror_ins_sql, p, 6, fenced, NULL, err);
	}
	/* Reopened: the batch may be written again after a failure. */
	for (int i = 0; i < M_COUNT; i++)
		if (o->col[i].len > 0 && o->col[i].data[o->col[i].len - 1] == '}')
			o->col[i].data[--o->col[i].len] = '\0';
	return st;
}

/*
 * The entries of a table's scope changes in one statement: for each change (in order: idx),
 * the rows of its hop values by the index of the hop column (the write runs with
 * enable_seqscan off: a table that grew since its statistics must not be read whole once per
 * scope change), each row's fence by its primary key (OFFSET 0 keeps both lookups per change
 * and per row whatever the estimates). Within a commit LSN the ordinals continue after the
 * highest scope ordinal already there (this write's earlier statements included; read once,
 * before the insert: MATERIALIZED, or it is read again for each row inserted), so a
 * transaction's scope changes never collide, whether written in one batch or in pieces. The
 * xid is widened as the entries' insert does (changelog.c).
 */
static char *rows_sql(const sy_store_scope_rows *x)
{
	sy_buf b = {0};
	sy_buf_printf(
	        &b,
	        LEASE_CTE
	        ","
	        " nx AS (SELECT pg_catalog.pg_current_xact_id()::text::bigint AS v),"
	        " ev AS (SELECT * FROM unnest($4::integer[], $5::pg_lsn[], $6::bigint[],"
	        "         $7::bigint[], $8::text[], $9::text[], $10::text[])"
	        "         AS e(idx, lsn, xid, ts, keys, rb, ra)),"
	        " src AS (SELECT e.idx, e.lsn, e.xid, e.ts, e.rb, e.ra, f.pk, f.version, r.owner"
	        "   FROM ev e"
	        "   CROSS JOIN LATERAL (SELECT r.%s AS pk, %s%s::text AS owner FROM %s r"
	        "          WHERE r.%s = ANY (e.keys::%s[]) OFFSET 0) r"
	        "   CROSS JOIN LATERAL (SELECT f.pk, f.version FROM synchro.row_fences f"
	        "          WHERE f.table_id = $11 AND f.pk = r.pk::text AND f.state = 'live'"
	        "         OFFSET 0) f),"
	        " num AS (SELECT s.*, row_number() OVER (PARTITION BY s.lsn ORDER BY s.idx, s.pk)"
	        "           AS n FROM src s),"
	        " base AS MATERIALIZED (SELECT l.lsn, coalesce((SELECT max(c.ordinal) + 1"
	        "            FROM synchro.changelog c"
	        "            WHERE c.commit_lsn = l.lsn AND c.ordinal >= %d), %d) AS o"
	        "            FROM (SELECT DISTINCT lsn FROM ev) l),"
	        " ins AS ("
	        "  INSERT INTO synchro.changelog (commit_lsn, ordinal, xid, table_id, pk, version,"
	        "      state, owner_before, owner_after, committed_at, written_epoch,"
	        "      readers_before, readers_after)"
	        "  SELECT num.lsn, base.o + num.n::integer - 1,"
	        "         CASE WHEN w.e >= 0 THEN ((w.e << 32) | num.xid)::text::xid8 END,"
	        "         $11, num.pk, num.version, 'live', num.owner, num.owner,"
	        "         timestamptz '2000-01-01 00:00:00+00' + num.ts * interval '1 microsecond',"
	        "         $2::bigint, num.rb::text[], num.ra::text[]"
	        "    FROM num JOIN base ON base.lsn = num.lsn CROSS JOIN nx"
	        "   CROSS JOIN LATERAL (SELECT (nx.v >> 32)"
	        "        - CASE WHEN num.xid > (nx.v & 4294967295) THEN 1 ELSE 0 END AS e) w"
	        "   WHERE EXISTS (SELECT 1 FROM lease)"
	        "  ON CONFLICT (commit_lsn, ordinal) DO NOTHING"
	        "  RETURNING 1)"
	        " SELECT (SELECT count(*) FROM lease), (SELECT count(*) FROM ins)",
	        x->pk_column, x->owner_column ? "r." : "NULL",
	        x->owner_column ? x->owner_column : "", x->relation, x->hop_column, x->hop_type,
	        SY_STORE_SCOPE_ORDINAL, SY_STORE_SCOPE_ORDINAL);
	if (b.failed) {
		sy_buf_free(&b);
		return NULL;
	}
	return b.data;
}

enum { R_IDX, R_LSN, R_XID, R_TS, R_KEYS, R_RB, R_RA, R_COUNT };

/* The statement of table_id's scope changes (those of o->rows from first on). */
static sy_store_status write_table_rows(PGconn *c, const sy_store_lease *l, sy_store_scope_ops *o,
                                        size_t first, bool *fenced, long long *inserted,
                                        sy_error *err)
{
	const sy_store_scope_rows *x0 = &o->rows[first].r;
	sy_buf col[R_COUNT] = {0};
	size_t n = 0;
	for (size_t i = first; i < o->nrows; i++) {
		const sy_store_scope_rows *x = &o->rows[i].r;
		if (strcmp(x->table_id, x0->table_id) != 0)
			continue;
		const char *sep = n == 0 ? "" : ",";
		sy_buf_printf(&col[R_IDX], "%s%zu", sep, i);
		sy_buf_printf(&col[R_LSN], "%s%X/%X", sep, (unsigned)(x->commit_lsn >> 32),
		              (unsigned)(x->commit_lsn & 0xffffffffu));
		sy_buf_printf(&col[R_XID], "%s%" PRIu32, sep, x->xid);
		sy_buf_printf(&col[R_TS], "%s%" PRId64, sep, x->commit_time);
		sy_store_array_elem(&col[R_KEYS], n == 0, x->keys);
		sy_store_array_elem(&col[R_RB], n == 0, x->readers_before);
		sy_store_array_elem(&col[R_RA], n == 0, x->readers_after);
		n++;
	}
	bool ok = true;
	const char *p[8];
	for (int k = 0; k < R_COUNT; k++) {
		/* {…} around each: the elements were appended without them. */
		sy_buf wrapped = {0};
		sy_buf_putc(&wrapped, '{');
		if (col[k].data)
			sy_buf_puts(&wrapped, col[k].data);
		sy_buf_putc(&wrapped, '}');
		sy_buf_free(&col[k]);
		col[k] = wrapped;
		ok &= !col[k].failed;
		p[k] = col[k].data;
	}
	p[R_COUNT] = x0->table_id;
	char *sql = ok ? rows_sql(x0) : NULL;
	sy_store_status st = sql ? fenced_exec(c, l, sql, p, 8, fenced, inserted, err)
	                         : sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	sy_free(sql);
	for (int k = 0; k < R_COUNT; k++)
		sy_buf_free(&col[k]);
	return st;
}

sy_store_status sy_store_scope_ops_write_rows(PGconn *c, const sy_store_lease *l,
                                              sy_store_scope_ops *o, sy_store_tick_fn tick,
                                              void *tick_arg, bool *fenced, long long *inserted,
                                              sy_error *err)
{
	*fenced = false;
	if (o->nrows == 0)
		return SY_STORE_OK;
	sy_store_status st = sy_store_command(c, "SET LOCAL enable_seqscan = off",
	                                      "write the scope changes", err);
	if (st != SY_STORE_OK)
		return st;
	/* One statement per table, in the order the tables first appear. */
	for (size_t i = 0; i < o->nrows && !*fenced; i++) {
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(o->rows[j].r.table_id, o->rows[i].r.table_id) == 0;
		if (seen)
			continue;
		if (tick)
			tick(tick_arg);
		st = write_table_rows(c, l, o, i, fenced, inserted, err);
		if (st != SY_STORE_OK)
			return st;
	}
	return SY_STORE_OK;
}

static const char load_sql[] =
        "SELECT true, scope, key, user_id FROM synchro.scope_members"
        " WHERE $1::text[] IS NULL OR scope = ANY ($1::text[])"
        " UNION ALL"
        " SELECT false, link, key, target FROM synchro.scope_links"
        "  WHERE target IS NOT NULL AND ($2::text[] IS NULL OR link = ANY ($2::text[]))";

sy_store_status sy_store_scope_mirror_load(PGconn *c, const char *scopes, const char *links,
                                           sy_store_mirror_fn fn, void *arg, sy_error *err)
{
	sy_store_status st;
	const char *p[] = {scopes, links};
	PGresult *r = sy_store_exec(c, load_sql, 2, p, PGRES_TUPLES_OK, "read the scope mirror",
	                            NULL, &st, err);
	if (!r)
		return st;
	int n = PQntuples(r);
	for (int i = 0; i < n; i++) {
		bool member = PQgetvalue(r, i, 0)[0] == 't';
		if (!fn(arg, member, PQgetvalue(r, i, 1), PQgetvalue(r, i, 2),
		        PQgetvalue(r, i, 3))) {
			PQclear(r);
			return sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
		}
	}
	PQclear(r);
	return SY_STORE_OK;
}

sy_store_status sy_store_wal_insert_lsn(PGconn *c, uint64_t *out, sy_error *err)
{
	sy_store_status st;
	PGresult *r = sy_store_exec(c, "SELECT pg_catalog.pg_current_wal_insert_lsn()::text", 0,
	                            NULL, PGRES_TUPLES_OK, "read the WAL position", NULL, &st, err);
	if (!r)
		return st;
	unsigned long long v = 0;
	bool ok = PQntuples(r) == 1 && sy_store_lsn_parse(PQgetvalue(r, 0, 0), &v);
	PQclear(r);
	if (!ok)
		return sy_store_fail(err, SY_STORE_FAILED, "read the WAL position: no position");
	*out = v;
	return SY_STORE_OK;
}
