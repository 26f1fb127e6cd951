/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * json_arena.c: the document arena of json_arena.h, and the document calls of json.h (new,
 * free, root, alloc).
 *
 * Layer: base of src/core (doc/hacking.md).
 * Notes: Chunks double in size up to 1 MiB. A big request gets a chunk of its own. One free
 * releases every value of the document.
 */
#include "config.h"

#include <assert.h>
#include <stdalign.h>
#include <stddef.h>

#include "synchro/alloc.h"
#include "synchro/json.h"

#include "json_arena.h"

static sy_arena_chunk *arena_new_chunk(size_t cap)
{
	if (cap > SIZE_MAX - sizeof(sy_arena_chunk))
		return NULL;
	sy_arena_chunk *c = sy_malloc(sizeof(sy_arena_chunk) + cap);
	if (c == NULL)
		return NULL;
	c->next = NULL;
	c->used = 0;
	c->cap = cap;
	return c;
}

/*
 * A request bigger than a quarter of a regular chunk gets a chunk of its own,
 * linked behind the head so the head keeps filling.
 */
void *sy_json_arena_alloc_slow(sy_json_doc *doc, size_t n)
{
	sy_arena_chunk *c = doc->chunks;
	if (n > doc->next_cap / 4) {
		sy_arena_chunk *big = arena_new_chunk(n);
		if (big == NULL)
			return NULL;
		big->used = n;
		if (c != NULL) {
			big->next = c->next;
			c->next = big;
		} else {
			doc->chunks = big;
		}
		return big->data;
	}
	sy_arena_chunk *fresh = arena_new_chunk(doc->next_cap);
	if (fresh == NULL)
		return NULL;
	assert(n <= fresh->cap); /* n is at most a quarter of it */
	if (doc->next_cap < ARENA_MAX_CHUNK)
		doc->next_cap *= 2;
	fresh->next = c;
	doc->chunks = fresh;
	fresh->used = n;
	return fresh->data;
}

sy_json_doc *sy_json_doc_create(size_t first_chunk)
{
	sy_json_doc *doc = sy_malloc(sizeof(*doc));
	if (doc == NULL)
		return NULL;
	doc->chunks = NULL;
	doc->next_cap = first_chunk;
	doc->root = NULL;
	return doc;
}

sy_json_doc *sy_json_doc_new(void)
{
	return sy_json_doc_create(ARENA_FIRST_CHUNK);
}

void sy_json_doc_free(sy_json_doc *doc)
{
	if (doc == NULL)
		return;
	sy_arena_chunk *c = doc->chunks;
	while (c != NULL) {
		sy_arena_chunk *next = c->next;
		sy_free(c);
		c = next;
	}
	sy_free(doc);
}

const sy_json *sy_json_doc_root(const sy_json_doc *doc)
{
	return doc != NULL ? doc->root : NULL;
}

void sy_json_doc_set_root(sy_json_doc *doc, sy_json *root)
{
	if (doc != NULL)
		doc->root = root;
}

void *sy_json_doc_alloc(sy_json_doc *doc, size_t n)
{
	if (doc == NULL)
		return NULL;
	return arena_alloc(doc, n, alignof(max_align_t));
}
