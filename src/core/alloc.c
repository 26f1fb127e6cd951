/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * alloc.c: the one allocator of libsynchro.
 *
 * Layer: base of src/core (doc/hacking.md).
 * Notes: Tests replace it to fail each allocation in turn.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"

static sy_allocator current = {malloc, realloc, free};

void sy_set_allocator(const sy_allocator *a)
{
	if (a == NULL) {
		current.malloc_fn = malloc;
		current.realloc_fn = realloc;
		current.free_fn = free;
	} else {
		current = *a;
	}
}

void *sy_malloc(size_t n)
{
	return current.malloc_fn(n ? n : 1);
}

void *sy_calloc(size_t count, size_t n)
{
	if (n != 0 && count > SIZE_MAX / n)
		return NULL;
	void *p = sy_malloc(count * n);
	if (p != NULL)
		memset(p, 0, count * n);
	return p;
}

void *sy_realloc(void *p, size_t n)
{
	return current.realloc_fn(p, n ? n : 1);
}

void sy_free(void *p)
{
	if (p != NULL)
		current.free_fn(p);
}

char *sy_strndup(const char *s, size_t n)
{
	char *d = sy_malloc(n + 1);
	if (d == NULL)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}
