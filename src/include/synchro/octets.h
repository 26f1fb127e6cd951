/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * octets.h: octet spellings that libsynchro and its programs share: hex and big-endian
 * integers.
 *
 * Notes: PostgreSQL's binary formats and the replication stream use them. The calls are
 * pure and allocate nothing.
 */
#ifndef SYNCHRO_OCTETS_H
#define SYNCHRO_OCTETS_H

#include <stddef.h>
#include <stdint.h>

/* The value of hex digit c, either case; -1 for anything else. */
static inline int sy_hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The lowercase hex of p[0..n) into out[0..2n) (no NUL added): the spelling of every
 * digest, checksum and bytea the library writes. */
static inline void sy_hex_encode(char *out, const unsigned char *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 0x0F];
	}
}

/* The unsigned integer of the big-endian p[0..octets), octets at most 8. */
static inline uint64_t sy_be_get(const unsigned char *p, size_t octets)
{
	uint64_t v = 0;
	for (size_t i = 0; i < octets; i++)
		v = v << 8 | p[i];
	return v;
}

/* The low octets (at most 8) of v into p[0..octets), big-endian. */
static inline void sy_be_put(unsigned char *p, uint64_t v, size_t octets)
{
	for (size_t i = octets; i > 0; i--) {
		p[i - 1] = (unsigned char)v;
		v >>= 8;
	}
}

#endif
