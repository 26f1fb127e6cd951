/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * walsync_scopes.c: the scope mirror in memory (walsync_scopes.h).
 *
 * Layer: base of src/walsync (doc/hacking.md).
 * Notes: The mirror is one open-addressing hash table of nodes. A node is keyed by kind and
 * two strings: a table, a scope key's users, a link's target, or the keys of each target.
 * So a change's readers cost two or three lookups, whatever the number of memberships.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "synchro/alloc.h"
#include "walsync/walsync_scopes.h"

enum { KIND_TABLE = 'T', KIND_MEMBERS = 'M', KIND_LINK = 'L', KIND_TARGET = 'R' };

typedef struct node {
	char *key; /* kind, a, '\0', b, '\0' */
	size_t klen;
	uint64_t hash;
	const char *a, *b; /* into key */
	bool dirty;
	/* KIND_MEMBERS: the users; KIND_TARGET: the keys whose link target is b; sorted by
	 * bytes */
	char **users;
	size_t n, cap;
	/* KIND_LINK: the target, or NULL; KIND_TABLE: the scope and the link (or NULL) */
	char *target;
	char *scope;
	char *link;
} node;

struct sy_ws_scopes {
	node **slots;
	size_t nslots; /* a power of two */
	size_t used;
	size_t tables, members, links; /* members: (scope, key, user) rows; links: targets */
	node **dirty;
	size_t ndirty, dirty_cap;
};

static uint64_t hash_bytes(const char *p, size_t n)
{
	uint64_t h = UINT64_C(14695981039346656037);
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= UINT64_C(1099511628211);
	}
	return h;
}

/* The key of (kind, a, b) into buf when it fits, else into a new allocation (*heap). */
static char *make_key(char kind, const char *a, const char *b, char *buf, size_t size, size_t *len,
                      bool *heap)
{
	size_t la = strlen(a), lb = strlen(b);
	*len = 1 + la + 1 + lb + 1;
	*heap = *len > size;
	char *k = *heap ? sy_malloc(*len) : buf;
	if (!k)
		return NULL;
	k[0] = kind;
	memcpy(k + 1, a, la + 1);
	memcpy(k + 2 + la, b, lb + 1);
	return k;
}

static node **find_slot(const sy_ws_scopes *s, const char *key, size_t klen, uint64_t h)
{
	size_t mask = s->nslots - 1;
	for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
		node *x = s->slots[i];
		if (!x || (x->hash == h && x->klen == klen && memcmp(x->key, key, klen) == 0))
			return &s->slots[i];
	}
}

static node *lookup(const sy_ws_scopes *s, char kind, const char *a, const char *b)
{
	if (!s->nslots || !a || !b)
		return NULL;
	char buf[256];
	size_t len;
	bool heap;
	char *k = make_key(kind, a, b, buf, sizeof buf, &len, &heap);
	if (!k)
		return NULL;
	node *x = *find_slot(s, k, len, hash_bytes(k, len));
	if (heap)
		sy_free(k);
	return x;
}

static bool grow(sy_ws_scopes *s)
{
	size_t n = s->nslots ? s->nslots * 2 : 64;
	node **slots = sy_calloc(n, sizeof *slots);
	if (!slots)
		return false;
	node **old = s->slots;
	size_t oldn = s->nslots;
	s->slots = slots;
	s->nslots = n;
	for (size_t i = 0; i < oldn; i++)
		if (old[i])
			*find_slot(s, old[i]->key, old[i]->klen, old[i]->hash) = old[i];
	sy_free(old);
	return true;
}

