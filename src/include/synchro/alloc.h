/* SPDX-License-Identifier: BSD-2-Clause */
/* The one allocator of libsynchro; tests replace it to fail allocations in turn. */
#ifndef SYNCHRO_ALLOC_H
#define SYNCHRO_ALLOC_H

#include <stddef.h>

void *sy_malloc(size_t n);
void *sy_calloc(size_t count, size_t n);
void *sy_realloc(void *p, size_t n);
/* Accepts NULL. */
void sy_free(void *p);
/* Returns a new NUL-terminated copy of s[0..n) the caller frees with sy_free(); NULL on failure. */
char *sy_strndup(const char *s, size_t n);

typedef struct {
	void *(*malloc_fn)(size_t);
	void *(*realloc_fn)(void *, size_t);
	void (*free_fn)(void *);
} sy_allocator;

/* Installs a (test) allocator; NULL restores malloc/realloc/free. Not thread-safe. */
void sy_set_allocator(const sy_allocator *a);

#endif
