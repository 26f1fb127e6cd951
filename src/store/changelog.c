/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * changelog.c: the writes of synchro.changelog. Only walsync writes it.
 *
 * Layer: middle of src/store (doc/hacking.md).
 * Rules: doc/contract.md#wal-alone-publishes (walsync alone writes the changelog).
 * Notes: Each chunk of decoded changes is one multi-row INSERT. Its arrays go through
 * unnest, so round trips stay far below one per change. The writer lease fences the INSERT
 * in the same statement.
 */
#include "config.h"

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/changelog.h"
#include "store/changelog_scopes.h"
#include "store/conn.h"
#include "synchro/alloc.h"
#include "synchro/buf.h"

/* The array parameters of one statement, in the order of write_sql's $4..$16 (and
 * write_readers_sql's $21, $22). */
enum {
	COL_LSN,
	COL_ORDINAL,
	COL_XID,
	COL_TIME,
	COL_TABLE,
	COL_PK,
	COL_VERSION,
	COL_STATE,
	COL_MUTATION,
	COL_CLIENT,
	COL_USER,
	COL_OWNER_BEFORE,
	COL_OWNER_AFTER,
	COL_READERS_BEFORE, /* with scopes only: $21, $22 */
	COL_READERS_AFTER,
	COL_COUNT
};

/* Each column is an array literal under construction: "{" and the elements so far. */
typedef struct {
	sy_buf col[COL_COUNT];
	size_t rows;
} chunk;

struct sy_store_changes {
	size_t chunk_rows;
	chunk *chunks;
	size_t nchunks; /* chunks in use; chunks[nchunks - 1] receives the next change */
	size_t cap;
	size_t rows;
	sy_buf epoch_client;
	sy_buf epoch_value;
	sy_buf epoch_xid;
	size_t epochs;
	char end_slot[64]; /* the stream position the batch ends at, recorded with it */
	char end_lsn[SY_STORE_LSN_MAX + 1]; /* "" when none */
	bool readers;                       /* the database has migration 22 */
	sy_store_scope_ops *scopes;         /* mirror rows and scope changes */
	bool failed;
};

static bool chunk_start(chunk *k)
{
	k->rows = 0;
	bool ok = true;
	for (int i = 0; i < COL_COUNT; i++) {
		sy_buf_reset(&k->col[i]);
		ok &= sy_buf_putc(&k->col[i], '{');
	}
	return ok;
}

sy_store_changes *sy_store_changes_new(size_t chunk_rows)
{
	sy_store_changes *b = sy_calloc(1, sizeof *b);
	if (!b)
		return NULL;
	b->chunk_rows = chunk_rows ? chunk_rows : 1;
	b->scopes = sy_store_scope_ops_new();
	if (!b->scopes) {
		sy_free(b);
		return NULL;
	}
	sy_store_changes_clear(b);
	if (b->failed) {
		sy_store_changes_free(b);
		return NULL;
	}
	return b;
}

void sy_store_changes_free(sy_store_changes *b)
{
	if (!b)
		return;
	for (size_t k = 0; k < b->cap; k++)
		for (int i = 0; i < COL_COUNT; i++)
			sy_buf_free(&b->chunks[k].col[i]);
	sy_free(b->chunks);
	sy_buf_free(&b->epoch_client);
	sy_buf_free(&b->epoch_value);
	sy_buf_free(&b->epoch_xid);
	sy_store_scope_ops_free(b->scopes);
	sy_free(b);
}

static bool add_chunk(sy_store_changes *b)
{
	if (b->nchunks == b->cap) {
		size_t ncap = b->cap ? b->cap * 2 : 4;
		chunk *n = sy_realloc(b->chunks, ncap * sizeof *n);
		if (!n)
			return false;
		memset(n + b->cap, 0, (ncap - b->cap) * sizeof *n);
		b->chunks = n;
		b->cap = ncap;
	}
	if (!chunk_start(&b->chunks[b->nchunks]))
		return false;
	b->nchunks++;
	return true;
}

void sy_store_changes_clear_rows(sy_store_changes *b)
{
	b->nchunks = 0;
	b->rows = 0;
	b->end_lsn[0] = '\0';
	b->failed = !add_chunk(b);
	b->failed |= !sy_store_scope_ops_clear(b->scopes);
}