/* The node of (kind, a, b), created when missing; NULL when out of memory. */
static node *intern(sy_ws_scopes *s, char kind, const char *a, const char *b)
{
	if ((s->used + 1) * 2 > s->nslots && !grow(s))
		return NULL;
	size_t len;
	bool heap;
	char *k = make_key(kind, a, b, NULL, 0, &len, &heap);
	if (!k)
		return NULL;
	uint64_t h = hash_bytes(k, len);
	node **slot = find_slot(s, k, len, h);
	if (*slot) {
		sy_free(k);
		return *slot;
	}
	node *x = sy_calloc(1, sizeof *x);
	if (!x) {
		sy_free(k);
		return NULL;
	}
	x->key = k;
	x->klen = len;
	x->hash = h;
	x->a = k + 1;
	x->b = k + 2 + strlen(k + 1);
	*slot = x;
	s->used++;
	return x;
}

static void node_free(node *x)
{
	for (size_t i = 0; i < x->n; i++)
		sy_free(x->users[i]);
	sy_free(x->users);
	sy_free(x->target);
	sy_free(x->scope);
	sy_free(x->link);
	sy_free(x->key);
	sy_free(x);
}

sy_ws_scopes *sy_ws_scopes_new(void)
{
	sy_ws_scopes *s = sy_calloc(1, sizeof *s);
	if (s && !grow(s)) {
		sy_free(s);
		return NULL;
	}
	return s;
}

/* Drops every node of kinds for which keep() is false, rehashing the others. */
static void drop_kinds(sy_ws_scopes *s, bool tables)
{
	node **keep = NULL;
	size_t nkeep = 0;
	for (size_t i = 0; i < s->nslots; i++) {
		node *x = s->slots[i];
		if (!x)
			continue;
		s->slots[i] = NULL;
		bool is_table = x->key[0] == KIND_TABLE;
		if (is_table == tables) {
			node_free(x);
			continue;
		}
		/* Kept nodes go back below, into the slots just emptied: reuse slots[] itself
		 * as the list (nkeep <= i). */
		s->slots[nkeep++] = x;
	}
	keep = s->slots;
	for (size_t i = 0; i < nkeep; i++) {
		node *x = keep[i];
		keep[i] = NULL;
		*find_slot(s, x->key, x->klen, x->hash) = x;
	}
	s->used = nkeep;
	if (tables)
		s->tables = 0;
	else {
		s->members = s->links = 0;
		s->ndirty = 0;
	}
}

void sy_ws_scopes_free(sy_ws_scopes *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nslots; i++)
		if (s->slots[i])
			node_free(s->slots[i]);
	sy_free(s->slots);
	sy_free(s->dirty);
	sy_free(s);
}

void sy_ws_scopes_forget_mirror(sy_ws_scopes *s)
{
	drop_kinds(s, false);
}

void sy_ws_scopes_forget_tables(sy_ws_scopes *s)
{
	drop_kinds(s, true);
}

bool sy_ws_scopes_table(sy_ws_scopes *s, const char *table_id, const char *scope, const char *link)
{
	node *x = intern(s, KIND_TABLE, table_id, "");
	if (!x)
		return false;
	char *sc = sy_strndup(scope, strlen(scope));
	char *li = link ? sy_strndup(link, strlen(link)) : NULL;
	if (!sc || (link && !li)) {
		sy_free(sc);
		sy_free(li);
		return false;
	}
	if (!x->scope)
		s->tables++;
	sy_free(x->scope);
	sy_free(x->link);
	x->scope = sc;
	x->link = li;
	return true;
}

size_t sy_ws_scopes_table_count(const sy_ws_scopes *s)
{
	return s->tables;
}

bool sy_ws_scopes_table_plain(sy_ws_scopes *s, const char *table_id)
{
	return intern(s, KIND_TABLE, table_id, "") != NULL;
}

bool sy_ws_scopes_table_known(const sy_ws_scopes *s, const char *table_id)
{
	return lookup(s, KIND_TABLE, table_id, "") != NULL;
}

bool sy_ws_scopes_table_get(const sy_ws_scopes *s, const char *table_id, const char **scope,
                            const char **link)
{
	node *x = lookup(s, KIND_TABLE, table_id, "");
	*scope = x ? x->scope : NULL;
	*link = x ? x->link : NULL;
	return x && x->scope;
}

