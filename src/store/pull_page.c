/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pull_page.c: POST /v3/pull after the structural checks.
 *
 * Layer: middle of src/store (doc/hacking.md).
 * Rules: doc/contract.md#pull-request (the request), doc/contract.md#read-your-writes (the
 * wait).
 * Notes: It runs the page statement of the current manifest. pull_statements.c builds it.
 * One statement and one snapshot read the changelog window of the caller's read scope, the
 * latest entry per row, the current source rows, the gates and the horizon. Then come the
 * cursor gates (rebuild_required, cursor_expired) and the read-your-writes wait. Last comes
 * the page's 200 body.
 */
#include "config.h"

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "store/lease.h"
#include "store/pull_broken.h"
#include "store/pull_internal.h"
#include "synchro/alloc.h"
#include "synchro/json.h"
#include "synchro/sqlstate.h"

/* The read-your-writes wait polls with sleeps growing to this. */
#define WAIT_STEP_MAX_MS 10

/* Columns of the page statement (pull_statements.c) after the gate columns. */
enum {
	PC_COUNT = SY_STORE_GATE_NCOLS, /* relevant entries in the window (at most limit + 1) */
	PC_LAST_LSN,                    /* the limit-th of them */
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
	PC_FENCE,    /* the row's current fence version */
	PC_HAS_ROW,  /* the source row exists now */
	PC_IN_SCOPE, /* a members table's change is in the caller's scope (else NULL) */
	PC_VALUES    /* the fields of the row, padded to maxf */
};

static sy_store_stmt epoch_stmt =
        SY_STORE_STMT("sy_pull_epoch",
                      "SELECT COALESCE(p.materialized_write_epoch, 1) FROM synchro.clients c"
                      " LEFT JOIN synchro.client_progress p ON p.client_id = c.client_id"
                      " WHERE c.client_id = $1::uuid",
                      1);

/*
 * doc/contract.md#read-your-writes: pull waits until every push the client had accepted is
 * materialized: polls until materialized_write_epoch reaches target, or sets *timed_out after
 * wait_ms.
 */
static sy_store_status wait_materialized(sy_store_read *x, const char *client_id, long long target,
                                         int wait_ms, bool *timed_out)
{
	double start = (double)sy_clock_ms();
	int step = 1, slept = 0;
	*timed_out = false;
	for (;;) {
		double elapsed = (double)sy_clock_ms() - start;
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
			return sy_store_read_fail(x, st);
		long long m = 0;
		bool ok = PQntuples(r) == 1 && sy_store_get_ll(r, 0, 0, &m);
		PQclear(r);
		if (!ok)
			return sy_store_read_bad_result(x, "read-your-writes wait");
		if (m >= target)
			break;
	}
	double took = (double)sy_clock_ms() - start;
	x->out->waited_ms = took > slept ? (unsigned)took : (unsigned)slept;
	return SY_STORE_OK;
}

