/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * walsync_fences.c: the transaction's fence transitions, and the rows of
 * synchro.scope_changes read as membership and link changes.
 *
 * Layer: base of src/walsync (doc/hacking.md).
 * Notes: The transitions sit in an open-addressing table keyed by version. Versions are
 * random, so the hash spreads. Each entry is one allocation that holds its strings.
 */
#include "config.h"

#include <string.h>

#include "synchro/alloc.h"
#include "walsync/walsync_fences.h"

typedef struct {
	sy_ws_fence t;
	bool used; /* false: consumed by a message (a tombstone keeps probing chains intact) */
} entry;

struct sy_ws_fences {
	entry **slots;
	size_t cap;   /* a power of two */
	size_t count; /* entries in slots, consumed ones included */
	size_t live;
};

sy_ws_fences *sy_ws_fences_new(void)
{
	sy_ws_fences *f = sy_calloc(1, sizeof *f);
	if (!f)
		return NULL;
	f->cap = 64;
	f->slots = sy_calloc(f->cap, sizeof *f->slots);
	if (!f->slots) {
		sy_free(f);
		return NULL;
	}
	return f;
}

void sy_ws_fences_clear(sy_ws_fences *f)
{
	if (f->count > 0)
		for (size_t i = 0; i < f->cap; i++) {
			sy_free(f->slots[i]);
			f->slots[i] = NULL;
		}
	f->count = 0;
	f->live = 0;
	/* After a large transaction, small ones do not pay for clearing its table. */
	if (f->cap > 4096) {
		entry **n = sy_calloc(64, sizeof *n);
		if (n) {
			sy_free(f->slots);
			f->slots = n;
			f->cap = 64;
		}
	}
}

void sy_ws_fences_free(sy_ws_fences *f)
{
	if (!f)
		return;
	sy_ws_fences_clear(f);
	sy_free(f->slots);
	sy_free(f);
}

size_t sy_ws_fences_count(const sy_ws_fences *f)
{
	return f->live;
}

