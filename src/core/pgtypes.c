/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pgtypes.c: the PostgreSQL type of each manifest type (synchro/pgtypes.h).
 *
 * Layer: base of src/core (doc/hacking.md).
 */
#include "config.h"

#include "synchro/pgtypes.h"

const char *sy_type_pg_name(sy_type t)
{
	switch (t) {
	case SY_TYPE_TEXT: return "text";
	case SY_TYPE_INT32: return "int4";
	case SY_TYPE_INT64: return "int8";
	case SY_TYPE_FLOAT64: return "float8";
	case SY_TYPE_NUMERIC: return "numeric";
	case SY_TYPE_BOOL: return "bool";
	case SY_TYPE_TIMESTAMP: return "timestamptz";
	case SY_TYPE_DATE: return "date";
	case SY_TYPE_UUID: return "uuid";
	case SY_TYPE_BYTES: return "bytea";
	case SY_TYPE_JSON: return "jsonb";
	case SY_TYPE__COUNT: break;
	}
	return "text";
}
