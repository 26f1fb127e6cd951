/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * schema_scopes.h: membership scopes at publish, for the manifest's members policy.
 *
 * Rules: doc/protocol.md#membership-scopes (paths, triggers and the mirror).
 * Notes: Each path is checked against the catalog. The scope triggers of the membership and
 * hop relations are installed. The mirror (synchro.scope_members, synchro.scope_links) is
 * seeded. synchroctl schema publish calls it, in its transaction. walsync names the scopes
 * and links the same way.
 */
#ifndef SY_STORE_SCHEMA_SCOPES_H
#define SY_STORE_SCHEMA_SCOPES_H

#include "store/store.h"
#include "synchro/manifest.h"

/* "relation(match,user)" of a membership path as the manifest writes it; sy_free(). */
SY_MUST_CHECK char *sy_store_scope_name(const sy_members *ms);
/* "relation.key->column" of a two-hop path's link (hop 1's relation and key, hop 2's
 * column); NULL for one hop or out of memory; sy_free(). */
SY_MUST_CHECK char *sy_store_link_name(const sy_members *ms);

/*
 * t's membership path against the catalog (t's relation is oid): every relation exists and
 * is a table, every column exists, each hop's column has its key's type, each key is its
 * relation's primary key or a column under a one-column unique index, match has the scope
 * key's type, user is a text; no relation is reached twice. SY_STORE_INVALID with a message
 * naming the part ("table \"todo\": policy.members.hops[0].relation: ..."). Nothing to check
 * when t has no path.
 */
SY_MUST_CHECK sy_store_status sy_store_scopes_check(PGconn *c, const sy_table *t, const char *oid,
                                                    sy_error *err);

/*
 * After the fences: locks every membership and hop relation of m IN SHARE MODE, installs
 * their synchro_scope triggers (one per relation, its scopes and links as arguments), drops
 * those of relations m no longer names, and seeds the mirror of every scope and link the
 * relation's trigger did not mirror before.
 */
SY_MUST_CHECK sy_store_status sy_store_scopes_install(PGconn *c, const sy_manifest *m,
                                                      sy_store_note_fn note, void *arg,
                                                      sy_error *err);

/*
 * After a stream break (in its transaction, which holds the writer lease): the mirror of every
 * scope and link of m seeded again from the live relations. The break's gap may hold
 * membership and link changes whose messages walsync never decoded. A path broken since
 * the publish (a relation or column gone) keeps its mirror.
 */
SY_MUST_CHECK sy_store_status sy_store_scopes_reseed(PGconn *c, const sy_manifest *m,
                                                     sy_error *err);

#endif
