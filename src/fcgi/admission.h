/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Admission control across all responders (shared memory created by the
 * master before it forks): caps on first executions in flight, in total and
 * per client. Each responder serves one request at a time, so it owns one
 * slot; the master clears the slot of a responder it reaps.
 */
#ifndef SY_FCGI_ADMISSION_H
#define SY_FCGI_ADMISSION_H

#include <stdbool.h>

typedef struct sy_admission sy_admission;

/*
 * Maps the shared table for `slots` responders with the caps (0 = no cap).
 * NULL when the mapping fails. The mapping is inherited across fork().
 */
sy_admission *sy_admission_create(int slots, int max_inflight, int max_inflight_per_client);
/* Changes the caps (master, on reload). */
void sy_admission_set_caps(sy_admission *a, int max_inflight, int max_inflight_per_client);
void sy_admission_destroy(sy_admission *a);

/*
 * Announces a first execution of batch_id for client_id (canonical UUIDs) in
 * `slot`, then counts: over either cap the announcement is withdrawn and false
 * returned (the caller answers 429 retry_later). Requests carrying the batch
 * another slot already announced count once against the per-client cap: they
 * are the ADR's concurrent duplicates, which wait for that one execution and
 * replay it rather than executing again. Racing announcers may both be
 * refused at the cap, never both admitted beyond it.
 */
bool sy_admission_enter(sy_admission *a, int slot, const char *client_id, const char *batch_id);
/* Withdraws the slot's announcement (after commit or rollback). */
void sy_admission_leave(sy_admission *a, int slot);
/* Master: clears a reaped responder's slot. */
void sy_admission_clear(sy_admission *a, int slot);
/* Slots announcing a first execution now (for /metrics). */
int sy_admission_inflight(sy_admission *a);

#endif
