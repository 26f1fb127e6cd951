/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rebuild.c: POST /v3/rebuild after the structural checks.
 *
 * Layer: middle of src/store (doc/hacking.md).
 * Rules: doc/contract.md#rebuild (the route), doc/contract.md#rebuild-invalidation (any push
 * accepted after the session began invalidates it).
 * Notes: It runs the per-table rebuild statements of the current manifest. pull_statements.c
 * builds them. A session of (user, client, rebuild_id) binds the client's
 * accepted_write_epoch and a stream position. Each page of rows is one REPEATABLE READ
 * transaction. Rows are ordered by table_id bytes, then by primary key. The last page
 * carries the cursor to pull from. The first page also says how many rows the whole rebuild
 * holds (rows_total).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store/lease.h"
#include "store/pull_internal.h"
#include "synchro/alloc.h"
#include "synchro/json.h"
#include "synchro/sqlstate.h"

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
static sy_store_status rebuild_rows(sy_store_read *x, const sy_store_rebuild_request *req, size_t k,
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
		if (pt->user_scope)
			pv[n++] = req->user;
		x->out->statements++;
		PGresult *r = sy_store_exec_stmt(x->c, after != NULL ? &pt->after : &pt->first, pv,
		                                 PGRES_TUPLES_OK, "rebuild", NULL, &st, x->err);
		if (r == NULL) {
			st = sy_store_read_fail(x, st);
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
			sy_store_item_status s = sy_store_read_add_item(x, pt, PQgetvalue(r, i, 0),
			                                                PQgetvalue(r, i, 1), mid,
			                                                true, false, r, i, 3, &why);
			if (s != SY_STORE_ITEM_OK) {
				PQclear(r);
				st = sy_store_read_item_failed(x, s, &why);
				goto done;
			}
			left--;
			sy_free(last_pk);
			last_pk = sy_strndup(PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0));
			last_tab = pt;
			if (last_pk == NULL) {
				PQclear(r);
				st = sy_store_read_nomem(x);
				goto done;
			}
		}
		PQclear(r);
	}
	if (*more && (last_tab == NULL ||
	              !sy_store_page_token_format(token, last_tab->t->table_id, last_pk)))
		st = sy_store_read_nomem(x);
done:
	sy_free(last_pk);
	return st;
}

/* The rows the whole rebuild delivers as this snapshot has them: the sum of every table's
 * count, in the first page's transaction. */
static sy_store_status rebuild_total(sy_store_read *x, const sy_store_rebuild_request *req,
                                     long long *total)
{
	sy_store_pull *p = x->p;
	sy_store_status st = SY_STORE_OK;
	*total = 0;
	for (size_t k = 0; k < p->m->table_count; k++) {
		sy_store_ptab *pt = &p->tabs[k];
		const char *pv[1] = {req->user};
		long long n;
		x->out->statements++;
		PGresult *r =
		        sy_store_exec_stmt(x->c, &pt->count, pt->user_scope ? pv : NULL,
		                           PGRES_TUPLES_OK, "rebuild count", NULL, &st, x->err);
		if (r == NULL)
			return sy_store_read_fail(x, st);
		bool ok = PQntuples(r) == 1 && sy_store_get_ll(r, 0, 0, &n);
		PQclear(r);
		if (!ok)
			return sy_store_read_bad_result(x, "rebuild count");
		*total += n;
	}
	return SY_STORE_OK;
}

/* The first table (in page order) at or after the token's, and the key to start after. */
static sy_store_status token_start(sy_store_read *x, const sy_store_rebuild_request *req, size_t *k,
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
			return sy_store_read_nomem(x);
		if (ws != SY_WIRE_OK) {
			*valid = false;
			return SY_STORE_OK;
		}
		*after = req->token_pk;
	}
	return SY_STORE_OK;
}

