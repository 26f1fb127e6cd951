/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * jcs.h: canonical JSON serialization (RFC 8785, JCS).
 */
#ifndef SYNCHRO_JCS_H
#define SYNCHRO_JCS_H

#include "synchro/buf.h"
#include "synchro/json.h"

/*
 * Appends the JCS bytes of v to out: ECMAScript number formatting (shortest
 * round trip, -0 as 0), the JCS string escapes, object members sorted by UTF-16
 * code units. v is borrowed for the call. Returns false with *err set when v
 * is NULL, holds a NULL value or a non-finite number (SY_ERR_INVALID_REQUEST),
 * or memory runs out (SY_ERR_NOMEM).
 */
SY_MUST_CHECK bool sy_jcs_write(sy_buf *out, const sy_json *v, sy_error *err);

/* Appends the ECMAScript Number::toString form of a finite d (-0 gives "0"); false
 * when d is not finite or memory runs out. */
SY_MUST_CHECK bool sy_jcs_write_number(sy_buf *out, double d);
/* Room for any sy_jcs_format_number() output and its NUL ("-1.2345678901234567e-308"). */
#define SY_JCS_NUMBER_MAX 32
/* Writes the Number::toString form of a finite d plus a NUL; returns its length
 * (0, with out = "", when d is not finite). */
size_t sy_jcs_format_number(char out[SY_JCS_NUMBER_MAX], double d);

/* Appends s[0..len) (valid UTF-8, borrowed for the call) as a JCS string literal with
 * its quotes; false when memory runs out. */
SY_MUST_CHECK bool sy_jcs_write_string(sy_buf *out, const char *s, size_t len);

/* Orders two UTF-8 strings by their UTF-16 code units (JCS member order); <0, 0, >0. */
int sy_jcs_compare_keys(const char *a, size_t alen, const char *b, size_t blen);

#endif
