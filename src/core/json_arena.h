/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * json_arena.h: the document arena every JSON value lives in, private to the core.
 *
 * Notes: json.h promises that values are freed together with their document. The reader
 * (json_parse.c) and the builders (json_build.c) share the arena. The bump allocation is
 * inline here; the rest is in json_arena.c.
 */
#ifndef SY_CORE_JSON_ARENA_H
#define SY_CORE_JSON_ARENA_H

#include <assert.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "synchro/json.h"

typedef struct sy_arena_chunk {
	struct sy_arena_chunk *next;
	size_t used;
	size_t cap;
	alignas(max_align_t) unsigned char data[];
} sy_arena_chunk;

#define ARENA_FIRST_CHUNK 4096
#define ARENA_MAX_CHUNK   (1024 * 1024)

struct sy_json_doc {
	sy_arena_chunk *chunks; /* head is the chunk being filled */
	size_t next_cap;        /* size of the next regular chunk */
	sy_json *root;
};

/* A new empty document whose first chunk holds first_chunk octets; NULL on no memory. */
sy_json_doc *sy_json_doc_create(size_t first_chunk);
/* The path of arena_alloc() that needs a new chunk; NULL on no memory. */
void *sy_json_arena_alloc_slow(sy_json_doc *doc, size_t n);

/* align must be a power of two no larger than alignof(max_align_t). */
static inline void *arena_alloc(sy_json_doc *doc, size_t n, size_t align)
{
	assert(align != 0 && (align & (align - 1)) == 0 && align <= alignof(max_align_t));
	sy_arena_chunk *c = doc->chunks;
	if (c != NULL) {
		assert(c->used <= c->cap);
		size_t off = (c->used + align - 1) & ~(align - 1);
		if (off <= c->cap && n <= c->cap - off) {
			c->used = off + n;
			return c->data + off;
		}
	}
	return sy_json_arena_alloc_slow(doc, n);
}

#define ARENA_NEW(doc, type) ((type *)arena_alloc((doc), sizeof(type), alignof(type)))

static inline char *arena_strndup(sy_json_doc *doc, const char *s, size_t n)
{
	if (n == SIZE_MAX)
		return NULL;
	char *d = arena_alloc(doc, n + 1, 1);
	if (d == NULL)
		return NULL;
	if (n > 0)
		memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

/* A zeroed node of type t; NULL on no memory. */
static inline sy_json *new_node(sy_json_doc *doc, sy_json_type t)
{
	sy_json *v = ARENA_NEW(doc, sy_json);
	if (v != NULL) {
		memset(v, 0, sizeof(*v));
		v->type = t;
	}
	return v;
}

#endif
