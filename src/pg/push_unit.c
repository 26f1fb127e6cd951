/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Push units of a non-atomic request (ADR "Push unit constraint checks"): each mutation
 * that writes is its own internal subtransaction, which starts with every deferrable
 * constraint DEFERRED and ends with every one IMMEDIATE after its write. A data exception
 * or integrity violation at its write or end rolls the unit back and gives the mutation
 * its outcome (sp_refused); any other error is an operational failure of the request and
 * propagates. The accepted outcome is the row read again after the unit's end. A mutation
 * that does not write (a conflict, a terminal rule) needs no subtransaction: its locks
 * belong to the request's transaction. No unit's statements are ever run twice.
 *
 * The error handling is PL/pgSQL's exception block (pl_exec.c exec_stmt_block): the
 * memory context and resource owner are restored after the subtransaction ends either way,
 * and a caught error is copied and flushed, so it never reaches the server log.
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "push_module.h"

static void unit(sp_push *x, size_t k)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	sp_row row;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		sp_constraints(true);
		sp_name_mutation(x, k);
		sp_write(x, k);
		/* The unit end: deferred checks (and deferred triggers, whose fence writes the
		 * same mutation owns) run here, not at commit. */
		sp_constraints(false);
		sp_read(x, k, &row);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		ErrorData *ed = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		if (!sp_unit_error(ed->sqlerrcode))
			ReThrowError(ed);
		sp_refused(x, k, ed->sqlerrcode);
		FreeErrorData(ed);
		return;
	}
	PG_END_TRY();
	sp_applied(x, k, &row);
}

void sp_run_units(sp_push *x)
{
	for (size_t k = 0; k < x->req->mutation_count; k++) {
		if (x->res[k].stored != NULL)
			continue;
		if (!sp_needs_row(x, k)) {
			sp_settle_without_row(x, k);
			continue;
		}
		if (sp_lock_and_classify(x, k))
			unit(x, k);
	}
}
