/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * manifest_common.h: what the manifest files share, private to the core.
 *
 * Notes: manifest.c holds tables, fields, the hash and compatibility. manifest_policy.c
 * holds the policy and its membership path. manifest_check.c holds the checks of members
 * and names, and their messages.
 */
#ifndef SY_CORE_MANIFEST_COMMON_H
#define SY_CORE_MANIFEST_COMMON_H

#include <string.h>

#include "synchro/json.h"
#include "synchro/manifest.h"

/* Bytes of a name or value quoted in a message before it is clipped. */
#define SY_MF_SHOW_BYTES 40
#define SY_MF_SHOW_CAP   (SY_MF_SHOW_BYTES + 4)

static inline bool sy_mf_bytes_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

/* A type a key can have (a primary key, a membership path's column): uuid, int64, int32,
 * text. */
static inline bool sy_mf_key_type(sy_type t)
{
	return t == SY_TYPE_UUID || t == SY_TYPE_INT64 || t == SY_TYPE_INT32 || t == SY_TYPE_TEXT;
}

/* Sets "<path>[.<member>]: <message>" as an invalid_request error; returns false. */
bool sy_mf_fail_at(sy_error *err, const char *path, const char *member, const char *fmt, ...)
        SY_PRINTF(4, 5);
/* Sets SY_ERR_NOMEM; returns false. */
bool sy_mf_nomem(sy_error *err);
/*
 * A printable excerpt of untrusted text for a message, written into out: control bytes
 * become '?', and a long text is cut on a UTF-8 boundary and marked "...".
 */
const char *sy_mf_show(char out[SY_MF_SHOW_CAP], const char *s, size_t len);
/* The unquoted lowercase SQL identifier form [a-z_][a-z0-9_$]*, 1..63 bytes. */
bool sy_mf_sql_name_valid(const char *s, size_t len);
/* "name" or "schema.name" of SQL names. */
bool sy_mf_relation_valid(const char *s, size_t len);
/*
 * Exactly the members in names[0..n) of obj: unknown ones refused (document order), then
 * the first missing required one (names[i] is optional when optional[i]).
 */
SY_MUST_CHECK bool sy_mf_check_members(const sy_json *obj, const char *path,
                                       const char *const *names, const bool *optional, size_t n,
                                       sy_error *err);
/* The string member name of obj (present), borrowed into *s, *len. */
SY_MUST_CHECK bool sy_mf_get_string(const sy_json *obj, const char *path, const char *name,
                                    const char **s, size_t *len, sy_error *err);
/* The same, which must be a SQL name. */
SY_MUST_CHECK bool sy_mf_get_sql_name(const sy_json *obj, const char *path, const char *name,
                                      const char **s, size_t *len, sy_error *err);

/* The policy member of a table whose fields are parsed (manifest_policy.c). */
SY_MUST_CHECK bool sy_mf_parse_policy(const sy_json *v, const char *table_path, sy_table *t,
                                      sy_error *err);
/* Releases a membership path; accepts NULL. */
void sy_mf_members_free(sy_members *m);

#endif