void sy_store_changes_clear(sy_store_changes *b)
{
	b->epochs = 0;
	sy_buf_reset(&b->epoch_client);
	sy_buf_reset(&b->epoch_value);
	sy_buf_reset(&b->epoch_xid);
	sy_store_changes_clear_rows(b);
	b->failed |= !sy_buf_putc(&b->epoch_client, '{') || !sy_buf_putc(&b->epoch_value, '{') ||
	             !sy_buf_putc(&b->epoch_xid, '{');
}

void sy_store_changes_set_end(sy_store_changes *b, const char *slot, uint64_t end_lsn)
{
	snprintf(b->end_slot, sizeof b->end_slot, "%s", slot);
	sy_store_lsn_format(end_lsn, b->end_lsn);
}

size_t sy_store_changes_count(const sy_store_changes *b)
{
	return b->rows;
}

void sy_store_changes_set_scopes(sy_store_changes *b, bool on)
{
	b->readers = on;
}

bool sy_store_changes_mirror_member(sy_store_changes *b, const char *scope, const char *key,
                                    const char *const *users, size_t n)
{
	if (b->failed || !sy_store_scope_ops_member(b->scopes, scope, key, users, n))
		return !(b->failed = true);
	return true;
}

bool sy_store_changes_mirror_link(sy_store_changes *b, const char *link, const char *key,
                                  const char *target)
{
	if (b->failed || !sy_store_scope_ops_link(b->scopes, link, key, target))
		return !(b->failed = true);
	return true;
}

bool sy_store_changes_add_scope_rows(sy_store_changes *b, const sy_store_scope_rows *x)
{
	if (b->failed || !sy_store_scope_ops_rows(b->scopes, x))
		return !(b->failed = true);
	return true;
}

size_t sy_store_changes_scope_count(const sy_store_changes *b)
{
	return sy_store_scope_ops_count(b->scopes);
}

size_t sy_store_changes_epoch_count(const sy_store_changes *b)
{
	return b->epochs;
}

bool sy_store_changes_add(sy_store_changes *b, const sy_store_change *ch)
{
	if (b->failed)
		return false;
	chunk *k = &b->chunks[b->nchunks - 1];
	if (k->rows == b->chunk_rows) {
		if (!add_chunk(b)) {
			b->failed = true;
			return false;
		}
		k = &b->chunks[b->nchunks - 1];
	}
	bool first = k->rows == 0;
	const char *sep = first ? "" : ",";
	sy_buf_printf(&k->col[COL_LSN], "%s%X/%X", sep, (unsigned)(ch->commit_lsn >> 32),
	              (unsigned)(ch->commit_lsn & 0xffffffffu));
	sy_buf_printf(&k->col[COL_ORDINAL], "%s%d", sep, ch->ordinal);
	sy_buf_printf(&k->col[COL_XID], "%s%" PRIu32, sep, ch->xid);
	sy_buf_printf(&k->col[COL_TIME], "%s%" PRId64, sep, ch->commit_time);
	sy_store_array_elem(&k->col[COL_TABLE], first, ch->table_id);
	sy_store_array_elem(&k->col[COL_PK], first, ch->pk);
	sy_store_array_elem(&k->col[COL_VERSION], first, ch->version);
	sy_buf_printf(&k->col[COL_STATE], "%s%s", sep, ch->deleted ? "deleted" : "live");
	sy_store_array_elem(&k->col[COL_MUTATION], first, ch->mutation_id);
	sy_store_array_elem(&k->col[COL_CLIENT], first, ch->client_id);
	sy_store_array_elem(&k->col[COL_USER], first, ch->user_id);
	sy_store_array_elem(&k->col[COL_OWNER_BEFORE], first, ch->owner_before);
	sy_store_array_elem(&k->col[COL_OWNER_AFTER], first, ch->owner_after);
	sy_store_array_elem(&k->col[COL_READERS_BEFORE], first, ch->readers_before);
	sy_store_array_elem(&k->col[COL_READERS_AFTER], first, ch->readers_after);
	for (int i = 0; i < COL_COUNT; i++)
		if (k->col[i].failed)
			b->failed = true;
	if (b->failed)
		return false;
	k->rows++;
	b->rows++;
	return true;
}

