/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * alloc.h: the one allocator of libsynchro. Tests replace it to fail allocations in turn.
 */
#ifndef SYNCHRO_ALLOC_H
#define SYNCHRO_ALLOC_H

#include <stddef.h>

void *sy_malloc(size_t n);
void *sy_calloc(size_t count, size_t n);
void *sy_realloc(void *p, size_t n);
/* Releases what the three above return; accepts NULL. */
void sy_free(void *p);
/* A new NUL-terminated copy of s[0..n) (sy_free()); NULL when memory runs out. */
char *sy_strndup(const char *s, size_t n);

typedef struct {
	void *(*malloc_fn)(size_t);
	void *(*realloc_fn)(void *, size_t);
	void (*free_fn)(void *);
} sy_allocator;

/* Installs a (test) allocator, borrowed until the next call; NULL restores
 * malloc/realloc/free. Not thread-safe. */
void sy_set_allocator(const sy_allocator *a);

#endif
