/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * walsync_fences.h: the fence transitions of the transaction being decoded, and the rows
 * of synchro.scope_changes. Every version-fence message of that transaction is checked
 * against the transitions.
 *
 * Rules: doc/operations.md#forged-messages (only a message naming a transition its own
 * transaction made is Synchro's; only the scope trigger writes synchro.scope_changes).
 * Notes: The transitions are rows of synchro.row_fences, which pgoutput streams since
 * migration 15. The scope changes are rows of synchro.scope_changes (migration 23). The
 * table is pure: no I/O.
 */
#ifndef SY_WALSYNC_FENCES_H
#define SY_WALSYNC_FENCES_H

#include <stddef.h>

#include "synchro/common.h"
#include "walsync/pgoutput.h"

/* One transition; NULL strings are SQL NULL. */
typedef struct {
	const char *table_id;
	const char *pk;
	const char *version;
	bool deleted;
	const char *mutation_id;
	const char *client_id;
	const char *user_id;
} sy_ws_fence;

typedef struct sy_ws_fences sy_ws_fences;

/* NULL when out of memory. */
SY_MUST_CHECK sy_ws_fences *sy_ws_fences_new(void);
/* Accepts NULL. */
void sy_ws_fences_free(sy_ws_fences *f);
/* Forgets every transition (a new transaction begins). */
void sy_ws_fences_clear(sy_ws_fences *f);
/* Records one transition (copied); false when out of memory. */
SY_MUST_CHECK bool sy_ws_fences_add(sy_ws_fences *f, const sy_ws_fence *t);
size_t sy_ws_fences_count(const sy_ws_fences *f);

/* Whether the transaction made the transition the message names (same table_id, pk,
 * version, state, mutation, client and user); a match is consumed, so one transition
 * vouches for one message. */
bool sy_ws_fences_take(sy_ws_fences *f, const sy_ws_change *c);

/* The columns of synchro.row_fences a transition needs, found by name in a RELATION. */
typedef struct {
	int table_id, pk, state, version, mutation_id, client_id, user_id; /* -1: missing */
} sy_ws_fence_cols;

/* Whether rel is synchro.row_fences with every needed column (their indexes into *cols). */
bool sy_ws_fence_relation(const sy_ws_relation *rel, sy_ws_fence_cols *cols);

/*
 * The transition of a row of synchro.row_fences, its strings copied NUL-terminated into buf
 * (size bytes; the row message's length + 8 always suffices). false when a needed column is
 * missing, not text, holds U+0000, or the state is neither live nor deleted.
 */
SY_MUST_CHECK bool sy_ws_fence_from_row(const sy_ws_row *row, const sy_ws_fence_cols *cols,
                                        char *buf, size_t size, sy_ws_fence *out);

/* The columns of synchro.scope_changes, found by name in a RELATION. */
typedef struct {
	int kind, scope, key_before, value_before, key_after, value_after; /* -1: missing */
} sy_ws_scope_cols;

/* Whether rel is synchro.scope_changes with every column (their indexes into *cols). */
bool sy_ws_scope_relation(const sy_ws_relation *rel, sy_ws_scope_cols *cols);

/*
 * The membership or link change a row of synchro.scope_changes holds, as
 * sy_ws_synchro_parse() reads the same change from a scope trigger's message (the same sides
 * left absent), its strings copied NUL-terminated into buf (size bytes; the row message's
 * length + 8 always suffices). false when a column is missing, not text, holds U+0000, the
 * kind is neither member nor link, the scope is empty, or a link has no key.
 */
SY_MUST_CHECK bool sy_ws_scope_from_row(const sy_ws_row *row, const sy_ws_scope_cols *cols,
                                        char *buf, size_t size, sy_ws_synchro_kind *kind,
                                        sy_ws_scope_msg *out);

#endif