/* Builds the 200 body of a pull page from the page statement's result. */
static sy_store_status pull_body(sy_store_read *x, const sy_store_pull_request *req,
                                 const sy_store_gates *g, const PGresult *r)
{
	sy_store_pull *p = x->p;
	long long n;
	if (!sy_store_get_ll(r, 0, PC_COUNT, &n))
		return sy_store_read_bad_result(x, "pull");
	bool more = n > (long long)req->limit;
	sy_store_position next = req->cursor;
	if (more) {
		if (!sy_store_get_pos(r, 0, PC_LAST_LSN, &next))
			return sy_store_read_bad_result(x, "pull");
	} else if (strcmp(PQgetvalue(r, 0, PC_CUT), "t") == 0 && n == 0 &&
	           !PQgetisnull(r, 0, PC_CUT_TABLE)) {
		/* The next change is of a table whose mapping is broken: this client's own error,
		 * until a publish or the table is mended; never a cursor past the change. */
		char msg[SY_ERROR_MESSAGE_MAX];
		snprintf(msg, sizeof msg,
		         "table %s cannot be read now: its relation no longer matches the schema;"
		         " retry later",
		         PQgetvalue(r, 0, PC_CUT_TABLE));
		return sy_store_read_error(x, SY_ERR_TEMPORARY_UNAVAILABLE, msg);
	} else if (strcmp(PQgetvalue(r, 0, PC_CUT), "t") == 0) {
		/* A source commit is an instant from visible: stop before it, come back at once.
		 * (Or the next change is of a broken table: deliver up to it.) */
		if (n > 0 && !sy_store_get_pos(r, 0, PC_WIN_LSN, &next))
			return sy_store_read_bad_result(x, "pull");
		more = true;
	} else if (!PQgetisnull(r, 0, PC_BUDGET_LSN)) {
		/* The scan budget ran out first: continue after what was read. */
		if (!sy_store_get_pos(r, 0, PC_BUDGET_LSN, &next))
			return sy_store_read_bad_result(x, "pull");
		more = true;
	} else if (sy_store_position_cmp(&g->tail, &next) > 0) {
		/* Nothing more in scope up to the end: skip the entries of others for good. */
		next = g->tail;
	}
	x->out->scanned = (size_t)n;
	x->out->more = more;
	if (!sy_store_read_body_start(x))
		return sy_store_read_nomem(x);
	for (int i = 0; i < PQntuples(r); i++) {
		if (PQgetisnull(r, i, PC_TABLE))
			continue;
		long long ti;
		if (!sy_store_get_ll(r, i, PC_TABLE, &ti) || ti < 0 ||
		    (size_t)ti >= p->m->table_count)
			return sy_store_read_bad_result(x, "pull");
		const sy_store_ptab *pt = &p->tabs[ti];
		const char *version = PQgetvalue(r, i, PC_VERSION);
		const char *mid =
		        PQgetisnull(r, i, PC_MUTATION) ? NULL : PQgetvalue(r, i, PC_MUTATION);
		bool upsert, left = false;
		if (pt->members_scope && strcmp(PQgetvalue(r, i, PC_IN_SCOPE), "t") != 0) {
			/* The row left the caller's scope here, or the caller no longer reads it
			 * (a later entry brings it back if the caller reads it again). A row that
			 * still exists left the caller's scope: the delete says so. */
			upsert = false;
			left = strcmp(PQgetvalue(r, i, PC_HAS_ROW), "t") == 0;
		} else if (pt->owner_scope &&
		           (PQgetisnull(r, i, PC_OWNER_AFTER) ||
		            strcmp(PQgetvalue(r, i, PC_OWNER_AFTER), req->user) != 0)) {
			/* The row left the caller's scope here (or was deleted): its version then.
			 * A row that still exists went to another owner: a scope exit. */
			upsert = false;
			left = !PQgetisnull(r, i, PC_OWNER_AFTER) &&
			       strcmp(PQgetvalue(r, i, PC_HAS_ROW), "t") == 0;
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
		sy_store_item_status s =
		        sy_store_read_add_item(x, pt, PQgetvalue(r, i, PC_PK), version, mid, upsert,
		                               left, r, i, PC_VALUES, &why);
		if (s == SY_STORE_ITEM_BAD_KEY) {
			/* No client can hold such a row: skip it, and the caller logs it. */
			if (x->out->skipped++ == 0)
				snprintf(x->out->skipped_table, sizeof x->out->skipped_table, "%s",
				         pt->t->table_id);
			continue;
		}
		if (s != SY_STORE_ITEM_OK)
			return sy_store_read_item_failed(x, s, &why);
	}
	char cursor[SY_STORE_CURSOR_LEN + 1];
	sy_store_cursor_format(&next, cursor);
	sy_json_doc *doc = x->doc;
	sy_json *root = sy_json_new_object(doc);
	if (root == NULL || !sy_json_object_put(doc, root, "changes", x->items) ||
	    !sy_json_object_put(doc, root, "cursor", sy_json_new_cstring(doc, cursor)) ||
	    !sy_json_object_put(doc, root, "has_more", sy_json_new_bool(doc, more)) ||
	    !sy_json_object_put(doc, root, "server_time", sy_json_new_cstring(doc, g->now)))
		return sy_store_read_nomem(x);
	return sy_store_read_body_finish(x, root);
}

/* The gate statement alone (pull with a null cursor): gates, then rebuild_required. */
static sy_store_status pull_without_cursor(sy_store_read *x, const sy_store_pull_request *req)
{
	for (int attempt = 0; attempt < SY_STORE_READ_ATTEMPTS; attempt++) {
		const char *pv[] = {req->client_id, req->user, NULL};
		sy_store_status st;
		x->out->statements++;
		PGresult *r = sy_store_exec_stmt(x->c, &sy_store_gates_stmt, pv, PGRES_TUPLES_OK,
		                                 "pull", NULL, &st, x->err);
		if (r == NULL)
			return sy_store_read_fail(x, st);
		sy_store_gates g;
		bool ok = PQntuples(r) == 1 && sy_store_gates_read(r, &g);
		PQclear(r);
		if (!ok)
			return sy_store_read_bad_result(x, "pull");
		bool pass, reload;
		sy_store_gates_decide(x, &g, req->client_generation, &req->schema, &pass, &reload);
		if (pass)
			return sy_store_read_error(x, SY_ERR_REBUILD_REQUIRED,
			                           "no cursor: rebuild, then pull from its cursor");
		if (!reload)
			return SY_STORE_OK;
		if ((st = sy_store_pull_cache_load(x->p, x->c, x->err)) != SY_STORE_OK)
			return sy_store_read_fail(x, st);
	}
	sy_store_fail(x->err, SY_STORE_FAILED, "pull: the current schema kept changing");
	return sy_store_read_fail(x, SY_STORE_FAILED);
}

sy_store_status sy_store_pull_handle(sy_store_pull *p, PGconn *c, const sy_store_pull_request *req,
                                     sy_store_read_answer *out, sy_error *err)
{
	sy_store_read x = {.p = p, .c = c, .out = out, .err = err};
	sy_store_status st = SY_STORE_OK;
	out->error = SY_ERR_NONE;
	out->message[0] = '\0';
	out->items = out->scanned = 0;
	out->more = false;
	out->waited_ms = out->statements = 0;
	out->skipped = 0;
	if (p->version == 0) {
		out->statements++;
		st = sy_store_pull_cache_load(p, c, err);
		if (st == SY_STORE_NOT_FOUND) {
			/* Nothing is published, so no client can hold a current schema. */
			st = sy_store_read_error(&x, SY_ERR_TEMPORARY_UNAVAILABLE,
			                         "no schema is published yet; retry later");
			goto done;
		}
		if (st != SY_STORE_OK) {
			st = sy_store_read_fail(&x, st);
			goto done;
		}
	}
	if (!req->has_cursor) {
		st = pull_without_cursor(&x, req);
		goto done;
	}
	char lsn[SY_STORE_LSN_MAX + 1], ord[16], limit[16];
	sy_store_lsn_format(req->cursor.lsn, lsn);
	snprintf(ord, sizeof ord, "%" PRIu32, req->cursor.ordinal);
	snprintf(limit, sizeof limit, "%u", req->limit);
	long long target = -1; /* the accepted epoch to wait for, once seen */
	if (p->nbroken > 0 && sy_clock_ms() >= p->probe_at_ms) {
		bool changed;
		if ((st = sy_store_pull_probe_tables(p, c, true, &changed, err)) != SY_STORE_OK) {
			st = sy_store_read_fail(&x, st);
			goto done;
		}
	}
	bool probed = false;
	for (int attempt = 0; attempt < SY_STORE_READ_ATTEMPTS + 2; attempt++) {
		const char *pv[] = {req->client_id,
		                    req->user,
		                    lsn,
		                    ord,
		                    limit,
		                    p->all_tables,
		                    p->owner_tables,
		                    p->broken_tables ? p->broken_tables : "{}",
		                    p->members_tables};
		char sqlstate[6] = "";
		x.out->statements++;
		PGresult *r = sy_store_exec_stmt(c, &p->page, pv, PGRES_TUPLES_OK, "pull", sqlstate,
		                                 &st, err);
		if (r == NULL && st == SY_STORE_FAILED && sy_sqlstate_is_mapping(sqlstate) &&
		    !probed) {
			/* A table no longer matches its mapping: a publish may have mended it (the
			 * responder reads the current manifest again), else the tables that fail
			 * their probe leave the statement and every other table keeps serving. */
			probed = true;
			long long was = p->version;
			x.out->statements++;
			if ((st = sy_store_pull_cache_load(p, c, err)) == SY_STORE_OK &&
			    p->version == was) {
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
			st = sy_store_read_fail(&x, st);
			goto done;
		}
		sy_store_gates g;
		if (PQntuples(r) < 1 || !sy_store_gates_read(r, &g)) {
			PQclear(r);
			st = sy_store_read_bad_result(&x, "pull");
			goto done;
		}
		bool pass, reload;
		sy_store_gates_decide(&x, &g, req->client_generation, &req->schema, &pass, &reload);
		if (reload) {
			PQclear(r);
			x.out->statements++;
			if ((st = sy_store_pull_cache_load(p, c, err)) != SY_STORE_OK) {
				st = sy_store_read_fail(&x, st);
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
			st = sy_store_read_error(
			        &x, SY_ERR_CURSOR_EXPIRED,
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
				st = sy_store_read_error(
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
	st = sy_store_read_fail(&x, SY_STORE_FAILED);
done:
	sy_json_doc_free(x.doc);
	return st;
}
