/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * push_subxact.c: the internal subtransaction of a push unit, of an atomic group and of a
 * first execution. It runs as PL/pgSQL's exception block runs one (pl_exec.c,
 * exec_stmt_block).
 *
 * Layer: base of src/pg (doc/hacking.md).
 * Notes: After it ends, either way, the memory context and resource owner are the
 * caller's again. An error raised inside is copied and flushed. So it reaches the server
 * log only if the caller raises it again.
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "push_module.h"

ErrorData *sp_subtransaction(sp_subxact_fn fn, sp_push *x, void *arg)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		if (fn(x, arg))
			ReleaseCurrentSubTransaction();
		else
			RollbackAndReleaseCurrentSubTransaction();
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
		return ed;
	}
	PG_END_TRY();
	return NULL;
}