static bool mark_dirty(sy_ws_scopes *s, node *x)
{
	if (x->dirty)
		return true;
	if (s->ndirty == s->dirty_cap) {
		size_t cap = s->dirty_cap ? s->dirty_cap * 2 : 64;
		node **d = sy_realloc(s->dirty, cap * sizeof *d);
		if (!d)
			return false;
		s->dirty = d;
		s->dirty_cap = cap;
	}
	s->dirty[s->ndirty++] = x;
	x->dirty = true;
	return true;
}

/* Where user is (or goes) in x's sorted users; *found when it is there. */
static size_t user_pos(const node *x, const char *user, bool *found)
{
	size_t lo = 0, hi = x->n;
	*found = false;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(x->users[mid], user);
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool set_add(sy_ws_scopes *s, char kind, const char *scope, const char *key,
                    const char *user, bool dirty, bool *changed)
{
	*changed = false;
	node *x = intern(s, kind, scope, key);
	if (!x)
		return false;
	bool found;
	size_t at = user_pos(x, user, &found);
	if (found)
		return true;
	if (dirty && !mark_dirty(s, x))
		return false;
	if (x->n == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 2;
		char **u = sy_realloc(x->users, cap * sizeof *u);
		if (!u)
			return false;
		x->users = u;
		x->cap = cap;
	}
	char *copy = sy_strndup(user, strlen(user));
	if (!copy)
		return false;
	memmove(x->users + at + 1, x->users + at, (x->n - at) * sizeof *x->users);
	x->users[at] = copy;
	x->n++;
	*changed = true;
	return true;
}

static bool set_remove(sy_ws_scopes *s, char kind, const char *scope, const char *key,
                       const char *user, bool dirty, bool *changed)
{
	*changed = false;
	node *x = lookup(s, kind, scope, key);
	if (!x)
		return true;
	bool found;
	size_t at = user_pos(x, user, &found);
	if (!found)
		return true;
	if (dirty && !mark_dirty(s, x))
		return false;
	sy_free(x->users[at]);
	memmove(x->users + at, x->users + at + 1, (x->n - at - 1) * sizeof *x->users);
	x->n--;
	*changed = true;
	return true;
}

static bool member_add(sy_ws_scopes *s, const char *scope, const char *key, const char *user,
                       bool dirty, bool *changed)
{
	if (!set_add(s, KIND_MEMBERS, scope, key, user, dirty, changed))
		return false;
	s->members += *changed;
	return true;
}

bool sy_ws_scopes_load_member(sy_ws_scopes *s, const char *scope, const char *key, const char *user)
{
	bool changed;
	return member_add(s, scope, key, user, false, &changed);
}

static bool link_set(sy_ws_scopes *s, const char *link, const char *key, const char *target,
                     bool dirty, bool *changed)
{
	*changed = false;
	node *x = target ? intern(s, KIND_LINK, link, key) : lookup(s, KIND_LINK, link, key);
	if (!x)
		return target == NULL;
	if ((!x->target && !target) || (x->target && target && strcmp(x->target, target) == 0))
		return true;
	char *copy = NULL;
	if (target && !(copy = sy_strndup(target, strlen(target))))
		return false;
	/* The reverse index first: a failure leaves the link as it was. */
	bool rev;
	if ((target && !set_add(s, KIND_TARGET, link, target, key, false, &rev)) ||
	    (dirty && !mark_dirty(s, x))) {
		if (target)
			(void)set_remove(s, KIND_TARGET, link, target, key, false, &rev);
		sy_free(copy);
		return false;
	}
	if (x->target)
		(void)set_remove(s, KIND_TARGET, link, x->target, key, false, &rev);
	s->links += (size_t)(copy != NULL) - (size_t)(x->target != NULL);
	sy_free(x->target);
	x->target = copy;
	*changed = true;
	return true;
}

bool sy_ws_scopes_load_link(sy_ws_scopes *s, const char *link, const char *key, const char *target)
{
	bool changed;
	return link_set(s, link, key, target, false, &changed);
}

size_t sy_ws_scopes_member_count(const sy_ws_scopes *s)
{
	return s->members;
}

size_t sy_ws_scopes_link_count(const sy_ws_scopes *s)
{
	return s->links;
}

const char *const *sy_ws_scopes_users(const sy_ws_scopes *s, const char *scope, const char *key,
                                      size_t *n)
{
	node *x = lookup(s, KIND_MEMBERS, scope, key);
	*n = x ? x->n : 0;
	return x ? (const char *const *)x->users : NULL;
}

const char *sy_ws_scopes_link(const sy_ws_scopes *s, const char *link, const char *key)
{
	node *x = lookup(s, KIND_LINK, link, key);
	return x ? x->target : NULL;
}

const char *const *sy_ws_scopes_link_keys(const sy_ws_scopes *s, const char *link,
                                          const char *target, size_t *n)
{
	node *x = lookup(s, KIND_TARGET, link, target);
	*n = x ? x->n : 0;
	return x ? (const char *const *)x->users : NULL;
}

const char *sy_ws_scopes_key(const sy_ws_scopes *s, const char *link, const char *value)
{
	if (!value || !link)
		return value;
	return sy_ws_scopes_link(s, link, value);
}

void sy_ws_scopes_literal(const sy_ws_scopes *s, const char *scope, const char *key, sy_buf *out)
{
	size_t n = 0;
	const char *const *u = key ? sy_ws_scopes_users(s, scope, key, &n) : NULL;
	sy_ws_scopes_set_literal(u, n, out);
}

void sy_ws_scopes_set_literal(const char *const *u, size_t n, sy_buf *out)
{
	sy_buf_putc(out, '{');
	for (size_t i = 0; i < n; i++) {
		if (i)
			sy_buf_putc(out, ',');
		sy_buf_putc(out, '"');
		for (const char *p = u[i]; *p;) {
			size_t run = strcspn(p, "\\\"");
			sy_buf_append(out, p, run);
			p += run;
			if (*p) {
				sy_buf_putc(out, '\\');
				sy_buf_putc(out, *p++);
			}
		}
		sy_buf_putc(out, '"');
	}
	sy_buf_putc(out, '}');
}

bool sy_ws_scopes_member_add(sy_ws_scopes *s, const char *scope, const char *key, const char *user,
                             bool *changed)
{
	return member_add(s, scope, key, user, true, changed);
}

bool sy_ws_scopes_member_remove(sy_ws_scopes *s, const char *scope, const char *key,
                                const char *user, bool *changed)
{
	if (!set_remove(s, KIND_MEMBERS, scope, key, user, true, changed))
		return false;
	s->members -= *changed;
	return true;
}

bool sy_ws_scopes_link_set(sy_ws_scopes *s, const char *link, const char *key, const char *target,
                           bool *changed)
{
	return link_set(s, link, key, target, true, changed);
}

size_t sy_ws_scopes_dirty_count(const sy_ws_scopes *s)
{
	return s->ndirty;
}

void sy_ws_scopes_dirty_each(const sy_ws_scopes *s, sy_ws_scopes_member_fn member,
                             sy_ws_scopes_link_fn link, void *arg)
{
	for (size_t i = 0; i < s->ndirty; i++) {
		const node *x = s->dirty[i];
		if (x->key[0] == KIND_MEMBERS)
			member(arg, x->a, x->b, (const char *const *)x->users, x->n);
		else
			link(arg, x->a, x->b, x->target);
	}
}

void sy_ws_scopes_dirty_clear(sy_ws_scopes *s)
{
	for (size_t i = 0; i < s->ndirty; i++)
		s->dirty[i]->dirty = false;
	s->ndirty = 0;
}