bool sy_store_changes_add_epoch(sy_store_changes *b, const char *client_id, long long epoch,
                                uint32_t xid)
{
	if (b->failed)
		return false;
	sy_store_array_elem(&b->epoch_client, b->epochs == 0, client_id);
	sy_buf_printf(&b->epoch_value, "%s%lld", b->epochs == 0 ? "" : ",", epoch);
	sy_buf_printf(&b->epoch_xid, "%s%" PRIu32, b->epochs == 0 ? "" : ",", xid);
	if (b->epoch_client.failed || b->epoch_value.failed || b->epoch_xid.failed) {
		b->failed = true;
		return false;
	}
	b->epochs++;
	return true;
}

/*
 * The lease CTE is the fence: materialized once, read by both writes, so the insert and the
 * epoch upsert either both see the caller's live lease or both do nothing, and the first
 * column tells which. The epochs live in synchro.client_progress (migration 9), which only
 * walsync writes: every push holds its client's row FOR NO KEY UPDATE for its whole
 * transaction, and updating that row made this statement wait on pushes. The foreign key
 * check takes FOR KEY SHARE, which does not conflict with it. The cap at
 * accepted_write_epoch (against a forged epoch message) is a plain read in this
 * statement's snapshot: the push that raised it is decoded as soon as its commit record is
 * in the WAL, which can be a moment before that commit is visible to new snapshots, so
 * wait_visible() first waits until the source transaction of every epoch message is
 * visible; this later snapshot then reads the committed accepted_write_epoch, and a genuine
 * epoch is never capped below itself.
 * The 32-bit stream xid is widened with the epoch of this statement's own xid (which the
 * insert needs anyway): the source's was assigned before it. (The snapshot's xmax would not
 * do: the source may still count as running.) Commit times arrive as
 * microseconds since 2000-01-01, the stream's own unit.
 */
#define WRITE_SQL_HEAD(RC, RS, RP, RA)                                                             \
	"WITH lease AS MATERIALIZED ("                                                             \
	"  SELECT 1 FROM synchro.writer_lease"                                                     \
	"   WHERE role = $1 AND writer_epoch = $2::bigint AND fencing_token = $3::uuid"            \
	"     AND lease_until > now()),"                                                           \
	" nx AS (SELECT pg_catalog.pg_current_xact_id()::text::bigint AS v),"                      \
	" ins AS ("                                                                                \
	"  INSERT INTO synchro.changelog (commit_lsn, ordinal, xid, table_id, pk, version, state," \
	"      mutation_id, client_id, user_id, owner_before, owner_after, committed_at,"          \
	"      written_epoch" RC ")"                                                               \
	"  SELECT u.lsn, u.ord,"                                                                   \
	"         CASE WHEN w.e >= 0 THEN ((w.e << 32) | u.xid)::text::xid8 END,"                  \
	"         u.tab, u.pk, u.ver, u.st, u.mid, u.cid, u.uid, u.ob, u.oa,"                      \
	"         timestamptz '2000-01-01 00:00:00+00' + u.ts * interval '1 microsecond',"         \
	"         $2::bigint" RS                                                                   \
	"    FROM unnest($4::pg_lsn[], $5::integer[], $6::bigint[], $7::bigint[], $8::text[],"     \
	"                $9::text[], $10::text[], $11::text[], $12::uuid[], $13::uuid[],"          \
	"                $14::text[], $15::text[], $16::text[]" RP ")"                             \
	"         AS u(lsn, ord, xid, ts, tab, pk, ver, st, mid, cid, uid, ob, oa" RA ")"          \
	"   CROSS JOIN nx"                                                                         \
	"   CROSS JOIN LATERAL (SELECT (nx.v >> 32)"                                               \
	"        - CASE WHEN u.xid > (nx.v & 4294967295) THEN 1 ELSE 0 END AS e) w"                \
	"   WHERE EXISTS (SELECT 1 FROM lease)"                                                    \
	"  ON CONFLICT (commit_lsn, ordinal) DO NOTHING"                                           \
	"  RETURNING 1),"                                                                          \
	" ep AS ("                                                                                 \
	"  INSERT INTO synchro.client_progress AS p (client_id, materialized_write_epoch)"         \
	"  SELECT e.cid, LEAST(c.accepted_write_epoch, e.epoch)"                                   \
	"    FROM (SELECT x.cid, max(x.ep) AS epoch"                                               \
	"            FROM unnest($17::uuid[], $18::bigint[]) AS x(cid, ep) GROUP BY x.cid) e"      \
	"    JOIN synchro.clients c ON c.client_id = e.cid"                                        \
	"   WHERE EXISTS (SELECT 1 FROM lease)"                                                    \
	"  ON CONFLICT (client_id) DO UPDATE"                                                      \
	"     SET materialized_write_epoch = EXCLUDED.materialized_write_epoch"                    \
	"   WHERE p.materialized_write_epoch < EXCLUDED.materialized_write_epoch"                  \
	"  RETURNING 1)"