static size_t hash(const char *s)
{
	size_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static void place(entry **slots, size_t cap, entry *e)
{
	size_t i = hash(e->t.version) & (cap - 1);
	while (slots[i])
		i = (i + 1) & (cap - 1);
	slots[i] = e;
}

static bool grow(sy_ws_fences *f)
{
	size_t ncap = f->cap * 2;
	entry **n = sy_calloc(ncap, sizeof *n);
	if (!n)
		return false;
	size_t kept = 0;
	for (size_t i = 0; i < f->cap; i++) {
		entry *e = f->slots[i];
		if (!e)
			continue;
		if (e->used) {
			place(n, ncap, e);
			kept++;
		} else {
			sy_free(e);
		}
	}
	sy_free(f->slots);
	f->slots = n;
	f->cap = ncap;
	f->count = kept;
	return true;
}

static size_t len_of(const char *s)
{
	return s ? strlen(s) + 1 : 0;
}

static const char *copy(char **pos, const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	memcpy(*pos, s, n);
	const char *out = *pos;
	*pos += n;
	return out;
}

bool sy_ws_fences_add(sy_ws_fences *f, const sy_ws_fence *t)
{
	if ((f->count + 1) * 4 > f->cap * 3 && !grow(f))
		return false;
	size_t n = len_of(t->table_id) + len_of(t->pk) + len_of(t->version) +
	           len_of(t->mutation_id) + len_of(t->client_id) + len_of(t->user_id);
	entry *e = sy_malloc(sizeof *e + n);
	if (!e)
		return false;
	char *pos = (char *)(e + 1);
	e->used = true;
	e->t.deleted = t->deleted;
	e->t.table_id = copy(&pos, t->table_id);
	e->t.pk = copy(&pos, t->pk);
	e->t.version = copy(&pos, t->version);
	e->t.mutation_id = copy(&pos, t->mutation_id);
	e->t.client_id = copy(&pos, t->client_id);
	e->t.user_id = copy(&pos, t->user_id);
	place(f->slots, f->cap, e);
	f->count++;
	f->live++;
	return true;
}

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

bool sy_ws_fences_take(sy_ws_fences *f, const sy_ws_change *c)
{
	if (!c->version)
		return false;
	for (size_t i = hash(c->version) & (f->cap - 1); f->slots[i]; i = (i + 1) & (f->cap - 1)) {
		entry *e = f->slots[i];
		if (!e->used || strcmp(e->t.version, c->version) != 0)
			continue;
		if (!same(e->t.table_id, c->table_id) || !same(e->t.pk, c->pk) ||
		    e->t.deleted != c->deleted || !same(e->t.mutation_id, c->mutation_id) ||
		    !same(e->t.client_id, c->client_id) || !same(e->t.user_id, c->user_id))
			continue;
		e->used = false;
		f->live--;
		return true;
	}
	return false;
}

bool sy_ws_fence_relation(const sy_ws_relation *rel, sy_ws_fence_cols *cols)
{
	if (!rel->nspname || !rel->relname || strcmp(rel->nspname, "synchro") != 0 ||
	    strcmp(rel->relname, "row_fences") != 0)
		return false;
	int *slot[] = {&cols->table_id,    &cols->pk,        &cols->state,  &cols->version,
	               &cols->mutation_id, &cols->client_id, &cols->user_id};
	static const char *const names[] = {"table_id",    "pk",        "state",  "version",
	                                    "mutation_id", "client_id", "user_id"};
	for (int k = 0; k < 7; k++) {
		*slot[k] = -1;
		for (int i = 0; i < rel->ncols && i < SY_WS_MAX_COLS; i++)
			if (rel->cols[i] && strcmp(rel->cols[i], names[k]) == 0)
				*slot[k] = i;
		if (*slot[k] < 0)
			return false;
	}
	return true;
}

/* Column i as a string in buf (NULL for 'n'); false when it cannot be one. */
static bool col_text(const sy_ws_row *row, int i, bool nullable, char **pos, char *end,
                     const char **out)
{
	*out = NULL;
	if (i < 0 || i >= row->ncols || i >= SY_WS_MAX_COLS)
		return false;
	const sy_ws_col *c = &row->cols[i];
	if (c->kind == 'n')
		return nullable;
	if (c->kind != 't' || c->len >= (size_t)(end - *pos) || memchr(c->data, '\0', c->len))
		return false;
	memcpy(*pos, c->data, c->len);
	(*pos)[c->len] = '\0';
	*out = *pos;
	*pos += c->len + 1;
	return true;
}

bool sy_ws_fence_from_row(const sy_ws_row *row, const sy_ws_fence_cols *cols, char *buf,
                          size_t size, sy_ws_fence *out)
{
	memset(out, 0, sizeof *out);
	char *pos = buf, *end = buf + size;
	const char *state = NULL;
	if (!col_text(row, cols->table_id, false, &pos, end, &out->table_id) ||
	    !col_text(row, cols->pk, false, &pos, end, &out->pk) ||
	    !col_text(row, cols->version, false, &pos, end, &out->version) ||
	    !col_text(row, cols->state, false, &pos, end, &state) ||
	    !col_text(row, cols->mutation_id, true, &pos, end, &out->mutation_id) ||
	    !col_text(row, cols->client_id, true, &pos, end, &out->client_id) ||
	    !col_text(row, cols->user_id, true, &pos, end, &out->user_id))
		return false;
	if (strcmp(state, "live") != 0 && strcmp(state, "deleted") != 0)
		return false;
	out->deleted = strcmp(state, "deleted") == 0;
	return true;
}

bool sy_ws_scope_relation(const sy_ws_relation *rel, sy_ws_scope_cols *cols)
{
	if (!rel->nspname || !rel->relname || strcmp(rel->nspname, "synchro") != 0 ||
	    strcmp(rel->relname, "scope_changes") != 0)
		return false;
	int *slot[] = {&cols->kind,         &cols->scope,     &cols->key_before,
	               &cols->value_before, &cols->key_after, &cols->value_after};
	static const char *const names[] = {"kind",         "scope",     "key_before",
	                                    "value_before", "key_after", "value_after"};
	for (int k = 0; k < 6; k++) {
		*slot[k] = -1;
		for (int i = 0; i < rel->ncols && i < SY_WS_MAX_COLS; i++)
			if (rel->cols[i] && strcmp(rel->cols[i], names[k]) == 0)
				*slot[k] = i;
		if (*slot[k] < 0)
			return false;
	}
	return true;
}

bool sy_ws_scope_from_row(const sy_ws_row *row, const sy_ws_scope_cols *cols, char *buf,
                          size_t size, sy_ws_synchro_kind *kind, sy_ws_scope_msg *out)
{
	memset(out, 0, sizeof *out);
	char *pos = buf, *end = buf + size;
	const char *k = NULL;
	if (row->tag != 'I' || !col_text(row, cols->kind, false, &pos, end, &k) ||
	    !col_text(row, cols->scope, false, &pos, end, &out->scope) || !out->scope[0] ||
	    !col_text(row, cols->key_before, true, &pos, end, &out->key_before) ||
	    !col_text(row, cols->value_before, true, &pos, end, &out->value_before) ||
	    !col_text(row, cols->key_after, true, &pos, end, &out->key_after) ||
	    !col_text(row, cols->value_after, true, &pos, end, &out->value_after))
		return false;
	bool member = strcmp(k, "member") == 0;
	if (!member && strcmp(k, "link") != 0)
		return false;
	*kind = member ? SY_WS_SYNCHRO_MEMBER : SY_WS_SYNCHRO_LINK;
	sy_ws_scope_msg_trim(out, member); /* as the message's parse */
	return member || out->key_before || out->key_after;
}
