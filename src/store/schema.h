/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * schema.h: schema manifests in the database: catalog validation, publication and stored
 * versions.
 */
#ifndef SY_STORE_SCHEMA_H
#define SY_STORE_SCHEMA_H

#include "store/store.h"
#include "synchro/manifest.h"

/*
 * Checks m against the catalog, inside the caller's transaction (or alone). Every table:
 * - relation exists and is an ordinary or partitioned table, and no two tables map it;
 * - the pk column is the relation's whole primary key (one column);
 * - every column exists, and its type is the one of doc/contract.md#portable-types for the declared
 * type
 *   (text: text or varchar; int32: integer; int64: bigint; float64: double precision;
 *   numeric: numeric; bool: boolean; timestamp: timestamptz; date: date; uuid: uuid;
 *   bytes: bytea; json: jsonb), from pg_catalog (a domain or an array is refused);
 * - nullability agrees both ways: nullable:false needs NOT NULL, and nullable:true refuses
 *   a NOT NULL column (the server could not store the null it accepted);
 * - the soft-delete column exists, is timestamptz and allows NULL (NULL means live);
 * - no column the server writes (pk, writable fields, owner, soft-delete) is a generated
 *   column or GENERATED ALWAYS AS IDENTITY.
 * SY_STORE_INVALID with one line naming the table, field and column on the first problem.
 * note (may be NULL) receives warnings that do not block (e.g. a NOT NULL column without
 * default that the manifest does not map: inserts through synchro will fail).
 */
SY_MUST_CHECK sy_store_status sy_store_schema_check(PGconn *c, const sy_manifest *m,
                                                    sy_store_note_fn note, void *arg,
                                                    sy_error *err);

typedef struct {
	long long version;
	char hash[SY_HASH_HEX_LEN + 1];
	bool created; /* false: the latest version already had this hash ("unchanged") */
} sy_store_published;

/*
 * Publishes m in one transaction: sy_store_schema_check(); for every table
 * synchro.install_fence_trigger() and synchro.backfill_fences(); GRANT SELECT, INSERT,
 * UPDATE, DELETE on the relation (USAGE on its owned sequences and, when missing, its
 * schema) to synchro_app; then a new row of synchro.schema_versions when m's hash
 * differs from the latest version's. A fence trigger left on another relation for a
 * table_id the manifest now maps elsewhere is dropped; triggers of tables the manifest
 * no longer has stay (their fences stay exact if the table returns).
 * SY_STORE_CONFLICT when m equals an older, not the latest, version (hashes are unique:
 * a schema reference names one manifest forever). note receives one line per table.
 */
SY_MUST_CHECK sy_store_status sy_store_schema_publish(PGconn *c, const sy_manifest *m,
                                                      sy_store_note_fn note, void *arg,
                                                      sy_store_published *out, sy_error *err);

typedef struct {
	long long version;
	char hash[SY_HASH_HEX_LEN + 1];
	char published_at[SY_STORE_TIME_LEN + 1];
	char *manifest; /* the exact stored JCS bytes, NUL-terminated; sy_free() */
	size_t manifest_len;
} sy_store_schema;

/*
 * Fetches version (0: the latest) into *out, which the caller releases with
 * sy_store_schema_clear(). SY_STORE_NOT_FOUND when there is no such version (or none).
 */
SY_MUST_CHECK sy_store_status sy_store_schema_get(PGconn *c, long long version,
                                                  sy_store_schema *out, sy_error *err);
/* Frees the manifest text; accepts a zeroed or already cleared struct. */
void sy_store_schema_clear(sy_store_schema *s);

#endif
