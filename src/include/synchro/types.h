/* SPDX-License-Identifier: BSD-2-Clause */
/* The portable types of PROTOCOL.md §3 and their canonical wire values. */
#ifndef SYNCHRO_TYPES_H
#define SYNCHRO_TYPES_H

#include "synchro/buf.h"
#include "synchro/json.h"

typedef enum {
	SY_TYPE_TEXT,
	SY_TYPE_INT32,
	SY_TYPE_INT64,
	SY_TYPE_FLOAT64,
	SY_TYPE_NUMERIC,
	SY_TYPE_BOOL,
	SY_TYPE_TIMESTAMP,
	SY_TYPE_DATE,
	SY_TYPE_UUID,
	SY_TYPE_BYTES,
	SY_TYPE_JSON,
	SY_TYPE__COUNT
} sy_type;

/* "text", "int32", ...; NULL for an out-of-range value. */
const char *sy_type_name(sy_type t);
/* Looks a manifest type name up; false when unknown. */
bool sy_type_from_name(const char *name, sy_type *out);

/*
 * Whether v is the canonical wire value of type t (JSON null is never one:
 * nullability is the caller's rule). On false, a short reason is written to
 * why (may be NULL), e.g. "int32 out of range".
 */
bool sy_wire_valid(sy_type t, const sy_json *v, const char **why);

#endif
