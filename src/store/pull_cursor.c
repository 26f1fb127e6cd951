/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pull_cursor.c: changelog positions, and the two opaque tokens a client carries between
 * requests.
 *
 * Layer: base of src/store (doc/hacking.md).
 * Rules: doc/contract.md#pull-and-rebuild (the cursor and the page token).
 * Notes: The pull cursor is "c1.<lsn>.<ordinal>". The rebuild page token is
 * "r1.<hex table_id>.<hex pk>". These are pure text codecs, with no SQL
 * (tests/unit/test_pull_codec.c).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store/pull.h"
#include "synchro/alloc.h"
#include "synchro/octets.h"

int sy_store_position_cmp(const sy_store_position *a, const sy_store_position *b)
{
	if (a->lsn != b->lsn)
		return a->lsn < b->lsn ? -1 : 1;
	if (a->ordinal != b->ordinal)
		return a->ordinal < b->ordinal ? -1 : 1;
	return 0;
}

void sy_store_cursor_format(const sy_store_position *p, char out[SY_STORE_CURSOR_LEN + 1])
{
	snprintf(out, SY_STORE_CURSOR_LEN + 1, "c1.%016" PRIx64 ".%08" PRIx32, p->lsn, p->ordinal);
}

/* A lowercase hex digit's value; -1 for anything else (uppercase included). */
static int hexval(char c)
{
	return c >= 'A' && c <= 'F' ? -1 : sy_hex_digit(c);
}

/* n lowercase hex digits as a number; false on anything else. */
static bool hex_number(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		int d = hexval(s[i]);
		if (d < 0)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	*out = v;
	return true;
}

bool sy_store_cursor_parse(const char *s, size_t len, sy_store_position *out)
{
	uint64_t lsn, ord;
	if (len != SY_STORE_CURSOR_LEN || memcmp(s, "c1.", 3) != 0 || s[19] != '.' ||
	    !hex_number(s + 3, 16, &lsn) || !hex_number(s + 20, 8, &ord) || ord > INT32_MAX)
		return false;
	out->lsn = lsn;
	out->ordinal = (uint32_t)ord;
	return true;
}

/* Decodes the lowercase hex s[0..n) into a new NUL-terminated string; NULL when invalid
 * (empty, odd, not lowercase hex, a NUL byte) or out of memory (*nomem). */
static char *unhex(const char *s, size_t n, bool *nomem)
{
	if (n == 0 || n % 2 != 0)
		return NULL;
	char *out = sy_malloc(n / 2 + 1);
	if (out == NULL) {
		*nomem = true;
		return NULL;
	}
	for (size_t i = 0; i < n; i += 2) {
		int hi = hexval(s[i]), lo = hexval(s[i + 1]);
		if (hi < 0 || lo < 0 || (hi | lo) == 0) {
			sy_free(out);
			return NULL;
		}
		out[i / 2] = (char)(hi << 4 | lo);
	}
	out[n / 2] = '\0';
	return out;
}

bool sy_store_page_token_parse(const char *s, size_t len, char **table_id, char **pk, bool *nomem)
{
	*table_id = NULL;
	*pk = NULL;
	*nomem = false;
	if (len < 3 || memcmp(s, "r1.", 3) != 0)
		return false;
	const char *a = s + 3;
	const char *dot = memchr(a, '.', len - 3);
	if (dot == NULL)
		return false;
	*table_id = unhex(a, (size_t)(dot - a), nomem);
	if (*table_id != NULL)
		*pk = unhex(dot + 1, len - (size_t)(dot + 1 - s), nomem);
	if (*pk == NULL) {
		sy_free(*table_id);
		*table_id = NULL;
		return false;
	}
	return true;
}

/* The lowercase hex of s's bytes (out->failed records a lack of memory). */
static void put_hex(sy_buf *out, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		char pair[2];
		sy_hex_encode(pair, p, 1);
		sy_buf_append(out, pair, 2);
	}
}

bool sy_store_page_token_format(sy_buf *out, const char *table_id, const char *pk)
{
	sy_buf_puts(out, "r1.");
	put_hex(out, table_id);
	sy_buf_putc(out, '.');
	put_hex(out, pk);
	return !out->failed;
}
