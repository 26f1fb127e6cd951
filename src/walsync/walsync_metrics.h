/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * walsync_metrics.h: synchro-walsync's metrics, as a Prometheus textfile for
 * node_exporter's textfile collector ([walsync] metrics_file).
 *
 * Notes: Every metrics_interval_s, the file is written to a temporary file and renamed over
 * it. It reports the lease, the epoch, the lag behind the primary's flush position, what
 * was materialized, stream restarts, and the time of the last pass of the loop.
 * doc/operations.md#metrics says why a file and not a listener.
 */
#ifndef SY_WALSYNC_METRICS_H
#define SY_WALSYNC_METRICS_H

#include <stdbool.h>
#include <stdint.h>

/* Flush positions sampled with their times: the lag in seconds is the age of the newest
 * sample the slot has confirmed. */
#define SY_WS_LAG_SAMPLES 128

typedef struct {
	int64_t next_ms;   /* sy_clock_ms() of the next write */
	double started_at; /* wall clock, seconds since 1970 */
	struct {
		double at; /* sy_clock_ms() / 1000: the monotonic clock */
		uint64_t flush;
	} samples[SY_WS_LAG_SAMPLES];
	int nsamples, head; /* a ring: head is the oldest once full */
	bool failing;       /* the last write failed (logged once) */
} sy_ws_metrics;

struct walsync;
/* Writes the file when it is due (every pass of the loop asks; force: now, e.g. on stop). */
void sy_ws_metrics_tick(struct walsync *w, bool force);

#endif
