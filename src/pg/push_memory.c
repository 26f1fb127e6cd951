/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * push_memory.c: libsynchro's allocator over PostgreSQL memory contexts.
 *
 * Layer: base of src/pg (doc/hacking.md).
 * Notes: The core reports a failed allocation by returning NULL. It never ereports. So
 * every allocation asks for MCXT_ALLOC_NO_OOM. The module sees the NULL and fails the
 * request itself, outside the core's frames. A call's allocations live in that call's
 * context, and are deleted with it. Manifests kept across calls are parsed while the cache
 * context is current. The backend's malloc keeps what a push freed (sp_memory_init); see
 * backend_malloc().
 */
#include "postgres.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

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

/*
 * A push moves large values through memory several times (a 100-mutation exact replay: a
 * 31 KB body and a 66 KB response, each copied by the protocol, the executor and the
 * function), and each chunk over a memory context's chunk limit is a malloc and a free of
 * its own. With glibc's defaults a backend returns the freed top of its heap to the kernel
 * (past 128 KB free) and maps fresh pages again at the next request: page faults and the
 * kernel's zeroing of every page, each request. Measured (contrib/bench/push, 100-mutation
 * replays, backend CPU per request): 1,100-2,000 us in a backend that had only replayed,
 * 270-510 us in one whose heap an earlier first execution had left grown. A first execution
 * of 1000 mutations needs about 10 MB (its parse, outcome document, response and ledger
 * values): with 4 MB kept, every such push faulted its pages in again (2.3-3.5 minor faults
 * per mutation; backend CPU 172-222 us per mutation against 118-130 us with 32 MB, 0.3-0.6
 * faults). So the heap keeps up to 32 MB free (M_TRIM_THRESHOLD), and chunks up to 32 MB
 * come from it rather than from a mapping of their own (M_MMAP_THRESHOLD, glibc's largest):
 * a backend holds on to at most 32 MB it freed, and never more than its largest push used.
 * Only the backends that load this module: the responders' sessions.
 */
static void backend_malloc(void)
{
#if defined(__GLIBC__)
	(void)mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
	(void)mallopt(M_TRIM_THRESHOLD, 32 * 1024 * 1024);
#endif
}

void sp_memory_init(void)
{
	static const sy_allocator bridge = {core_malloc, core_realloc, core_free};
	sy_set_allocator(&bridge);
	backend_malloc();
}
