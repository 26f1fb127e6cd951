/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lease.h: the single-writer lease of synchro-walsync (synchro.writer_lease): claim, renew,
 * release, and the status that synchroctl lease status prints.
 */
#ifndef SY_STORE_LEASE_H
#define SY_STORE_LEASE_H

#include "store/store.h"

/* The lease row walsync holds; one changelog, one writer. */
#define SY_STORE_LEASE_ROLE "walsync"

#define SY_STORE_WRITER_ID_MAX 255
#define SY_STORE_UUID_LEN      36
#define SY_STORE_LSN_MAX       17 /* "FFFFFFFF/FFFFFFFF" */

/* What a writer holds once it claimed the lease: every changelog write names it. */
typedef struct {
	char writer_id[SY_STORE_WRITER_ID_MAX + 1];
	long long epoch;                   /* writer_epoch */
	char token[SY_STORE_UUID_LEN + 1]; /* fencing_token */
} sy_store_lease;

/*
 * Claims the lease for writer_id when nobody holds it, when it expired (lease_until <= now)
 * or when the holder's heartbeat is older than stale_s seconds (a NULL heartbeat keeps the
 * expiry-only rule). One statement (INSERT ... ON CONFLICT DO UPDATE ... WHERE), so of two
 * standbys racing, one wins. A claim always bumps writer_epoch and mints a new
 * fencing_token, which fences out every write of the previous holder.
 * SY_STORE_OK with *acquired true and *out filled, or *acquired false when a live holder
 * keeps it (prev_holder, when non-NULL, receives its writer_id, or "" when unknown).
 */
SY_MUST_CHECK sy_store_status sy_store_lease_claim(PGconn *c, const char *writer_id, int lease_s,
                                                   int stale_s, sy_store_lease *out, bool *acquired,
                                                   char prev_holder[SY_STORE_WRITER_ID_MAX + 1],
                                                   sy_error *err);

/* Progress the heartbeat reports (NULL members and negative numbers leave a column as is). */
typedef struct {
	const char *slot;
	unsigned long long materialized_lsn; /* 0: unchanged */
	long long lag_ms;                    /* < 0: unchanged */
} sy_store_lease_progress;

/*
 * The heartbeat: extends the caller's own live lease by lease_s seconds and stamps
 * heartbeat_at, only while writer_epoch and fencing_token still match and the lease has not
 * expired. It never claims: SY_STORE_CONFLICT when the lease is no longer the caller's
 * (taken over, or expired; the caller stops writing and goes back to standby).
 */
SY_MUST_CHECK sy_store_status sy_store_lease_renew(PGconn *c, const sy_store_lease *l, int lease_s,
                                                   const sy_store_lease_progress *p, sy_error *err);

/* Ends the caller's lease now (lease_until = now()) so a standby takes over at once; a lease
 * that is no longer the caller's is left alone (SY_STORE_OK either way). */
SY_MUST_CHECK sy_store_status sy_store_lease_release(PGconn *c, const sy_store_lease *l,
                                                     sy_error *err);

/* The lease and the slot as an operator sees them. */
typedef struct {
	bool found; /* a lease row exists */
	char writer_id[SY_STORE_WRITER_ID_MAX + 1];
	long long epoch;
	char token[SY_STORE_UUID_LEN + 1];
	char lease_until[SY_STORE_TIME_LEN + 1];
	double expires_in_s;                         /* negative: expired that long ago */
	char heartbeat_at[SY_STORE_TIME_LEN + 1];    /* "" when NULL */
	double heartbeat_age_s;                      /* < 0 when heartbeat_at is NULL */
	char slot[64];                               /* as the holder reported it; "" unknown */
	char materialized_lsn[SY_STORE_LSN_MAX + 1]; /* "" unknown */
	long long lag_ms;                            /* -1 unknown */
	/* From pg_replication_slots for slot (the argument, else the reported slot). */
	bool slot_found;
	bool slot_active;
	long long slot_pid; /* 0 when inactive */
	char confirmed_flush_lsn[SY_STORE_LSN_MAX + 1];
	long long lag_bytes; /* current WAL position minus confirmed_flush_lsn; -1 unknown */
} sy_store_lease_status;

/*
 * Reads the lease row and the slot (slot NULL or "": the one the holder reported).
 * SY_STORE_OK also when there is no lease row (out->found false).
 */
SY_MUST_CHECK sy_store_status sy_store_lease_status_get(PGconn *c, const char *slot,
                                                        sy_store_lease_status *out, sy_error *err);

/* "X/Y" text of an LSN into buf. */
void sy_store_lsn_format(unsigned long long lsn, char buf[SY_STORE_LSN_MAX + 1]);
/* Parses "X/Y"; false when s is not one. */
bool sy_store_lsn_parse(const char *s, unsigned long long *out);

#endif