#define WRITE_SQL_TAIL                                                                             \
	" SELECT (SELECT count(*) FROM lease), (SELECT count(*) FROM ins), (SELECT count(*) FROM " \
	"ep)"
static const char write_sql[] = WRITE_SQL_HEAD("", "", "", "") WRITE_SQL_TAIL;
/* Migration 14: the durable stream position, in the transaction of what it covers. */
#define WRITE_POS_CTE                                                                              \
	", pos AS ("                                                                               \
	"  UPDATE synchro.stream_position SET slot = $19,"                                         \
	"     materialized_lsn = GREATEST(coalesce(materialized_lsn, '0/0'), $20::pg_lsn),"        \
	"     updated_at = now()"                                                                  \
	"   WHERE $20::pg_lsn IS NOT NULL AND EXISTS (SELECT 1 FROM lease))"
static const char write_pos_sql[] = WRITE_SQL_HEAD("", "", "", "") WRITE_POS_CTE WRITE_SQL_TAIL;
/* Migration 22: each entry's readers ($21, $22), with the stream position ($20 NULL for a
 * piece). */
static const char write_readers_sql[] =
        WRITE_SQL_HEAD(", readers_before, readers_after", ", u.rb::text[], u.ra::text[]",
                       ", $21::text[], $22::text[]", ", rb, ra") WRITE_POS_CTE WRITE_SQL_TAIL;

/* Closes each array literal of k (and of the epochs when with_epochs) for the statement;
 * reopen() undoes it, so the batch can be written again after a failure. */
static bool close_arrays(sy_store_changes *b, chunk *k, bool with_epochs)
{
	bool ok = true;
	for (int i = 0; i < COL_COUNT; i++)
		ok &= sy_buf_putc(&k->col[i], '}');
	if (with_epochs) {
		ok &= sy_buf_putc(&b->epoch_client, '}');
		ok &= sy_buf_putc(&b->epoch_value, '}');
		ok &= sy_buf_putc(&b->epoch_xid, '}');
	}
	return ok;
}

static void reopen(sy_store_changes *b, chunk *k, bool with_epochs)
{
	for (int i = 0; i < COL_COUNT; i++)
		if (k->col[i].len > 0 && k->col[i].data[k->col[i].len - 1] == '}')
			k->col[i].data[--k->col[i].len] = '\0';
	if (with_epochs) {
		sy_buf *e[] = {&b->epoch_client, &b->epoch_value, &b->epoch_xid};
		for (int i = 0; i < 3; i++)
			if (e[i]->len > 0 && e[i]->data[e[i]->len - 1] == '}')
				e[i]->data[--e[i]->len] = '\0';
	}
}

/*
 * Waits until the source transaction of every epoch message of b (its closed xid array) is
 * visible to a new snapshot (see write_sql). The 32-bit xid is widened against the
 * snapshot's xmax by the signed 32-bit distance: live xids are never 2^31 apart. Bounded:
 * after WAIT_VISIBLE_MS the write fails and the slot delivers the batch again.
 */
