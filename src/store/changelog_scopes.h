/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * changelog_scopes.h: what a changelog write of walsync adds for membership scopes. It is
 * private to src/store.
 *
 * Notes: changelog.c calls it in the write's transaction. It writes the mirror rows the
 * batch changed and the entries of its scope changes. The writer lease fences each
 * statement.
 */
#ifndef SY_STORE_CHANGELOG_SCOPES_H
#define SY_STORE_CHANGELOG_SCOPES_H

#include <stdbool.h>

#include "store/changelog.h"

typedef struct sy_store_scope_ops sy_store_scope_ops;

/* NULL when out of memory. */
sy_store_scope_ops *sy_store_scope_ops_new(void);
/* Accepts NULL. */
void sy_store_scope_ops_free(sy_store_scope_ops *o);
/* Empties o, keeping its storage; false when out of memory (o is then unusable). */
SY_MUST_CHECK bool sy_store_scope_ops_clear(sy_store_scope_ops *o);
SY_MUST_CHECK bool sy_store_scope_ops_member(sy_store_scope_ops *o, const char *scope,
                                             const char *key, const char *const *users, size_t n);
SY_MUST_CHECK bool sy_store_scope_ops_link(sy_store_scope_ops *o, const char *link, const char *key,
                                           const char *target);
SY_MUST_CHECK bool sy_store_scope_ops_rows(sy_store_scope_ops *o, const sy_store_scope_rows *x);
/* Mirror rows and scope changes held. */
size_t sy_store_scope_ops_count(const sy_store_scope_ops *o);

/* The mirror's rows; *fenced when the lease refused them. */
SY_MUST_CHECK sy_store_status sy_store_scope_ops_write_mirror(PGconn *c, const sy_store_lease *l,
                                                              sy_store_scope_ops *o, bool *fenced,
                                                              sy_error *err);
/* The entries of the scope changes, in order; *inserted counts them. */
SY_MUST_CHECK sy_store_status sy_store_scope_ops_write_rows(PGconn *c, const sy_store_lease *l,
                                                            sy_store_scope_ops *o,
                                                            sy_store_tick_fn tick, void *tick_arg,
                                                            bool *fenced, long long *inserted,
                                                            sy_error *err);

#endif
