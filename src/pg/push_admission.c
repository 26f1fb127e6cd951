/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * push_admission.c: admission control. It caps the first executions in flight, in total
 * and per client.
 *
 * Layer: middle of src/pg (doc/hacking.md).
 * Rules: doc/contract.md#admission (after the schema gate, before the first-execution
 * transaction; 429 retry_later), doc/contract.md#concurrent-replay (duplicates wait and
 * replay).
 * Notes: The caps hold across every responder of every host, because the slots are locks
 * of the database itself. A slot is a transaction-level advisory lock in a key space of its
 * own: locktag field 4 takes values no SQL advisory function uses. It is taken without
 * waiting. It is released when the push's transaction ends. A replay never reaches
 * admission.
 *
 * A request may carry a batch whose first execution holds a slot now. It is a concurrent
 * duplicate. It waits for that execution and replays it. So it does not count against the
 * per-client cap a second time.
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/lock.h"

#include "push_module.h"

#define SPACE_TOTAL  0x5379 /* 'Sy': slot n of the total cap */
#define SPACE_CLIENT 0x537A /* slot n of one client's cap */
#define SPACE_BATCH  0x537B /* one batch in first execution */

static uint32 id_hash(const char *uuid)
{
	return hash_bytes((const unsigned char *)uuid, (int)strlen(uuid));
}

static bool try_lock(uint32 key1, uint32 key2, uint16 space)
{
	LOCKTAG tag;
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, key1, key2, space);
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

static void unlock(uint32 key1, uint32 key2, uint16 space)
{
	LOCKTAG tag;
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, key1, key2, space);
	LockRelease(&tag, ExclusiveLock, false);
}

/* One free slot of n in key space (key1, space), tried from a per-backend start. */
static bool take_slot(uint32 key1, int n, uint16 space)
{
	for (int i = 0; i < n; i++)
		if (try_lock(key1, (uint32)((MyProcPid + i) % n), space))
			return true;
	return false;
}

bool sp_admit(sp_push *x)
{
	const char *client = x->req->client_id;
	if (x->max_inflight > 0 && !take_slot(0, x->max_inflight, SPACE_TOTAL))
		return false;
	if (x->max_per_client <= 0)
		return true;
	uint32 c = id_hash(client), b = id_hash(x->req->batch_id);
	if (!try_lock(c, b, SPACE_BATCH))
		return true; /* a concurrent duplicate: that execution already counts */
	if (take_slot(c ^ 0x9e3779b9u, x->max_per_client, SPACE_CLIENT))
		return true;
	unlock(c, b, SPACE_BATCH);
	return false;
}