#define WAIT_VISIBLE_MS 10000
static const char visible_sql[] =
        "SELECT count(*) FROM unnest($1::bigint[]) AS x(xid),"
        " (SELECT pg_catalog.pg_current_snapshot() AS s) n"
        " CROSS JOIN LATERAL (SELECT pg_catalog.pg_snapshot_xmax(n.s)::text::bigint AS m) w"
        " WHERE NOT pg_catalog.pg_visible_in_snapshot((w.m"
        "   + ((x.xid - (w.m & 4294967295) + 2147483648) & 4294967295) - 2147483648)"
        "   ::text::xid8, n.s)";

static sy_store_status wait_visible(PGconn *c, const sy_store_changes *b, sy_error *err)
{
	const char *p[1] = {b->epoch_xid.data};
	long waited = 0;
	for (int nap = 1;; nap = nap < 16 ? nap * 2 : nap) {
		sy_store_status st;
		PGresult *r = sy_store_exec(c, visible_sql, 1, p, PGRES_TUPLES_OK,
		                            "wait for the accepted epochs", NULL, &st, err);
		if (!r)
			return st;
		bool pending = strcmp(PQgetvalue(r, 0, 0), "0") != 0;
		PQclear(r);
		if (!pending)
			return SY_STORE_OK;
		if (waited >= WAIT_VISIBLE_MS)
			return sy_store_fail(err, SY_STORE_FAILED,
			                     "a decoded push is still not visible after %d ms",
			                     WAIT_VISIBLE_MS);
		(void)poll(NULL, 0, nap);
		waited += nap;
	}
}

/*
 * sy_store_exec() that keeps calling tick (every TICK_MS) while the statement runs: a write
 * that waits on a lock or takes long never starves walsync's heartbeat, which renews the
 * lease on a connection of its own, whatever the transaction's size.
 */
#define TICK_MS 200
static PGresult *exec_ticking(PGconn *c, const char *sql, int n, const char *const *params,
                              sy_store_tick_fn tick, void *arg, sy_store_status *st, sy_error *err)
{
	if (!tick)
		return sy_store_exec(c, sql, n, params, PGRES_TUPLES_OK, "write the changelog",
		                     NULL, st, err);
	if (!PQsendQueryParams(c, sql, n, NULL, params, NULL, NULL, 0))
		return sy_store_result_failure(c, NULL, "write the changelog", NULL, st, err);
	PGresult *last = NULL;
	for (;;) {
		while (PQisBusy(c)) {
			struct pollfd pfd = {PQsocket(c), POLLIN, 0};
			(void)poll(&pfd, 1, TICK_MS);
			tick(arg);
			if (!PQconsumeInput(c))
				break;
		}
		PGresult *r = PQgetResult(c);
		if (!r)
			break;
		if (last)
			PQclear(last);
		last = r;
	}
	if (last && PQresultStatus(last) == PGRES_TUPLES_OK) {
		*st = SY_STORE_OK;
		return last;
	}
	return sy_store_result_failure(c, last, "write the changelog", NULL, st, err);
}

/* One guarded statement for chunk k; the epochs travel with the first chunk. */
static sy_store_status write_chunk(PGconn *c, const sy_store_lease *l, sy_store_changes *b,
                                   chunk *k, bool with_epochs, sy_store_tick_fn tick,
                                   void *tick_arg, bool *fenced, sy_store_written *out,
                                   sy_error *err)
{
	char epoch[24];
	snprintf(epoch, sizeof epoch, "%lld", l->epoch);
	if (!close_arrays(b, k, with_epochs)) {
		reopen(b, k, with_epochs);
		return sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	}
	if (with_epochs && b->epochs > 0) {
		sy_store_status vs = wait_visible(c, b, err);
		if (vs != SY_STORE_OK) {
			reopen(b, k, with_epochs);
			return vs;
		}
	}
	const char *p[22] = {SY_STORE_LEASE_ROLE, epoch, l->token};
	for (int i = 0; i <= COL_OWNER_AFTER; i++)
		p[3 + i] = k->col[i].data;
	p[16] = with_epochs ? b->epoch_client.data : "{}";
	p[17] = with_epochs ? b->epoch_value.data : "{}";
	p[18] = b->end_slot;
	p[19] = with_epochs && b->end_lsn[0] ? b->end_lsn : NULL;
	p[20] = k->col[COL_READERS_BEFORE].data;
	p[21] = k->col[COL_READERS_AFTER].data;
	bool pos = with_epochs && b->end_lsn[0] != '\0';
	const char *sql = b->readers ? write_readers_sql : pos ? write_pos_sql : write_sql;
	sy_store_status st;
	PGresult *r = exec_ticking(c, sql,
	                           b->readers ? 22
	                           : pos      ? 20
	                                      : 18,
	                           p, tick, tick_arg, &st, err);
	reopen(b, k, with_epochs);
	if (!r)
		return st;
	*fenced = strcmp(PQgetvalue(r, 0, 0), "1") != 0;
	out->inserted += strtoll(PQgetvalue(r, 0, 1), NULL, 10);
	out->epochs_advanced += strtoll(PQgetvalue(r, 0, 2), NULL, 10);
	PQclear(r);
	return SY_STORE_OK;
}

