/* SPDX-License-Identifier: BSD-2-Clause */
/* Admission control: one shared slot per responder announcing its first execution in flight. */
#include "config.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "fcgi/admission.h"
#include "synchro/octets.h"
#include "synchro/scalar.h"

/*
 * A slot announces {busy, client}. The client id is kept as two atomic words
 * (the 128 bits of the UUID) so a reader never sees a half-written string;
 * at worst it sees a slot that is re-announcing a different client, and then
 * that announcer's own scan sees the reader (both store busy before scanning,
 * sequentially consistent), so the caps can refuse both but never admit both.
 */
typedef struct {
	_Alignas(64) atomic_uint busy; /* one cache line per slot: responders write their own */
	_Atomic uint64_t id[2];
	_Atomic uint64_t batch[2];
} slot;

struct sy_admission {
	atomic_int max_inflight;
	atomic_int max_per_client;
	int nslots;
	size_t size;
	slot slots[];
};

sy_admission *sy_admission_create(int slots, int max_inflight, int max_inflight_per_client)
{
	if (slots < 1)
		return NULL;
	size_t size = sizeof(sy_admission) + (size_t)slots * sizeof(slot);
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* Anonymous mappings are zero-filled: every slot starts idle. */
	sy_admission *a = p;
	a->nslots = slots;
	a->size = size;
	sy_admission_set_caps(a, max_inflight, max_inflight_per_client);
	return a;
}

void sy_admission_set_caps(sy_admission *a, int max_inflight, int max_inflight_per_client)
{
	if (a == NULL)
		return;
	atomic_store(&a->max_inflight, max_inflight > 0 ? max_inflight : 0);
	atomic_store(&a->max_per_client, max_inflight_per_client > 0 ? max_inflight_per_client : 0);
}

void sy_admission_destroy(sy_admission *a)
{
	if (a != NULL)
		munmap(a, a->size);
}

/* The 16 octets of a UUID as two words. The ids are canonical (the push parser checked
 * them); anything else would count as the nil UUID. */
static void uuid_words(const char *s, uint64_t out[2])
{
	uint8_t o[16];
	if (!sy_uuid_octets(s, strlen(s), o))
		memset(o, 0, sizeof o);
	out[0] = sy_be_get(o, 8);
	out[1] = sy_be_get(o + 8, 8);
}

bool sy_admission_enter(sy_admission *a, int slot_no, const char *client_id, const char *batch_id)
{
	if (a == NULL)
		return true;
	if (slot_no < 0 || slot_no >= a->nslots)
		return false;
	uint64_t id[2], batch[2];
	uuid_words(client_id, id);
	uuid_words(batch_id, batch);
	slot *me = &a->slots[slot_no];
	atomic_store(&me->id[0], id[0]);
	atomic_store(&me->id[1], id[1]);
	atomic_store(&me->batch[0], batch[0]);
	atomic_store(&me->batch[1], batch[1]);
	atomic_store(&me->busy, 1u);

	int total = 0, same = 1;
	for (int i = 0; i < a->nslots; i++) {
		slot *s = &a->slots[i];
		if (atomic_load(&s->busy) == 0)
			continue;
		total++;
		/* Other slots of this client with another batch: duplicates of ours count once. */
		if (i != slot_no && atomic_load(&s->id[0]) == id[0] &&
		    atomic_load(&s->id[1]) == id[1] &&
		    (atomic_load(&s->batch[0]) != batch[0] ||
		     atomic_load(&s->batch[1]) != batch[1]))
			same++;
	}
	int cap = atomic_load(&a->max_inflight);
	int cap_client = atomic_load(&a->max_per_client);
	if ((cap > 0 && total > cap) || (cap_client > 0 && same > cap_client)) {
		atomic_store(&me->busy, 0u);
		return false;
	}
	return true;
}

void sy_admission_leave(sy_admission *a, int slot_no)
{
	if (a == NULL || slot_no < 0 || slot_no >= a->nslots)
		return;
	atomic_store(&a->slots[slot_no].busy, 0u);
}

void sy_admission_clear(sy_admission *a, int slot_no)
{
	sy_admission_leave(a, slot_no);
}

int sy_admission_inflight(sy_admission *a)
{
	if (a == NULL)
		return 0;
	int n = 0;
	for (int i = 0; i < a->nslots; i++)
		n += atomic_load(&a->slots[i].busy) != 0;
	return n;
}