/* The session of this page: created by the first page, else found and still valid. */
static sy_store_status rebuild_session(sy_store_read *x, const sy_store_rebuild_request *req,
                                       const sy_store_gates *g, const PGresult *r,
                                       sy_store_position *pos, bool *ok, char sqlstate[6])
{
	*ok = false;
	bool exists = !PQgetisnull(r, 0, SY_STORE_GATE_NCOLS);
	if (!exists && req->token_table != NULL) {
		sy_store_read_error(
		        x, SY_ERR_REBUILD_INVALIDATED,
		        "no rebuild session of this client has this rebuild_id; start again "
		        "with page_token null");
		return SY_STORE_OK;
	}
	if (exists) {
		long long epoch;
		if (!sy_store_get_ll(r, 0, SY_STORE_GATE_NCOLS, &epoch) ||
		    !sy_store_get_pos(r, 0, SY_STORE_GATE_NCOLS + 1, pos))
			return sy_store_read_bad_result(x, "rebuild");
		if (epoch != g->accepted) {
			sy_store_read_error(
			        x, SY_ERR_REBUILD_INVALIDATED,
			        "a push was accepted for this client after the rebuild began; "
			        "start a"
			        " new rebuild");
			return SY_STORE_OK;
		}
		*ok = true;
		return SY_STORE_OK;
	}
	/* doc/contract.md#rebuild: the session binds the accepted epoch observed now, and the
	 * stream position of this snapshot, which is no later than the rows the pages read: the
	 * last entry whose source is visible in it (the pages read in this snapshot too), or the
	 * horizon. */
	sy_store_status st;
	x->out->statements++;
	PGresult *vt = sy_store_exec_stmt(x->c, &visible_tail_stmt, NULL, PGRES_TUPLES_OK,
	                                  "rebuild position", sqlstate, &st, x->err);
	if (vt == NULL)
		return st;
	pos->lsn = 0;
	pos->ordinal = 0;
	bool ok_pos = PQntuples(vt) == 0 || sy_store_get_pos(vt, 0, 0, pos);
	PQclear(vt);
	if (!ok_pos)
		return sy_store_read_bad_result(x, "rebuild position");
	if (sy_store_position_cmp(pos, &g->horizon) < 0)
		*pos = g->horizon;
	char epoch[24], lsn[SY_STORE_LSN_MAX + 1], ord[16];
	snprintf(epoch, sizeof epoch, "%lld", g->accepted);
	sy_store_lsn_format(pos->lsn, lsn);
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

/* The settings of a page's row statements (rebuild_page says why). */
#define ROW_PLANS                                                                                  \
	" SET LOCAL plan_cache_mode = force_generic_plan;"                                         \
	" SET LOCAL max_parallel_workers_per_gather = 0"

/* Statements without rows sent as one simple query, one round trip (a BEGIN and the settings
 * of its transaction); the last one's result, or the first failure, as sy_store_command(). */
static sy_store_status commands(PGconn *c, const char *sql, const char *what, sy_error *err)
{
	sy_store_status st;
	PGresult *r = PQexec(c, sql);
	if (r != NULL && PQresultStatus(r) == PGRES_COMMAND_OK) {
		PQclear(r);
		return SY_STORE_OK;
	}
	(void)sy_store_result_failure(c, r, what, NULL, &st, err);
	return st;
}

static bool retry_state(const char *sqlstate)
{
	/* A racing first page of the same session (unique_violation), or a serialization
	 * failure or deadlock. */
	return strcmp(sqlstate, "23505") == 0 || sy_sqlstate_retryable(sqlstate);
}

/* One attempt at a page in its own REPEATABLE READ transaction; *again: retry. */
static sy_store_status rebuild_page(sy_store_read *x, const sy_store_rebuild_request *req,
                                    bool *again)
{
	sy_store_pull *p = x->p;
	PGresult *r = NULL;
	sy_store_status st;
	char sqlstate[6] = "";
	*again = false;
	/* Every page's row statements take their generic plan (an ordered scan of the key that
	 * stops after LIMIT rows, each row's fence looked up by its key) from their first run: a
	 * custom plan for the caller's owner value and the page's LIMIT joins and sorts the whole
	 * table (over 300 ms a page at 100,000 rows, against 6 ms; without table statistics, on
	 * the first page too), and PostgreSQL makes five of them on each connection before it
	 * tries the generic one. The first page's count keeps its custom plan (a hash join of
	 * every row). A generic plan takes LIMIT $n for a third of the table and starts parallel
	 * workers for each page (6 ms before its first row on a quiet machine, over 30 ms on a
	 * busy one, for at most 1,000 rows): the row statements run without them. The settings
	 * travel with BEGIN, one round trip (after the count on the first page). */
	x->out->statements++;
	st = commands(x->c,
	              req->token_table == NULL ? "BEGIN ISOLATION LEVEL REPEATABLE READ"
	                                       : "BEGIN ISOLATION LEVEL REPEATABLE READ;" ROW_PLANS,
	              "rebuild", x->err);
	if (st != SY_STORE_OK)
		return sy_store_read_fail(x, st);
	const char *pv[] = {req->client_id, req->user, req->rebuild_id};
	x->out->statements++;
	r = sy_store_exec_stmt(x->c, &sy_store_gates_stmt, pv, PGRES_TUPLES_OK, "rebuild", sqlstate,
	                       &st, x->err);
	if (r == NULL)
		goto failed;
	sy_store_gates g;
	if (PQntuples(r) != 1 || !sy_store_gates_read(r, &g)) {
		PQclear(r);
		return sy_store_read_bad_result(x, "rebuild");
	}
	bool pass, reload;
	sy_store_gates_decide(x, &g, req->client_generation, &req->schema, &pass, &reload);
	if (!pass) {
		PQclear(r);
		sy_store_rollback(x->c);
		if (reload) {
			x->out->statements++;
			if ((st = sy_store_pull_cache_load(p, x->c, x->err)) != SY_STORE_OK)
				return sy_store_read_fail(x, st);
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
	if (!sy_store_read_body_start(x))
		return sy_store_read_nomem(x);
	size_t k;
	const char *after;
	bool valid;
	if ((st = token_start(x, req, &k, &after, &valid)) != SY_STORE_OK)
		return st;
	if (!valid) {
		sy_store_rollback(x->c);
		return sy_store_read_error(
		        x, SY_ERR_INVALID_REQUEST,
		        "page_token: the key is not a value of its table's key type");
	}
	long long total = -1;
	if (req->token_table == NULL) {
		if ((st = rebuild_total(x, req, &total)) != SY_STORE_OK)
			return st;
		x->out->statements++;
		if ((st = commands(x->c, ROW_PLANS, "rebuild", x->err)) != SY_STORE_OK)
			return sy_store_read_fail(x, st);
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
		return sy_store_read_fail(x, st);
	}
	x->out->more = more;
	sy_json_doc *doc = x->doc;
	sy_json *root = sy_json_new_object(doc);
	bool built = root != NULL && sy_json_object_put(doc, root, "rows", x->items) &&
	             sy_json_object_put(doc, root, "server_time", sy_json_new_cstring(doc, g.now));
	if (built && total >= 0)
		built = sy_json_object_put(doc, root, "rows_total", sy_json_new_int(doc, total));
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
		return sy_store_read_nomem(x);
	return sy_store_read_body_finish(x, root);
failed:
	if (st == SY_STORE_FAILED && retry_state(sqlstate)) {
		sy_store_rollback(x->c);
		*again = true;
		return SY_STORE_OK;
	}
	return sy_store_read_fail(x, st);
}

sy_store_status sy_store_rebuild_handle(sy_store_pull *p, PGconn *c,
                                        const sy_store_rebuild_request *req,
                                        sy_store_read_answer *out, sy_error *err)
{
	sy_store_read x = {.p = p, .c = c, .out = out, .err = err};
	sy_store_status st = SY_STORE_OK;
	out->error = SY_ERR_NONE;
	out->message[0] = '\0';
	out->items = out->scanned = 0;
	out->more = false;
	out->waited_ms = out->statements = 0;
	if (p->version == 0) {
		out->statements++;
		st = sy_store_pull_cache_load(p, c, err);
		if (st == SY_STORE_NOT_FOUND)
			return sy_store_read_error(&x, SY_ERR_TEMPORARY_UNAVAILABLE,
			                           "no schema is published yet; retry later");
		if (st != SY_STORE_OK)
			return sy_store_read_fail(&x, st);
	}
	for (int attempt = 0; attempt < SY_STORE_READ_ATTEMPTS; attempt++) {
		bool again;
		sy_json_doc_free(x.doc);
		x.doc = NULL;
		out->items = 0;
		st = rebuild_page(&x, req, &again);
		if (st != SY_STORE_OK || !again)
			goto done;
	}
	sy_store_fail(err, SY_STORE_FAILED, "rebuild: the session or schema kept changing");
	st = sy_store_read_fail(&x, SY_STORE_FAILED);
done:
	sy_json_doc_free(x.doc);
	return st;
}