sy_store_status sy_store_changelog_write(PGconn *c, const sy_store_lease *l, sy_store_changes *b,
                                         bool rows_only, sy_store_tick_fn tick, void *tick_arg,
                                         sy_store_written *out, sy_error *err)
{
	memset(out, 0, sizeof *out);
	if (b->failed)
		return sy_store_fail(err, SY_STORE_NOMEM, "out of memory");
	bool scoped = sy_store_scope_ops_count(b->scopes) > 0;
	bool several = b->nchunks > 1 || scoped;
	sy_store_status st = SY_STORE_OK;
	bool fenced = false;
	if (several &&
	    (st = sy_store_command(c, "BEGIN", "write the changelog", err)) != SY_STORE_OK)
		return st;
	/* The mirror's rows in the transaction of the entries that follow from them. */
	if (scoped) {
		st = sy_store_scope_ops_write_mirror(c, l, b->scopes, &fenced, err);
		if (st != SY_STORE_OK)
			goto fail;
	}
	for (size_t i = 0; i < b->nchunks && !fenced; i++) {
		bool epochs = i == 0 && !rows_only;
		/* A batch of scope changes alone still records its stream position. */
		if (b->chunks[i].rows == 0 && (!epochs || (b->epochs == 0 && !scoped)))
			continue;
		if (i > 0 && tick)
			tick(tick_arg);
		st = write_chunk(c, l, b, &b->chunks[i], epochs, tick, tick_arg, &fenced, out, err);
		if (st != SY_STORE_OK)
			goto fail;
	}
	if (scoped && !fenced) {
		st = sy_store_scope_ops_write_rows(c, l, b->scopes, tick, tick_arg, &fenced,
		                                   &out->inserted, err);
		if (st != SY_STORE_OK)
			goto fail;
	}
	if (fenced) {
		st = sy_store_fail(err, SY_STORE_CONFLICT,
		                   "the writer lease refused the changelog write: epoch %lld is no "
		                   "longer the holder's",
		                   l->epoch);
		goto fail;
	}
	if (several &&
	    (st = sy_store_command(c, "COMMIT", "write the changelog", err)) != SY_STORE_OK)
		goto fail;
	return SY_STORE_OK;
fail:
	if (several)
		sy_store_rollback(c);
	memset(out, 0, sizeof *out);
	return st;
}

/* The first LSN of one row of one column (0 when there is no row or it is NULL). */
static sy_store_status first_lsn(PGconn *c, const char *sql, uint64_t *out, sy_error *err)
{
	sy_store_status st;
	PGresult *r = sy_store_exec(c, sql, 0, NULL, PGRES_TUPLES_OK, "read the changelog position",
	                            NULL, &st, err);
	if (!r)
		return st;
	unsigned long long v = 0;
	if (PQntuples(r) == 1 && !PQgetisnull(r, 0, 0) &&
	    !sy_store_lsn_parse(PQgetvalue(r, 0, 0), &v)) {
		PQclear(r);
		return sy_store_fail(err, SY_STORE_FAILED, "unexpected changelog position");
	}
	PQclear(r);
	*out = v;
	return SY_STORE_OK;
}

