/* SPDX-License-Identifier: BSD-2-Clause */
/* What the files of the types suite share (helpers in test_types.c). */
#ifndef SY_TEST_TYPES_H
#define SY_TEST_TYPES_H

#include <stddef.h>

#include "synchro/alloc.h"
#include "synchro/json.h"

/* Parses a fixture (fatal when it does not parse); free with sy_json_doc_free(). */
sy_json_doc *parse_n(const char *text, size_t len);
sy_json_doc *parse(const char *text);
/* JCS text of v, in a static buffer (the tests' values are short). */
const char *jcs(const sy_json *v);

void test_to_pg_text(void);
void test_from_pg_text(void);
void test_bytes_round_trip(void);
void test_float_round_trip(void);
void test_from_pg_nomem(void);

#endif
