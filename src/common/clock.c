/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clock.c: the one monotonic clock of the programs (clock.h).
 *
 * Layer: base of src/common (doc/hacking.md).
 */
#include "config.h"

#include <time.h>

#include "common/clock.h"

static struct timespec now(void)
{
	struct timespec ts;
	/* CLOCK_MONOTONIC cannot fail on a system that has it (POSIX: EINVAL only for an
	 * unsupported clock id); zero keeps a caller's arithmetic defined if it ever did. */
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		ts.tv_sec = ts.tv_nsec = 0;
	return ts;
}

int64_t sy_clock_ms(void)
{
	struct timespec ts = now();
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

double sy_clock_s(void)
{
	struct timespec ts = now();
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
