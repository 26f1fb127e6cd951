/* SPDX-License-Identifier: BSD-2-Clause */
/* Schema manifests (PROTOCOL.md §4): parsing, validation, hash, compatibility. */
#ifndef SYNCHRO_MANIFEST_H
#define SYNCHRO_MANIFEST_H

#include "synchro/scalar.h"
#include "synchro/types.h"

#define SY_MANIFEST_HASH_DOMAIN "synchro:v3:schema-manifest:v1"

typedef enum { SY_POLICY_OWNER, SY_POLICY_ALL, SY_POLICY_NONE } sy_policy;
typedef enum { SY_DELETE_HARD, SY_DELETE_SOFT } sy_delete_mode;

typedef struct {
	char *field_id;
	char *column;
	sy_type type;
	bool nullable;
	bool writable; /* as declared; see sy_field_writable() for the effective rule */
} sy_field;

typedef struct {
	char *table_id;
	char *relation;       /* "schema.name" or "name", as written */
	sy_field pk;          /* nullable false, writable false */
	sy_field *fields;     /* in manifest order; never contains the pk */
	size_t field_count;
	sy_delete_mode delete_mode;
	char *delete_column;  /* soft mode: the timestamptz column; else NULL */
	char *owner_field;    /* field_id of the owner field, or NULL */
	sy_policy read;
	sy_policy write;
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

/*
 * Parses and validates a manifest. Returns a new manifest the caller frees with
 * sy_manifest_free(); NULL with *err set (SY_ERR_INVALID_REQUEST naming the
 * member path, e.g. "tables[1].fields[0].type: unknown type \"int\"").
 */
SY_MUST_CHECK sy_manifest *sy_manifest_parse(const char *text, size_t len, sy_error *err);
void sy_manifest_free(sy_manifest *m);

const sy_table *sy_manifest_table(const sy_manifest *m, const char *table_id, size_t len);
/* A non-pk field of t by field_id; NULL when absent. */
const sy_field *sy_table_field(const sy_table *t, const char *field_id, size_t len);
/* Effective writability: declared writable and neither owner field nor soft-delete column. */
bool sy_field_writable(const sy_table *t, const sy_field *f);

#endif
