/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * scalar.h: validators for the scalars. They are pure functions and allocate nothing.
 *
 * Rules: doc/contract.md#scalars (the scalars).
 */
#ifndef SYNCHRO_SCALAR_H
#define SYNCHRO_SCALAR_H

#include "synchro/json.h"

#define SY_UUID_LEN           36
#define SY_HASH_HEX_LEN       64
#define SY_OPAQUE_VERSION_MAX 128
#define SY_GENERATION_MAX     9007199254740991ULL /* 2^53 - 1 */
#define SY_SERVER_TIME_LEN    27                  /* YYYY-MM-DDTHH:MM:SS.ffffffZ */
#define SY_DATE_LEN           10                  /* YYYY-MM-DD */

/*
 * The instants a server_time string can name: 0001-01-01T00:00:00.000000Z and
 * 9999-12-31T23:59:59.999999Z, in microseconds since the Unix epoch.
 */
#define SY_SERVER_TIME_MIN_USEC (-62135596800000000LL)
#define SY_SERVER_TIME_MAX_USEC (253402300799999999LL)

/* A schema reference: {"version": n, "hash": "<64 lowercase hex>"}. */
typedef struct {
	uint64_t version;
	char hash[SY_HASH_HEX_LEN + 1];
} sy_schema_ref;

/*
 * Identity UUIDs (client_id, batch_id, mutation_id, rebuild_id): lowercase,
 * hyphenated 8-4-4-4-12 hex, and not the nil UUID. Any version and variant
 * nibble is accepted (clients may mint v4 or v7).
 */
bool sy_uuid_valid(const char *s, size_t len);
/*
 * The canonical text of any UUID, nil included: the form of the `uuid` portable
 * type, where the nil UUID is data rather than an identity.
 */
bool sy_uuid_text_valid(const char *s, size_t len);
/* The 16 octets of a UUID in that canonical text (nil included); false for anything else. */
bool sy_uuid_octets(const char *s, size_t len, uint8_t out[16]);
/* 64 lowercase hex digits. */
bool sy_hash_hex_valid(const char *s, size_t len);
/*
 * A JSON integer literal (no fraction, no exponent, no leading zeros, no minus)
 * in 1..max; the value in *out. The literal text decides, never the double, so
 * 9007199254740993 is not mistaken for 2^53. out may be NULL.
 */
bool sy_positive_integer(const sy_json *v, uint64_t max, uint64_t *out);
/*
 * {"version": positive integer ≤ 2^53-1, "hash": hex64}, exactly those members
 * (a missing, extra or repeated member is refused). out may be NULL.
 */
bool sy_schema_ref_parse(const sy_json *v, sy_schema_ref *out);
/* client_generation: positive integer literal ≤ 2^53-1. out may be NULL. */
bool sy_generation_parse(const sy_json *v, uint64_t *out);
/*
 * client_version: YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z with valid calendar values:
 * uppercase T and Z only, years 0001..9999, Gregorian leap years, hour 0..23,
 * minute 0..59, second 0..59. The leap second :60 is refused: PostgreSQL's
 * timestamptz cannot hold it (it rolls over to the next minute), so a stored
 * or echoed value would not round-trip to the client's exact string.
 */
bool sy_client_version_valid(const char *s, size_t len);
/*
 * Opaque version (base_version, server_version): 1..128 bytes of printable
 * ASCII 0x20..0x7e. doc/contract.md#scalars says "ASCII"; control characters are refused
 * because the server never mints them and a token may end up quoted in a
 * diagnostic message. The space is allowed: the server never parses a token.
 */
bool sy_opaque_version_valid(const char *s, size_t len);
/*
 * YYYY-MM-DDTHH:MM:SS.ffffffZ of a Unix time in microseconds (proleptic
 * Gregorian, UTC, no leap seconds; times before 1970 are fine). A time outside
 * SY_SERVER_TIME_MIN_USEC..SY_SERVER_TIME_MAX_USEC is clamped to that range,
 * since the format has four year digits. out receives 28 bytes (NUL included).
 */
void sy_server_time_format(int64_t unix_usec, char out[SY_SERVER_TIME_LEN + 1]);
/*
 * Whether s is exactly a server_time string (the form of the `timestamp`
 * portable type too): six fraction digits, valid calendar values as for
 * sy_client_version_valid.
 */
bool sy_server_time_valid(const char *s, size_t len);
/* The Unix time in microseconds of a valid server_time string; false when invalid. */
SY_MUST_CHECK bool sy_server_time_parse(const char *s, size_t len, int64_t *unix_usec);
/* YYYY-MM-DD, a valid Gregorian date in years 0001..9999. */
bool sy_date_valid(const char *s, size_t len);

/* Days since 1970-01-01 of a proleptic Gregorian date (month 1..12, day 1..31). */
int64_t sy_days_from_civil(int64_t year, unsigned month, unsigned day);
/* The proleptic Gregorian date of a day number since 1970-01-01. */
void sy_civil_from_days(int64_t days, int64_t *year, unsigned *month, unsigned *day);

#endif
