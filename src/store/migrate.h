/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * migrate.h: the roles and numbered migrations of schema synchro (synchroctl init and
 * migrate).
 */
#ifndef SY_STORE_MIGRATE_H
#define SY_STORE_MIGRATE_H

#include "store/migrations.h"
#include "store/store.h"

/* The NOLOGIN group roles of the database contract, in creation order. */
extern const char *const sy_store_roles[];
extern const size_t sy_store_role_count;

/*
 * Creates each role of sy_store_roles that does not exist yet (NOLOGIN), in one
 * transaction; note (may be NULL) receives "created role NAME" per new role.
 * Needs CREATEROLE (or a superuser).
 */
SY_MUST_CHECK sy_store_status sy_store_create_roles(PGconn *c, sy_store_note_fn note, void *arg,
                                                    sy_error *err);

/*
 * Applies, in order, every migration of list[0..count) whose version is not recorded in
 * synchro.migrations, each in its own transaction together with its record, under an
 * advisory lock so concurrent runners apply each once. note (may be NULL) receives
 * "applied migration N (name)" per migration; *applied (may be NULL) their number.
 * Refuses (SY_STORE_FAILED) a database that records a migration this list does not
 * have, or under another name. When a migration still to apply creates functions of the
 * server module, refuses before applying any unless the caller is a superuser and the server
 * loads the module. Stops at the first failure (earlier ones stay applied).
 */
SY_MUST_CHECK sy_store_status sy_store_migrate_list(PGconn *c, const sy_sql_migration *list,
                                                    size_t count, sy_store_note_fn note, void *arg,
                                                    size_t *applied, sy_error *err);
/* sy_store_migrate_list() with the embedded migrations (sy_sql_migrations). */
SY_MUST_CHECK sy_store_status sy_store_migrate(PGconn *c, sy_store_note_fn note, void *arg,
                                               size_t *applied, sy_error *err);

/*
 * What sy_store_migrate() checks before it applies anything (the database's record against
 * the embedded list, and the server module where a pending migration needs it), for a caller
 * that changes something first (synchroctl init creates the roles): fails as it would.
 */
SY_MUST_CHECK sy_store_status sy_store_migrate_preflight(PGconn *c, sy_error *err);

/*
 * The highest recorded migration version in *version (0 when schema synchro or its
 * migrations table does not exist), and in *pending (may be NULL) how many embedded
 * migrations are not applied yet; programs check this at start-up.
 */
SY_MUST_CHECK sy_store_status sy_store_migration_state(PGconn *c, int *version, size_t *pending,
                                                       sy_error *err);

#endif
