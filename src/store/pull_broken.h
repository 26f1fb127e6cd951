/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pull_broken.h: the tables of the current manifest whose mapping no longer matches their
 * relation.
 *
 * Rules: doc/operations.md#ddl-between-publishes (what breaks a table between publishes).
 * Notes: A column was dropped or renamed, or the relation is gone, between two publishes.
 * A probe per table finds them. So one broken table does not take every pull down.
 */
#ifndef SY_STORE_PULL_BROKEN_H
#define SY_STORE_PULL_BROKEN_H

#include "store/store.h"

/* How long a table found broken stays so before it is probed again. */
#define SY_STORE_PROBE_INTERVAL_MS 5000

/*
 * Runs sql (a probe that reads every mapped column of one table and no row). *broken true
 * when the database refused it for what the statement names (sy_sqlstate_is_mapping:
 * e.g. an undefined column or relation, or a cast that no longer applies); SY_STORE_OK then too.
 * Any other failure is returned as such (a lost connection: SY_STORE_CONNECTION).
 */
SY_MUST_CHECK sy_store_status sy_store_probe(PGconn *c, const char *sql, bool *broken,
                                             sy_error *err);

#endif
