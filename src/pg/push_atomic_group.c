/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * push_atomic_group.c: an atomic request. Its push unit is the whole group.
 *
 * Layer: middle of src/pg (doc/hacking.md).
 * Rules: doc/contract.md#atomic-batches (all apply, or none).
 * Notes: The group is one internal subtransaction, opened after the ledger lookup, with
 * every deferrable constraint deferred. The mutations run in request order, with the
 * ordinary evaluation. They stop at the first one that does not apply. If all applied,
 * every deferrable constraint is checked at the group's end. Then each accepted row is read
 * again. Otherwise the group is rolled back and the failed-group response is built
 * (sy_outcome_atomic_failed_group). A conflict is rebuilt from the row read after the
 * rollback. A failed end check is validation_failed of the last mutation. The
 * subtransaction is push_subxact.c's.
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/memutils.h"
#include "utils/errcodes.h"
#include "utils/resowner.h"

#include "push_module.h"
#include "synchro/alloc.h"

typedef struct {
	size_t at;      /* the mutation being written; n: the group's end */
	size_t failing; /* the mutation that did not apply; n: none */
	sp_row *rows;   /* each row read again after the group's end */
} group_arg;

/* The group in its subtransaction; released only when every mutation applied. */
static bool group_body(sp_push *x, void *arg)
{
	group_arg *g = arg;
	size_t n = x->req->mutation_count;
	sp_constraints(true);
	for (size_t k = 0; k < n && g->failing == n; k++) {
		g->at = k;
		if (!sp_needs_row(x, k)) {
			sp_settle_without_row(x, k);
			g->failing = k;
		} else if (!sp_lock_and_classify(x, k)) {
			g->failing = k;
		} else {
			sp_name_mutation(x, k);
			sp_write(x, k);
		}
	}
	if (g->failing < n)
		return false;
	/* The group's end belongs to its last mutation (its fence writes too). */
	g->at = n;
	sp_name_mutation(x, n - 1);
	sp_constraints(false);
	for (size_t k = 0; k < n; k++)
		sp_read(x, k, &g->rows[k]);
	return true;
}

/* Runs the group; returns the index of the mutation that did not apply, or n. Sets
 * *sqlerrcode when the database refused it (0 otherwise). */
static size_t group(sp_push *x, int *sqlerrcode)
{
	size_t n = x->req->mutation_count;
	group_arg g = {.at = 0, .failing = n, .rows = palloc0(sizeof(sp_row) * n)};
	*sqlerrcode = 0;
	ErrorData *ed = sp_subtransaction(group_body, x, &g);
	if (ed != NULL) {
		if (!sp_unit_error(ed->sqlerrcode))
			ReThrowError(ed);
		*sqlerrcode = ed->sqlerrcode;
		FreeErrorData(ed);
		return g.at;
	}
	if (g.failing == n)
		for (size_t k = 0; k < n; k++)
			sp_applied(x, k, &g.rows[k]);
	return g.failing;
}

void sp_run_group(sp_push *x)
{
	size_t n = x->req->mutation_count;
	int sqlerrcode;
	size_t failing = group(x, &sqlerrcode);
	if (failing == n && sqlerrcode == 0)
		return;
	if (failing == n) {
		/*
		 * doc/contract.md#failed-atomic-group: a failed check at the group end gives
		 * validation_failed to the last. But an insert over a live or deleted row is a
		 * conflict whatever the pk's deferrability (doc/protocol.md): a unique violation or
		 * SY006 at the end is first matched against the inserts' identities as committed
		 * now (a concurrent insert took one after the group read it absent).
		 */
		bool conflict = false;
		if (sqlerrcode == ERRCODE_UNIQUE_VIOLATION ||
		    sqlerrcode == MAKE_SQLSTATE('S', 'Y', '0', '0', '6')) {
			for (size_t k = 0; k < n && !conflict; k++) {
				sp_row row;
				if (x->req->mutations[k].op != SY_OP_INSERT)
					continue;
				sp_read(x, k, &row);
				if (row.state == SY_ROW_ABSENT)
					continue;
				(void)sp_classify(x, k, &row); /* never applied over an identity */
				failing = k;
				conflict = true;
			}
		}
		if (!conflict) {
			failing = n - 1;
			sp_set_terminal(x, failing, SY_CODE_VALIDATION_FAILED, sp_msg_constraint);
		}
	} else if (sqlerrcode != 0) {
		sp_refused(x, failing, sqlerrcode);
	} else if (x->res[failing].o.status == SY_STATUS_CONFLICT &&
	           x->res[failing].o.code != SY_CODE_ROW_NOT_FOUND) {
		/* doc/contract.md#failed-atomic-group: rebuilt from the committed state, so an
		 * earlier group write (a cascaded delete) never appears in the outcome. A row not
		 * found shows no row, whatever the read finds now (one outside the caller's scope
		 * answers so: push_scope.c). */
		sp_row row;
		sp_read(x, failing, &row);
		sp_fill_row(x, failing, &row);
	}
	sy_outcome *out = sy_calloc(n, sizeof *out);
	sy_error e = {0};
	if (out == NULL)
		sp_nomem("atomic failed group");
	if (!sy_outcome_atomic_failed_group(x->req, failing, &x->res[failing].o, out, &e)) {
		if (e.code == SY_ERR_NOMEM)
			sp_nomem("atomic failed group");
		sp_fail("the atomic failed group breaks the contract");
	}
	for (size_t k = 0; k < n; k++) {
		x->res[k].o = out[k];
		x->res[k].decided = true;
	}
	sy_free(out);
	x->applied = 0;
}
