/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * json_scan.h: the byte scanner of JSON string text, private to the core.
 *
 * Notes: The reader (json_parse.c) and the RFC 8785 writer (jcs.c) share it. The reader
 * looks at a quote, a backslash, a control character or a non-ASCII byte (RFC 8259
 * section 7). The writer escapes only the first three (RFC 8785 section 3.2.2.2). The scan
 * takes eight bytes at a time, or sixteen with SSE2. Its bit tricks come from "Bit
 * Twiddling Hacks": a borrow only runs past a byte that is a real match.
 */
#ifndef SY_CORE_JSON_SCAN_H
#define SY_CORE_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define SY_SCAN_ONES  UINT64_C(0x0101010101010101)
#define SY_SCAN_HIGHS UINT64_C(0x8080808080808080)

/* Non-zero when some byte of w is < 0x20, '"' or '\\', or, with high, >= 0x80. */
static inline uint64_t sy_scan_special(uint64_t w, bool high)
{
	uint64_t q = w ^ (SY_SCAN_ONES * '"');
	uint64_t b = w ^ (SY_SCAN_ONES * '\\');
	return (((w - SY_SCAN_ONES * 0x20) & ~w) | ((q - SY_SCAN_ONES) & ~q) |
	        ((b - SY_SCAN_ONES) & ~b) | (high ? w : 0)) &
	       SY_SCAN_HIGHS;
}

/*
 * The end of the run at p[i..n) holding no quote, backslash or control byte
 * and, with high, no byte >= 0x80 (callers pass a constant, so each gets its
 * own loop).
 */
static inline size_t sy_scan_plain(const unsigned char *p, size_t i, size_t n, bool high)
{
#if defined(__SSE2__)
	const __m128i quote = _mm_set1_epi8('"');
	const __m128i bslash = _mm_set1_epi8('\\');
	const __m128i space = _mm_set1_epi8(0x20);
	const __m128i ctl = _mm_set1_epi8(0x1F);
	while (n - i >= 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
		/* Signed, bytes >= 0x80 are negative, so "< 0x20" catches them too;
		 * unsigned, v <= 0x1F exactly when min(v, 0x1F) == v. */
		__m128i low =
		        high ? _mm_cmplt_epi8(v, space) : _mm_cmpeq_epi8(_mm_min_epu8(v, ctl), v);
		__m128i hit = _mm_or_si128(
		        low, _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)));
		unsigned mask = (unsigned)_mm_movemask_epi8(hit);
		if (mask != 0)
			return i + (size_t)__builtin_ctz(mask);
		i += 16;
	}
#endif
	while (n - i >= 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		if (sy_scan_special(w, high))
			break;
		i += 8;
	}
	while (i < n && p[i] >= 0x20 && p[i] != '"' && p[i] != '\\' && (!high || p[i] < 0x80))
		i++;
	return i;
}

#endif
