/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libsynchro's allocator over PostgreSQL memory contexts. The core reports a failed
 * allocation by returning NULL and never ereports, so every allocation asks for
 * MCXT_ALLOC_NO_OOM: the module sees the NULL and fails the request itself, outside the
 * core's frames. A call's allocations live in that call's context (deleted with it);
 * manifests kept across calls are parsed while the cache context is current.
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "push_module.h"
#include "synchro/alloc.h"

static MemoryContext core_cxt;
static MemoryContext cache_cxt;

void sp_core_memory(MemoryContext cxt)
{
	core_cxt = cxt;
}

MemoryContext sp_core_context(void)
{
	return core_cxt != NULL ? core_cxt : CurrentMemoryContext;
}

MemoryContext sp_cache_context(void)
{
	if (cache_cxt == NULL)
		cache_cxt = AllocSetContextCreate(TopMemoryContext, "synchro cache",
		                                  ALLOCSET_DEFAULT_SIZES);
	return cache_cxt;
}

static void *core_malloc(size_t n)
{
	if (n > MaxAllocHugeSize)
		return NULL;
	return MemoryContextAllocExtended(sp_core_context(), n == 0 ? 1 : n,
	                                  MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
}

/* repalloc keeps the chunk in the context it came from, whatever is current now. */
static void *core_realloc(void *p, size_t n)
{
	if (p == NULL)
		return core_malloc(n);
	if (n > MaxAllocHugeSize)
		return NULL;
	return repalloc_extended(p, n == 0 ? 1 : n, MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
}

static void core_free(void *p)
{
	if (p != NULL)
		pfree(p);
}

void sp_memory_init(void)
{
	static const sy_allocator bridge = {core_malloc, core_realloc, core_free};
	sy_set_allocator(&bridge);
}
