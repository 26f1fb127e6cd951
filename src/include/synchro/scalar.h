/* SPDX-License-Identifier: BSD-2-Clause */
/* Validators for the scalars of PROTOCOL.md §2. Pure functions, no allocation. */
#ifndef SYNCHRO_SCALAR_H
#define SYNCHRO_SCALAR_H

#include "synchro/json.h"

#define SY_UUID_LEN 36
#define SY_HASH_HEX_LEN 64
#define SY_OPAQUE_VERSION_MAX 128
#define SY_GENERATION_MAX 9007199254740991ULL /* 2^53 - 1 */
#define SY_SERVER_TIME_LEN 27                 /* YYYY-MM-DDTHH:MM:SS.ffffffZ */

/* A schema reference: {"version": n, "hash": "<64 lowercase hex>"}. */
typedef struct {
	uint64_t version;
	char hash[SY_HASH_HEX_LEN + 1];
} sy_schema_ref;

/* Non-nil, lowercase, hyphenated 8-4-4-4-12 hex. */
bool sy_uuid_valid(const char *s, size_t len);
/* 64 lowercase hex digits. */
bool sy_hash_hex_valid(const char *s, size_t len);
/*
 * A JSON integer literal (no fraction, no exponent, no leading zeros, no minus)
 * in 1..max; the value in *out.
 */
bool sy_positive_integer(const sy_json *v, uint64_t max, uint64_t *out);
/* {"version": positive integer ≤ 2^53-1, "hash": hex64}, exactly those members. */
bool sy_schema_ref_parse(const sy_json *v, sy_schema_ref *out);
/* client_generation: positive integer literal ≤ 2^53-1. */
bool sy_generation_parse(const sy_json *v, uint64_t *out);
/* client_version: YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z with valid calendar values. */
bool sy_client_version_valid(const char *s, size_t len);
/* Opaque version: non-empty printable ASCII (0x21..0x7e), at most 128 bytes. */
bool sy_opaque_version_valid(const char *s, size_t len);
/* YYYY-MM-DDTHH:MM:SS.ffffffZ of a Unix time in microseconds; out holds 28 bytes. */
void sy_server_time_format(int64_t unix_usec, char out[SY_SERVER_TIME_LEN + 1]);
/* Whether s is exactly a server_time string. */
bool sy_server_time_valid(const char *s, size_t len);

#endif
