/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * push_unit.c: the push units of a non-atomic request. Each mutation that writes is its own
 * internal subtransaction.
 *
 * Layer: middle of src/pg (doc/hacking.md).
 * Rules: doc/contract.md#push-units (one unit per mutation).
 * Notes: A unit starts with every deferrable constraint DEFERRED. After its write, it sets
 * every one IMMEDIATE. A data exception or integrity violation at its write or end rolls
 * the unit back. It gives the mutation its outcome (sp_refused). Any other error is an
 * operational failure of the request, and propagates. The accepted outcome is the row read
 * again after the unit's end. A mutation that does not write needs no subtransaction: a
 * conflict, or a terminal rule. Its locks belong to the request's transaction. No unit's
 * statements ever run twice.
 *
 * The subtransaction is PL/pgSQL's exception block (push_subxact.c). A caught error is
 * copied and flushed, so it never reaches the server log.
 *
 * Each mutation's scratch lives in a context reset after it: its statements' datums and
 * the rows it read. What an outcome keeps is copied into the outcome document (sp_fill_row,
 * sp_arena_dup). So a push's memory does not grow with its mutations.
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "push_module.h"

typedef struct {
	size_t k;
	sp_row row;
} unit_arg;

static bool unit_body(sp_push *x, void *arg)
{
	unit_arg *u = arg;
	sp_constraints(true);
	sp_name_mutation(x, u->k);
	sp_write(x, u->k);
	/* The unit end: deferred checks (and deferred triggers, whose fence writes the same
	 * mutation owns) run here, not at commit. */
	sp_constraints(false);
	sp_read(x, u->k, &u->row);
	return true;
}

static void unit(sp_push *x, size_t k)
{
	unit_arg u = {.k = k};
	ErrorData *ed = sp_subtransaction(unit_body, x, &u);
	if (ed == NULL) {
		sp_applied(x, k, &u.row);
		return;
	}
	if (!sp_unit_error(ed->sqlerrcode))
		ReThrowError(ed);
	sp_refused(x, k, ed->sqlerrcode);
	FreeErrorData(ed);
}

void sp_run_units(sp_push *x)
{
	MemoryContext cxt = CurrentMemoryContext;
	MemoryContext scratch =
	        AllocSetContextCreate(cxt, "synchro_push unit", ALLOCSET_DEFAULT_SIZES);
	for (size_t k = 0; k < x->req->mutation_count; k++) {
		if (x->res[k].stored != NULL)
			continue;
		if (!sp_needs_row(x, k)) {
			sp_settle_without_row(x, k);
			continue;
		}
		MemoryContextSwitchTo(scratch);
		if (sp_lock_and_classify(x, k))
			unit(x, k);
		MemoryContextSwitchTo(cxt);
		MemoryContextReset(scratch);
	}
	MemoryContextDelete(scratch);
}
