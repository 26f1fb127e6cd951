/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outcome_common.h: what the three outcome files share, private to the core.
 *
 * Notes: outcome.c holds one outcome. outcome_response.c holds the 200 and error bodies.
 * outcome_validate.c holds the response validator.
 */
#ifndef SY_CORE_OUTCOME_COMMON_H
#define SY_CORE_OUTCOME_COMMON_H

#include <string.h>

#include "synchro/outcome.h"

/* outcome.h: a contract violation is a server bug, answered as 503 (never committed). */
#define BAD(...) sy_error_set(err, SY_ERR_TEMPORARY_UNAVAILABLE, __VA_ARGS__)

static inline bool outcome_nomem(sy_error *err)
{
	return sy_error_set(err, SY_ERR_NOMEM, "out of memory");
}

/* A schema reference doc/contract.md#scalars allows on the wire: version 1.., a lowercase hex hash.
 * */
static inline bool schema_ref_ok(const sy_schema_ref *r)
{
	const char *nul = memchr(r->hash, '\0', sizeof r->hash);
	return r->version >= 1 && r->version <= SY_GENERATION_MAX && nul != NULL &&
	       sy_hash_hex_valid(r->hash, (size_t)(nul - r->hash));
}

static inline bool put(sy_json_doc *doc, sy_json *obj, const char *key, sy_json *value)
{
	return sy_json_object_put(doc, obj, key, value);
}

/* {"version": n, "hash": "..."} in doc; NULL on no memory. */
sy_json *sy_outcome_schema_ref_json(sy_json_doc *doc, const sy_schema_ref *r);

/*
 * Validates response (a 200 body as a tree) against req; own_checksums: the
 * body is the builder's own, whose row checksums were computed when added.
 */
SY_MUST_CHECK bool sy_outcome_validate_tree(const sy_push_request *req, const sy_json *response,
                                            bool own_checksums, sy_error *err);

#endif
