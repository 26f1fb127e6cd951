/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * schema_pull_effect.h: what a schema publish does to pull.
 *
 * Rules: doc/operations.md#publishes-that-change-what-pull-delivers (the effect).
 * Notes: A publish that changes what some table delivers expires every cursor. So every
 * client rebuilds under the new schema. synchroctl schema publish calls it, in its
 * transaction.
 */
#ifndef SY_STORE_SCHEMA_PULL_EFFECT_H
#define SY_STORE_SCHEMA_PULL_EFFECT_H

#include "store/store.h"
#include "synchro/manifest.h"

/*
 * Why the new manifest m changes what pull delivers compared with the latest published one
 * (NULL: the first publish), into why (one line naming the table and the change): a table's
 * relation, key, fields (id, column or type; order aside), delete mode or column, read
 * scope, owner field or membership path differs, or a table some earlier version had (it
 * was removed) comes back. A table new to the history, or one removed, changes nothing a
 * rebuild would not agree with. false when nothing changes; ever_synced(table_id) says
 * whether a table was in some version.
 */
bool sy_store_schema_pull_change(const sy_manifest *prev, const sy_manifest *m,
                                 bool (*ever_synced)(void *arg, const char *table_id), void *arg,
                                 char *why, size_t size);

/*
 * In the caller's transaction: moves the compaction horizon one ordinal past the last
 * position any cursor or rebuild session can hold and deletes the rebuild sessions bound
 * below it, so every pull of an older cursor answers 409 cursor_expired and its client
 * rebuilds. Needs the owner's privileges. *horizon receives the new horizon as "LSN.ordinal".
 */
SY_MUST_CHECK sy_store_status sy_store_expire_cursors(PGconn *c, char horizon[40], sy_error *err);

/*
 * The publish step (caller's transaction, before the new version is recorded): compares m
 * with the latest version (prev_version, 0 when none) and, when pull would deliver something
 * else, expires every cursor. *expired tells whether it did; why and horizon then say why
 * and where (for synchroctl's output).
 */
SY_MUST_CHECK sy_store_status sy_store_schema_pull_effect(PGconn *c, const sy_manifest *m,
                                                          long long prev_version, bool *expired,
                                                          char *why, size_t size, char horizon[40],
                                                          sy_error *err);

#endif
