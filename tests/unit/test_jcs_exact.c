/* SPDX-License-Identifier: BSD-2-Clause */
/* The 128-bit exact number paths of decimal.c (the JCS writer's digits) against
 * the C library (printf and strtod), reached by compiling decimal.c into this
 * program under other names. */
#include "config.h"

#define sy_pow10_double     sy_pow10_double_under_test
#define sy_decimal_exact    sy_decimal_exact_under_test
#define sy_decimal_shortest sy_decimal_shortest_under_test
#include "core/decimal.c"

#include <CUnit/CUnit.h>

#include "testutil.h"

#ifdef SY_DECIMAL_EXACT

/* The same answer as printf's %.16e, whenever the exact path answers. */
static void check_digits17(double d, int *answered)
{
	uint64_t m, want_m;
	int e, want_e;
	if (!exact_digits17(d, &m, &e))
		return;
	(*answered)++;
	char buf[64];
	snprintf(buf, sizeof(buf), "%.16e", d);
	want_m = 0;
	const char *s = buf;
	for (; *s != 'e'; s++)
		if (*s >= '0' && *s <= '9')
			want_m = want_m * 10 + (uint64_t)(*s - '0');
	want_e = atoi(s + 1) - 16;
	if (m != want_m || e != want_e) {
		fprintf(stderr, "\n  %a: %" PRIu64 "e%d, printf %" PRIu64 "e%d\n", d, m, e, want_m,
		        want_e);
		CU_FAIL("17 digits differ from printf");
	}
}

/* The same verdict as strtod for candidates around d, whenever it answers. */
static void check_round_trips(double d, int *answered)
{
	char buf[64];
	for (int p = 15; p <= 17; p++) {
		snprintf(buf, sizeof(buf), "%.*e", p - 1, d);
		uint64_t m = 0;
		const char *s = buf;
		for (; *s != 'e'; s++)
			if (*s >= '0' && *s <= '9')
				m = m * 10 + (uint64_t)(*s - '0');
		int e = atoi(s + 1) - (p - 1);
		for (int delta = -2; delta <= 2; delta++) {
			uint64_t c = m + (uint64_t)(int64_t)delta;
			int r = exact_round_trips(c, e, d);
			if (r < 0)
				continue;
			(*answered)++;
			snprintf(buf, sizeof(buf), "%" PRIu64 "e%d", c, e);
			if (r != (strtod(buf, NULL) == d)) {
				fprintf(stderr, "\n  %a: %s exact says %d\n", d, buf, r);
				CU_FAIL("round trip verdict differs from strtod");
				return;
			}
		}
	}
}

static void test_exact_paths(void)
{
	int digits = 0, trips = 0;
	/* Every power of two and its neighbours: the lopsided intervals. */
	for (int n = -1022; n <= 1023; n++) {
		double p2 = ldexp(1, n);
		double near[3] = {p2, nextafter(p2, 0), nextafter(p2, INFINITY)};
		for (int i = 0; i < 3; i++) {
			if (!isfinite(near[i]) || fpclassify(near[i]) != FP_NORMAL)
				continue;
			check_digits17(near[i], &digits);
			check_round_trips(near[i], &trips);
		}
	}
	/* Random doubles, half of them at everyday magnitudes. */
	uint64_t x = 0x13198A2E03707344u;
	for (int i = 0; i < 20000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t bits = x & UINT64_C(0x7FFFFFFFFFFFFFFF);
		if (i % 2 == 0)
			bits = (x & UINT64_C(0x000FFFFFFFFFFFFF)) |
			       (uint64_t)(1023 - 30 + (x >> 52) % 170) << 52;
		double d;
		memcpy(&d, &bits, sizeof(d));
		if (!isfinite(d) || fpclassify(d) != FP_NORMAL)
			continue;
		check_digits17(d, &digits);
		check_round_trips(d, &trips);
	}
	/* Exact ties at 17 digits: integers with 18+ digits ending in 5 at the cut. */
	for (uint64_t v = UINT64_C(100000000000000005); v < UINT64_C(100000000000010000); v += 10)
		check_digits17((double)v, &digits);
	CU_ASSERT(digits > 10000);
	CU_ASSERT(trips > 50000);
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"exact paths against printf and strtod", test_exact_paths},
	        {NULL, NULL},
	};
	sy_test_add_suite("jcs-exact", tests);
	return sy_test_run();
}

#else

int main(void)
{
	fprintf(stderr, "no 128-bit integers: the exact paths are not compiled\n");
	return SY_TEST_SKIP;
}

#endif
