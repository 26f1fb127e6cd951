/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * manifest.h: schema manifests: parsing, validation, hash and compatibility.
 *
 * Rules: doc/contract.md#schema-manifest (the manifest).
 */
#ifndef SYNCHRO_MANIFEST_H
#define SYNCHRO_MANIFEST_H

#include "synchro/json.h"
#include "synchro/scalar.h"
#include "synchro/types.h"

#define SY_MANIFEST_HASH_DOMAIN "synchro:v3:schema-manifest:v1"

typedef enum { SY_POLICY_OWNER, SY_POLICY_ALL, SY_POLICY_NONE, SY_POLICY_MEMBERS } sy_policy;
typedef enum { SY_DELETE_HARD, SY_DELETE_SOFT } sy_delete_mode;

/* A manifest owns every table, field and string in it (sy_manifest_free()). */
typedef struct {
	char *field_id;
	char *column;
	sy_type type;
	bool nullable;
	bool writable; /* as declared; see sy_field_writable() for the effective rule */
} sy_field;

/* One step of a membership path: the row's column holds a key of relation. */
typedef struct {
	char *column;   /* hop 1: a column of the synced table; hop 2: of hop 1's relation */
	char *relation; /* "schema.name" or "name", as written */
	char *key;      /* the column of relation that column's value matches */
} sy_scope_hop;

/*
 * A membership path: the scope key of a row is the value the last hop reaches; the
 * membership relation names the users of a scope key (match = scope key, user = user id).
 */
typedef struct {
	sy_scope_hop hops[2];
	size_t hop_count; /* 1..2 */
	char *relation;   /* the membership relation, as written */
	char *match;
	char *user;
	const sy_field *field; /* the manifest field of hops[0].column, borrowed from the table */
} sy_members;

typedef struct {
	char *table_id;
	char *relation;   /* "schema.name" or "name", as written */
	sy_field pk;      /* nullable false, writable false */
	sy_field *fields; /* in manifest order; never contains the pk */
	size_t field_count;
	sy_delete_mode delete_mode;
	char *delete_column; /* soft mode: the timestamptz column; else NULL */
	char *owner_field;   /* the owner field's field_id, borrowed from fields; or NULL */
	sy_policy read;
	sy_policy write;
	sy_members *members; /* NULL unless read or write is SY_POLICY_MEMBERS */
} sy_table;

typedef struct {
	sy_table *tables; /* in manifest order */
	size_t table_count;
	/* lowercase hex SHA-256(domain 0x00 JCS(manifest)) */
	char hash[SY_HASH_HEX_LEN + 1];
	/* JCS bytes of the manifest (what the hash covers), NUL-terminated */
	char *canonical;
	size_t canonical_len;
} sy_manifest;

/* Longest table_id, field_id or SQL identifier, in bytes (PostgreSQL's NAMEDATALEN - 1). */
#define SY_MANIFEST_NAME_MAX 63

/*
 * The rule of table_id and field_id, wherever a name appears (manifests, push
 * requests): 1..SY_MANIFEST_NAME_MAX octets without a C0, DEL or C1 control
 * character. s must already be valid UTF-8 (the reader guarantees it).
 */
bool sy_manifest_name_valid(const char *s, size_t len);
/*
 * The order of names of doc/contract.md#normalized-mutation: unsigned UTF-8 bytes (which is code
 * point order), a proper prefix first; <0, 0, >0.
 */
int sy_manifest_name_compare(const char *a, size_t alen, const char *b, size_t blen);

