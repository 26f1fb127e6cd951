/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * buf.c: the growable byte buffer of buf.h. Every writer of wire bytes appends to it: the
 * JCS writer, response bodies and error bodies.
 *
 * Layer: base of src/core (doc/hacking.md).
 * Notes: The bytes stay NUL-terminated. A failed append sets a flag that stays set.
 */
#include "config.h"

#include <assert.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/buf.h"

void sy_buf_init(sy_buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->failed = false;
}

void sy_buf_free(sy_buf *b)
{
	if (b == NULL)
		return;
	sy_free(b->data);
	sy_buf_init(b);
}

void sy_buf_reset(sy_buf *b)
{
	b->len = 0;
	b->failed = false;
	if (b->data != NULL)
		b->data[0] = '\0';
}

bool sy_buf_reserve(sy_buf *b, size_t extra)
{
	/* buf.h: data is NULL and empty, or holds len octets and a NUL within cap */
	assert(b->data == NULL ? b->len == 0 && b->cap == 0 : b->len < b->cap);
	if (b->failed)
		return false;
	if (extra > SIZE_MAX - b->len - 1)
		goto fail;
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	char *p = sy_realloc(b->data, cap);
	if (p == NULL)
		goto fail;
	if (b->data == NULL)
		p[0] = '\0'; /* buf.h: NUL-terminated whenever data is non-NULL */
	b->data = p;
	b->cap = cap;
	assert(b->len + extra < b->cap);
	return true;
fail:
	b->failed = true;
	return false;
}

bool sy_buf_append(sy_buf *b, const void *p, size_t n)
{
	if (!sy_buf_reserve(b, n))
		return false;
	if (n > 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return true;
}

bool sy_buf_putc(sy_buf *b, char c)
{
	/* the common case, without the general path's checks (room for c and the NUL) */
	if (!b->failed && b->len + 1 < b->cap) {
		b->data[b->len++] = c;
		b->data[b->len] = '\0';
		return true;
	}
	return sy_buf_append(b, &c, 1);
}

bool sy_buf_puts(sy_buf *b, const char *s)
{
	return sy_buf_append(b, s, strlen(s));
}

bool sy_buf_printf(sy_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !sy_buf_reserve(b, (size_t)n))
		return false;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return true;
}

char *sy_buf_steal(sy_buf *b, size_t *len)
{
	if (b->data == NULL && !sy_buf_reserve(b, 0))
		return NULL;
	char *p = b->data;
	if (len != NULL)
		*len = b->len;
	sy_buf_init(b);
	return p;
}
