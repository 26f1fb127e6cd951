/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * walsync_scopes.h: the scope mirror in memory: who reads what, as walsync has
 * materialized it in commit order (synchro.scope_members, synchro.scope_links).
 *
 * Rules: doc/contract.md#read-scope (who reads a row).
 * Notes: The members-scoped tables of the published manifest name their scope
 * ("relation(match,user)"). With two hops, they also name their link
 * ("relation.key->column"). A row's readers are the users of its scope key. That key is
 * hop 1's value itself or, with two hops, the link's target of it. What changed since the
 * last write is kept as dirty entries, for the changelog transaction that writes them. The
 * mirror is pure: no I/O.
 */
#ifndef SY_WALSYNC_WALSYNC_SCOPES_H
#define SY_WALSYNC_WALSYNC_SCOPES_H

#include <stdbool.h>
#include <stddef.h>

#include "synchro/buf.h"
#include "synchro/common.h"

typedef struct sy_ws_scopes sy_ws_scopes;

/* NULL when out of memory. */
sy_ws_scopes *sy_ws_scopes_new(void);
/* Accepts NULL. */
void sy_ws_scopes_free(sy_ws_scopes *s);
/* Forgets the mirror and its dirty entries (a new stream loads it again), keeping the
 * tables. */
void sy_ws_scopes_forget_mirror(sy_ws_scopes *s);
/* Forgets the tables (a new manifest names them again). */
void sy_ws_scopes_forget_tables(sy_ws_scopes *s);

/* A members-scoped table, borrowed by the caller's strings it copies: its scope and its link
 * (NULL with one hop). false when out of memory. */
SY_MUST_CHECK bool sy_ws_scopes_table(sy_ws_scopes *s, const char *table_id, const char *scope,
                                      const char *link);
size_t sy_ws_scopes_table_count(const sy_ws_scopes *s);
/* Remembers that table_id is not members-scoped (until the tables are forgotten); false when
 * out of memory. */
SY_MUST_CHECK bool sy_ws_scopes_table_plain(sy_ws_scopes *s, const char *table_id);
/* Whether table_id was named by sy_ws_scopes_table() or sy_ws_scopes_table_plain(). */
bool sy_ws_scopes_table_known(const sy_ws_scopes *s, const char *table_id);
/* Whether table_id is members-scoped; its scope and link (NULL with one hop). */
bool sy_ws_scopes_table_get(const sy_ws_scopes *s, const char *table_id, const char **scope,
                            const char **link);

/* Loading the mirror from its tables (nothing becomes dirty); false when out of memory. */
SY_MUST_CHECK bool sy_ws_scopes_load_member(sy_ws_scopes *s, const char *scope, const char *key,
                                            const char *user);
SY_MUST_CHECK bool sy_ws_scopes_load_link(sy_ws_scopes *s, const char *link, const char *key,
                                          const char *target);
size_t sy_ws_scopes_member_count(const sy_ws_scopes *s);
size_t sy_ws_scopes_link_count(const sy_ws_scopes *s);

/* The users of scope key key in scope (sorted by bytes; *n 0 when none). Valid until the next
 * change of that key. */
const char *const *sy_ws_scopes_users(const sy_ws_scopes *s, const char *scope, const char *key,
                                      size_t *n);
/* The link's target of key; NULL when none. */
const char *sy_ws_scopes_link(const sy_ws_scopes *s, const char *link, const char *key);
/* The keys whose target in link is target (sorted by bytes; *n 0 when none): the hop 1 values
 * of a two-hop scope key. Valid until the next change of a link to or from it. */
const char *const *sy_ws_scopes_link_keys(const sy_ws_scopes *s, const char *link,
                                          const char *target, size_t *n);
/* The scope key a row of a table with this link reaches from hop 1's value: value itself
 * with one hop (link NULL), the link's target with two; NULL when none. */
const char *sy_ws_scopes_key(const sy_ws_scopes *s, const char *link, const char *value);

/* Appends the users of (scope, key) as a text[] literal ("{}" when none or key is NULL). */
void sy_ws_scopes_literal(const sy_ws_scopes *s, const char *scope, const char *key, sy_buf *out);

/* Appends the n strings of u as a text[] literal. */
void sy_ws_scopes_set_literal(const char *const *u, size_t n, sy_buf *out);

/* A membership comes (add) or goes; *changed tells whether the mirror changed (a row the
 * mirror already had, or did not, changes nothing). false when out of memory. */
SY_MUST_CHECK bool sy_ws_scopes_member_add(sy_ws_scopes *s, const char *scope, const char *key,
                                           const char *user, bool *changed);
SY_MUST_CHECK bool sy_ws_scopes_member_remove(sy_ws_scopes *s, const char *scope, const char *key,
                                              const char *user, bool *changed);
/* key's target becomes target (NULL: none); *changed as above. false when out of memory. */
SY_MUST_CHECK bool sy_ws_scopes_link_set(sy_ws_scopes *s, const char *link, const char *key,
                                         const char *target, bool *changed);

/* The dirty entries: each (scope, key) whose users changed, with its users now, and each
 * (link, key) whose target changed, with its target now (NULL: none). */
typedef void (*sy_ws_scopes_member_fn)(void *arg, const char *scope, const char *key,
                                       const char *const *users, size_t n);
typedef void (*sy_ws_scopes_link_fn)(void *arg, const char *link, const char *key,
                                     const char *target);
size_t sy_ws_scopes_dirty_count(const sy_ws_scopes *s);
void sy_ws_scopes_dirty_each(const sy_ws_scopes *s, sy_ws_scopes_member_fn member,
                             sy_ws_scopes_link_fn link, void *arg);
void sy_ws_scopes_dirty_clear(sy_ws_scopes *s);

#endif
