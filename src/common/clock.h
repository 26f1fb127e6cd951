/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The one monotonic clock of the programs (CLOCK_MONOTONIC): deadlines, backoffs, timers
 * and durations. Never a date: wall-clock time (log lines, the replication stream's
 * timestamps) is CLOCK_REALTIME where it is used.
 */
#ifndef SY_COMMON_CLOCK_H
#define SY_COMMON_CLOCK_H

#include <stdint.h>

/* Milliseconds since an arbitrary origin fixed at boot; never goes backwards. */
int64_t sy_clock_ms(void);
/* The same clock in seconds, with nanosecond resolution (durations for metrics). */
double sy_clock_s(void);

#endif
