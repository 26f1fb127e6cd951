/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * types.h: the portable types and their canonical wire values.
 *
 * Rules: doc/contract.md#portable-types (the types).
 */
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

/* The outcome of a check or conversion that may need memory. */
typedef enum {
	SY_WIRE_OK,
	SY_WIRE_INVALID, /* not a (canonical / representable) value of the type */
	SY_WIRE_NOMEM
} sy_wire_status;

/* PostgreSQL numeric's limits: digits before and after the decimal point. */
#define SY_NUMERIC_MAX_INT_DIGITS  131072
#define SY_NUMERIC_MAX_FRAC_DIGITS 16383

/* "text", "int32", ... (borrowed, static); NULL for an out-of-range value. */
const char *sy_type_name(sy_type t);
/* Looks a manifest type name up; false when unknown. */
bool sy_type_from_name(const char *name, sy_type *out);

/*
 * Whether v is the canonical wire value of type t. JSON null is never one:
 * nullability is the caller's rule. The canonical forms:
 *   text      a string without U+0000
 *   int32     an integer literal in range; "-0" is refused
 *   int64     a string -?(0|[1-9][0-9]*) in range, never "-0"
 *   float64   a finite number whose literal is exactly its JCS (ECMAScript)
 *             serialization: 1.5 and 3 and 1e+21 are canonical, 1.50, 3.0,
 *             1e21, -0 and 1e400 are not
 *   numeric   a string -?(0|[1-9][0-9]*)(\.[0-9]*[1-9])?, never "-0", at most
 *             SY_NUMERIC_MAX_INT_DIGITS / SY_NUMERIC_MAX_FRAC_DIGITS digits
 *   bool      true / false
 *   timestamp a string YYYY-MM-DDTHH:MM:SS.ffffffZ (sy_server_time_valid)
 *   date      a string YYYY-MM-DD, years 0001..9999 (sy_date_valid)
 *   uuid      a lowercase hyphenated UUID string; the nil UUID is a value here
 *             (it is data, not an identity)
 *   bytes     RFC 4648 base64 (standard alphabet, padded) whose unused low
 *             bits are zero, so each byte string has exactly one encoding
 *   json      a string holding exactly the JCS bytes of one JSON value
 * v is borrowed for the call.
 * On SY_WIRE_INVALID a short reason (borrowed, static) goes to why (may be NULL), e.g.
 * "int32 out of range", and err (may be NULL) gets SY_ERR_INVALID_REQUEST with
 * that reason; on SY_WIRE_NOMEM (only the json check allocates: it parses
 * and re-serializes the content) why is "out of memory" and err gets SY_ERR_NOMEM.
 */
SY_MUST_CHECK sy_wire_status sy_wire_check(sy_type t, const sy_json *v, const char **why,
                                           sy_error *err);
/* sy_wire_check() as a bool: running out of memory also gives false. */
bool sy_wire_valid(sy_type t, const sy_json *v, const char **why);

/*
 * Appends to out PostgreSQL's text input for the canonical wire value v of
 * type t (a parameter of a query): text, int64, numeric, timestamp, date,
 * uuid and json as their string content, int32 its literal, float64 its JCS
 * form (float8 input reads "1e+21"), bool "true"/"false", bytes "\x" and the
 * hex of the decoded bytes. Returns false when v is not a valid value of t
 * (out unchanged) or memory runs out (out->failed set).
 */
SY_MUST_CHECK bool sy_wire_to_pg_text(sy_type t, const sy_json *v, sy_buf *out);

/*
 * The canonical wire value of type t from PostgreSQL's text output
 * pgtext[0..len) (borrowed for the call): *out is borrowed from doc, where it is
 * allocated. The session must use DateStyle=ISO,
 * TimeZone=UTC, extra_float_digits >= 1 and bytea_output=hex (a timestamptz
 * carrying another offset is still converted to UTC exactly; one without an
 * offset, from a timestamp column, is read as UTC). Values without a wire
 * form are SY_WIRE_INVALID: NaN and infinities, years outside 0001..9999 and
 * BC dates, text that is not valid UTF-8 or holds U+0000, jsonb holding a
 * number beyond double range. jsonb numbers go through doubles (JCS), so
 * digits beyond double precision are lost.
 */
SY_MUST_CHECK sy_wire_status sy_wire_decode_pg_text(sy_json_doc *doc, sy_type t, const char *pgtext,
                                                    size_t len, sy_json **out);
/* sy_wire_decode_pg_text() returning the value (borrowed from doc); NULL when invalid
 * or out of memory. */
sy_json *sy_wire_from_pg_text(sy_json_doc *doc, sy_type t, const char *pgtext, size_t len);

#endif
