/* SPDX-License-Identifier: BSD-2-Clause */
/* contrib/bench: what the benchmark programs share, clocks and percentiles. */
#ifndef SY_BENCH_H
#define SY_BENCH_H

#include <stddef.h>
#include <time.h>

/* Seconds on clock id: CLOCK_MONOTONIC for durations, CLOCK_REALTIME beside PostgreSQL's
 * commit timestamps on the same machine. */
static inline double bench_clock(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline double bench_mono(void)
{
	return bench_clock(CLOCK_MONOTONIC);
}

static inline double bench_wall(void)
{
	return bench_clock(CLOCK_REALTIME);
}

/* qsort order of doubles. */
static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The p-th percentile (nearest rank) of v[0..n), sorted ascending; 0 when empty. */
static inline double bench_pct(const double *v, size_t n, double p)
{
	if (n == 0)
		return 0;
	size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

#endif
