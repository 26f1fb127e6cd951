/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * buf.h: a growable byte buffer, the output side of the canonical JSON writer.
 */
#ifndef SYNCHRO_BUF_H
#define SYNCHRO_BUF_H

#include "synchro/common.h"

/* The buffer owns data (sy_buf_free()); the struct itself is the caller's. */
typedef struct {
	char *data; /* always NUL-terminated when non-NULL */
	size_t len;
	size_t cap;
	bool failed; /* sticky: an append ran out of memory */
} sy_buf;

#define SY_BUF_INIT                                                                                \
	{                                                                                          \
		NULL, 0, 0, false                                                                  \
	}

void sy_buf_init(sy_buf *b);
/* Frees the storage; accepts a zeroed buffer and NULL. */
void sy_buf_free(sy_buf *b);
/* Empties b and clears failed; the storage is kept for reuse. */
void sy_buf_reset(sy_buf *b);
/* Appends (p borrowed for the call); false, with b->failed set, when memory runs
 * out, and false at once while b->failed is set. */
bool sy_buf_append(sy_buf *b, const void *p, size_t n);
bool sy_buf_putc(sy_buf *b, char c);
bool sy_buf_puts(sy_buf *b, const char *s);
bool sy_buf_printf(sy_buf *b, const char *fmt, ...) SY_PRINTF(2, 3);
bool sy_buf_reserve(sy_buf *b, size_t extra);
/* b's storage, new (sy_free()), its length in *len (len may be NULL); b is left
 * empty. An empty b gives a new "" ; NULL when memory runs out. */
char *sy_buf_steal(sy_buf *b, size_t *len);

#endif
