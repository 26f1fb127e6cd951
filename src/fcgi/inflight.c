/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * inflight.c: the gauge of pushes in flight on this host (inflight.h).
 *
 * Layer: base of src/fcgi (doc/hacking.md).
 * Notes: Each responder has one shared flag, on a cache line of its own. It is only a gauge
 * for /metrics. Admission belongs to synchro_push (src/pg).
 */
#include "config.h"

#include <stdatomic.h>
#include <stddef.h>
#include <sys/mman.h>

#include "fcgi/inflight.h"

typedef struct {
	_Alignas(64) atomic_uint busy; /* one cache line per slot: responders write their own */
} slot;

struct sy_inflight {
	int nslots;
	size_t size;
	slot slots[];
};

sy_inflight *sy_inflight_create(int slots)
{
	if (slots < 1)
		return NULL;
	size_t size = sizeof(sy_inflight) + (size_t)slots * sizeof(slot);
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* Anonymous mappings are zero-filled: every slot starts idle. */
	sy_inflight *f = p;
	f->nslots = slots;
	f->size = size;
	return f;
}

void sy_inflight_destroy(sy_inflight *f)
{
	if (f != NULL)
		munmap(f, f->size);
}

static void set(sy_inflight *f, int slot_no, unsigned v)
{
	if (f != NULL && slot_no >= 0 && slot_no < f->nslots)
		atomic_store(&f->slots[slot_no].busy, v);
}

void sy_inflight_enter(sy_inflight *f, int slot_no)
{
	set(f, slot_no, 1u);
}

void sy_inflight_leave(sy_inflight *f, int slot_no)
{
	set(f, slot_no, 0u);
}

int sy_inflight_count(sy_inflight *f)
{
	if (f == NULL)
		return 0;
	int n = 0;
	for (int i = 0; i < f->nslots; i++)
		n += atomic_load(&f->slots[i].busy) != 0;
	return n;
}