sy_store_status sy_store_changelog_last_lsn(PGconn *c, uint64_t *out, sy_error *err)
{
	uint64_t last = 0, horizon = 0, exists = 0;
	sy_store_status st = first_lsn(c,
	                               "SELECT commit_lsn FROM synchro.changelog"
	                               " ORDER BY commit_lsn DESC LIMIT 1",
	                               &last, err);
	/* The compaction horizon of migration 6, when the database has it: entries at or
	 * below it were removed, and must not come back from a slot that restarts behind. */
	if (st == SY_STORE_OK)
		st = first_lsn(c,
		               "SELECT '0/1'::pg_lsn WHERE"
		               " pg_catalog.to_regclass('synchro.changelog_horizon') IS NOT NULL",
		               &exists, err);
	if (st == SY_STORE_OK && exists)
		st = first_lsn(c, "SELECT max(commit_lsn) FROM synchro.changelog_horizon", &horizon,
		               err);
	if (st != SY_STORE_OK)
		return st;
	*out = last > horizon ? last : horizon;
	return SY_STORE_OK;
}

/* SY_STORE_SCOPE_ORDINAL in statement text: a scope change's entries are no message's. */
#define SCOPE_ORDINAL_TEXT "1073741824"
_Static_assert(SY_STORE_SCOPE_ORDINAL == 1073741824, "SCOPE_ORDINAL_TEXT");

sy_store_status sy_store_changelog_last_position(PGconn *c, uint64_t *lsn, int *ordinal,
                                                 sy_error *err)
{
	sy_store_status st = sy_store_changelog_last_lsn(c, lsn, err);
	if (st != SY_STORE_OK)
		return st;
	char text[SY_STORE_LSN_MAX + 1];
	sy_store_lsn_format(*lsn, text);
	const char *p[] = {text};
	PGresult *r =
	        sy_store_exec(c,
	                      "SELECT greatest((SELECT max(ordinal) FROM synchro.changelog"
	                      "                  WHERE commit_lsn = $1::pg_lsn"
	                      "                    AND ordinal < " SCOPE_ORDINAL_TEXT "),"
	                      "                (SELECT max(ordinal) FROM synchro.changelog_horizon"
	                      "                  WHERE commit_lsn = $1::pg_lsn))",
	                      1, p, PGRES_TUPLES_OK, "read the changelog position", NULL, &st, err);
	if (!r)
		return st;
	*ordinal = PQgetisnull(r, 0, 0) ? -1 : atoi(PQgetvalue(r, 0, 0));
	PQclear(r);
	return SY_STORE_OK;
}

sy_store_status sy_store_changelog_session(PGconn *c, sy_error *err)
{
	sy_store_status st;
	PGresult *r = sy_store_exec(
	        c, "SELECT pg_catalog.set_config('synchronous_commit', 'local', false)", 0, NULL,
	        PGRES_TUPLES_OK, "walsync session settings", NULL, &st, err);
	PQclear(r);
	return st;
}

sy_store_status sy_store_walsync_ready(PGconn *c, int *migration, sy_error *err)
{
	sy_store_status st;
	const char *p[] = {SY_STORE_PUBLICATION};
	PGresult *r = sy_store_exec(
	        c,
	        "SELECT (SELECT count(*) FROM pg_catalog.pg_publication WHERE pubname = $1),"
	        "       CASE WHEN pg_catalog.to_regclass('synchro.migrations') IS NULL THEN 0"
	        "            ELSE (SELECT coalesce(max(version), 0) FROM synchro.migrations) END",
	        1, p, PGRES_TUPLES_OK, "check the database", NULL, &st, err);
	if (!r)
		return st;
	long long pubs = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	long long version = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
	PQclear(r);
	*migration = (int)version;
	if (version < SY_STORE_WALSYNC_MIGRATION)
		return sy_store_fail(err, SY_STORE_INVALID,
		                     "the database is at migration %lld, walsync needs %d: run "
		                     "synchroctl migrate",
		                     version, SY_STORE_WALSYNC_MIGRATION);
	if (pubs != 1)
		return sy_store_fail(err, SY_STORE_INVALID,
		                     "publication %s is missing: run synchroctl migrate",
		                     SY_STORE_PUBLICATION);
	return SY_STORE_OK;
}

