/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * metrics_push.h: the protocol's counters of /metrics, private to metrics.c and
 * metrics_push.c.
 *
 * Notes: They count push outcomes by status and code, replays and admission refusals. They
 * count request-level errors by the protocol's error code, database errors by SQLSTATE
 * class, lock failures and rebuilds. Every label set is one of the protocol's or
 * PostgreSQL's enumerations. No label holds a user or client id. The counters live inside
 * sy_metrics' shared mapping. Every update is a relaxed atomic add.
 */
#ifndef SY_FCGI_METRICS_PUSH_H
#define SY_FCGI_METRICS_PUSH_H

#include <stdatomic.h>
#include <stdint.h>

#include "fcgi/metrics.h"
#include "store/push_call.h"
#include "synchro/matrix.h"

/* PostgreSQL's SQLSTATE classes (Appendix A of its manual), Synchro's own "SY", then every
 * other as "other". */
#define SY_METRICS_SQLSTATE_CLASSES 45

typedef enum { SY_LOCK_TIMEOUT, SY_LOCK_DEADLOCK, SY_LOCK_SERIALIZATION, SY_LOCK__COUNT } sy_lock_failure;

typedef struct {
	_Atomic uint64_t outcomes[SY_CODE__COUNT];
	_Atomic uint64_t mutation_replays;
	_Atomic uint64_t batch_replays;
	_Atomic uint64_t admission_refusals;
	_Atomic uint64_t errors[SY_ROUTE__COUNT][SY_ERR__COUNT];
	_Atomic uint64_t db_errors[SY_METRICS_SQLSTATE_CLASSES];
	_Atomic uint64_t lock_failures[SY_LOCK__COUNT];
	_Atomic uint64_t rebuilds[SY_REBUILD__COUNT];
} sy_metrics_proto;

/* The protocol's counters inside m's mapping: its first member (metrics.c asserts it). */
static inline sy_metrics_proto *sy_metrics_proto_of(sy_metrics *m)
{
	return (sy_metrics_proto *)(void *)m;
}
/* Appends their exposition. */
void sy_metrics_proto_write(sy_metrics_proto *p, sy_buf *out);

#endif
