/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clock.h: the one monotonic clock of the programs (CLOCK_MONOTONIC).
 *
 * Notes: It serves deadlines, backoffs, timers and durations. It never gives a date. Where
 * wall-clock time is used (log lines, the replication stream's timestamps), it is
 * CLOCK_REALTIME.
 */
#ifndef SY_COMMON_CLOCK_H
#define SY_COMMON_CLOCK_H

#include <stdint.h>

/* Milliseconds since an arbitrary origin fixed at boot; never goes backwards. */
int64_t sy_clock_ms(void);
/* The same clock in seconds, with nanosecond resolution (durations for metrics). */
double sy_clock_s(void);

#endif