/*
 * Parses and validates a manifest (text borrowed for the call). Returns a new
 * manifest (sy_manifest_free()); NULL with *err set (SY_ERR_INVALID_REQUEST naming the
 * member path, e.g. "tables[1].fields[0].type: unknown type \"int\"", or
 * SY_ERR_NOMEM).
 *
 * Rules beyond doc/contract.md#schema-manifest, all enforced here:
 * - Every object has exactly its members; unknown members are refused.
 *   Root {tables}; table {table_id, relation, pk, fields, delete, policy};
 *   pk {field_id, column, type}; field {field_id, column, type, nullable, writable};
 *   delete {mode:"hard"} or {mode:"soft", column};
 *   policy {read, write[, owner_field][, members]}; members {hops, relation, match, user};
 *   hop {column, relation, key}.
 * - At least one table; a table may have no non-pk fields.
 * - table_id, field_id: 1..63 bytes of UTF-8 without control characters
 *   (U+0000..U+001F, U+007F..U+009F); non-ASCII is allowed. table_ids are unique;
 *   field_ids are unique within a table, the pk's included.
 * - relation: "name" or "schema.name"; every SQL name (relation parts, columns) is
 *   the unquoted lowercase form [a-z_][a-z0-9_$]* of at most 63 bytes (the store
 *   quotes it). Relations are unique as written; columns are unique within a table,
 *   the pk's included.
 * - pk type: uuid, int64, int32 or text.
 * - policy.read: owner|all|members; policy.write: owner|all|none|members. Write
 *   "members" needs read "members"; read "members" refuses write "all".
 *   owner_field is required when read or write is "owner", optional when read is
 *   "members" (the owner reads the row too), refused otherwise; it names a non-pk
 *   field of type text (nullable or not).
 * - members is required when read or write is "members" and refused otherwise. It has
 *   1 or 2 hops. Hop 1's column is the column of a non-pk field of type uuid, int64,
 *   int32 or text; hop 2's column is a column of hop 1's relation. Every relation is
 *   "name" or "schema.name" and every column a SQL name as above. The synced relation,
 *   the hop relations and the membership relation are pairwise different as written
 *   (a repeat is a cycle).
 * - delete soft: the column is not the pk's; a field may map it (it need not),
 *   and must then be type timestamp and nullable.
 */
SY_MUST_CHECK sy_manifest *sy_manifest_parse(const char *text, size_t len, sy_error *err);
/* The same from an already parsed JSON value (root borrowed for the call: the
 * manifest copies what it keeps). */
SY_MUST_CHECK sy_manifest *sy_manifest_parse_json(const sy_json *root, sy_error *err);
/* Accepts NULL. */
void sy_manifest_free(sy_manifest *m);

/* The table of m named table_id[0..len), borrowed from m; NULL when absent. */
const sy_table *sy_manifest_table(const sy_manifest *m, const char *table_id, size_t len);
/* A non-pk field of t by field_id, borrowed from t's manifest; NULL when absent. */
const sy_field *sy_table_field(const sy_table *t, const char *field_id, size_t len);
/* A non-pk field of t by column name, borrowed from t's manifest; NULL when absent
 * (compare t->pk.column yourself). */
const sy_field *sy_table_field_by_column(const sy_table *t, const char *column, size_t len);
/* Effective writability: declared writable and neither owner field nor soft-delete column. */
bool sy_field_writable(const sy_table *t, const sy_field *f);

/*
 * Historical compatibility (doc/contract.md#schema-incompatible-intents). A submitted field of
 * table_id is incompatible when the current schema's table has no field (pk
 * included) with that field_id, or when the authored manifest has that table
 * and field and its type differs from the current one. Changes of nullability,
 * writability, column or relation are not incompatibilities: the mutation is
 * then judged under the current schema (validation_failed at most).
 * - authored NULL (historical manifest unavailable), or authored without the
 *   table or field: only presence in the current schema counts.
 * - table absent from current: every submitted field is incompatible (possibly
 *   none). Whether the mutation is then schema_incompatible or table_not_synced
 *   depends on the whole history of versions, which the caller knows: test
 *   sy_manifest_table(current, ...) == NULL first.
 * current must not be NULL. Equal submitted ids are reported once.
 */

/*
 * Field ids of the authored mutation that the current schema cannot represent,
 * sorted by unsigned UTF-8 bytes: *out_ids is a new array of *out_count
 * NUL-terminated strings, all freed with sy_manifest_free_ids() (NULL when
 * *out_count is 0). False with *err set (SY_ERR_NOMEM) only when memory runs
 * out. Submitted ids holding U+0000 come back cut at it: a caller that accepts
 * such ids uses sy_manifest_incompatible_indexes().
 */
SY_MUST_CHECK bool sy_manifest_incompatible_fields(const sy_manifest *authored,
                                                   const sy_manifest *current, const char *table_id,
                                                   size_t table_len, const char *const *field_ids,
                                                   const size_t *field_lens, size_t count,
                                                   char ***out_ids, size_t *out_count,
                                                   sy_error *err);
/* Releases ids[0..n) and ids; accepts NULL. */
void sy_manifest_free_ids(char **ids, size_t n);
/*
 * The same as positions into field_ids: *out_idx is a new array (sy_free(); NULL
 * when *out_count is 0) of indexes whose ids are sorted by unsigned bytes; of
 * equal ids, the first index.
 */
SY_MUST_CHECK bool
sy_manifest_incompatible_indexes(const sy_manifest *authored, const sy_manifest *current,
                                 const char *table_id, size_t table_len,
                                 const char *const *field_ids, const size_t *field_lens,
                                 size_t count, size_t **out_idx, size_t *out_count, sy_error *err);

#endif
