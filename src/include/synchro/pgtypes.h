/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pgtypes.h: the PostgreSQL type of each manifest type, as one mapping (src/core/pgtypes.c).
 *
 * Rules: doc/contract.md#portable-types (the types).
 * Notes: The server module's parameter casts and the store's rebuild statements use it.
 */
#ifndef SYNCHRO_PGTYPES_H
#define SYNCHRO_PGTYPES_H

#include "synchro/types.h"

/*
 * The PostgreSQL type name a value of t is cast to ("text", "int4", "int8", "float8",
 * "numeric", "bool", "timestamptz", "date", "uuid", "bytea", "jsonb"); "text" for an
 * out-of-range value. A static string.
 */
const char *sy_type_pg_name(sy_type t);

#endif