sy_store_status sy_store_slot_get(PGconn *c, const char *slot, sy_store_slot *out, sy_error *err)
{
	memset(out, 0, sizeof *out);
	sy_store_status st;
	const char *p[] = {slot};
	PGresult *r =
	        sy_store_exec(c,
	                      "SELECT slot_type = 'logical' AND plugin = 'pgoutput'"
	                      "         AND database = pg_catalog.current_database(),"
	                      "       active, coalesce(active_pid, 0), confirmed_flush_lsn"
	                      "  FROM pg_catalog.pg_replication_slots WHERE slot_name = $1",
	                      1, p, PGRES_TUPLES_OK, "read the replication slot", NULL, &st, err);
	if (!r)
		return st;
	if (PQntuples(r) == 1) {
		out->found = true;
		out->usable = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
		out->active = strcmp(PQgetvalue(r, 0, 1), "t") == 0;
		out->pid = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
		unsigned long long v = 0;
		if (!PQgetisnull(r, 0, 3) && sy_store_lsn_parse(PQgetvalue(r, 0, 3), &v))
			out->confirmed_flush = v;
	}
	PQclear(r);
	return SY_STORE_OK;
}

sy_store_status sy_store_slot_evict(PGconn *c, const char *slot, bool *evicted, sy_error *err)
{
	*evicted = false;
	sy_store_status st;
	const char *p[] = {slot};
	PGresult *r = sy_store_exec(c,
	                            "SELECT pg_catalog.pg_terminate_backend(active_pid)"
	                            "  FROM pg_catalog.pg_replication_slots"
	                            " WHERE slot_name = $1 AND active_pid IS NOT NULL",
	                            1, p, PGRES_TUPLES_OK, "stop the slot's previous reader", NULL,
	                            &st, err);
	if (!r)
		return st;
	*evicted = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	return SY_STORE_OK;
}

sy_store_status sy_store_walsync_positions_get(PGconn *c, const char *slot,
                                               sy_store_walsync_positions *out, sy_error *err)
{
	const char *p[] = {slot, SY_STORE_LEASE_ROLE};
	sy_store_status st;
	memset(out, 0, sizeof *out);
	PGresult *r = sy_store_exec(
	        c,
	        "SELECT pg_catalog.pg_current_wal_flush_lsn()::text,"
	        "       (SELECT s.confirmed_flush_lsn::text FROM pg_catalog.pg_replication_slots s"
	        "         WHERE s.slot_name = $1),"
	        "       (SELECT l.writer_epoch FROM synchro.writer_lease l WHERE l.role = $2)",
	        2, p, PGRES_TUPLES_OK, "read the WAL and slot positions", NULL, &st, err);
	if (!r)
		return st;
	unsigned long long v = 0;
	if (PQntuples(r) != 1 || !sy_store_lsn_parse(PQgetvalue(r, 0, 0), &v)) {
		PQclear(r);
		return sy_store_fail(err, SY_STORE_FAILED, "read the WAL position: no position");
	}
	out->flush_lsn = v;
	if (!PQgetisnull(r, 0, 1) && sy_store_lsn_parse(PQgetvalue(r, 0, 1), &v)) {
		out->slot_found = true;
		out->slot_confirmed = v;
	}
	if (!PQgetisnull(r, 0, 2)) {
		out->lease_found = true;
		out->lease_epoch = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
	}
	PQclear(r);
	return SY_STORE_OK;
}

sy_store_status sy_store_wal_behind(PGconn *c, uint64_t lsn, long long *bytes, sy_error *err)
{
	char text[SY_STORE_LSN_MAX + 1];
	sy_store_lsn_format(lsn, text);
	const char *p[] = {text};
	sy_store_status st;
	*bytes = -1;
	PGresult *r =
	        sy_store_exec(c,
	                      "SELECT pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_lsn(),"
	                      "                                  $1::pg_lsn)::bigint",
	                      1, p, PGRES_TUPLES_OK, "read the WAL position", NULL, &st, err);
	if (!r)
		return st;
	*bytes = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return SY_STORE_OK;
}
