/* SPDX-License-Identifier: BSD-2-Clause */
/* What the files of the json suite share (helpers in test_json.c). */
#ifndef SY_TEST_JSON_H
#define SY_TEST_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "synchro/json.h"

/* Parses text[0..len); NULL when refused, with err filled. */
sy_json_doc *parse_n(const char *text, size_t len, sy_error *err);
sy_json_doc *parse(const char *text, sy_error *err);
/* Asserts that text is refused as invalid JSON with the offset named (-1: any). */
void expect_refused_at(const char *text, size_t len, long at);
void refused(const char *text);
void accepted(const char *text);
/* Canonical form of a document, or NULL. */
char *canonical(const sy_json *v);
const sy_json *root_of(sy_json_doc *doc);
/* n names that land in one bucket of the reader's duplicate index (test_json_structure.c). */
void colliding_names(char names[][16], int n);

void test_jsontestsuite(void);
void test_depth(void);
void test_duplicates(void);
void test_big_object(void);
void test_colliding_names(void);
void test_trailing(void);
void test_strings(void);
void test_utf8(void);
void test_numbers(void);
void test_values(void);
void test_locale(void);
void test_builders(void);
void test_alloc_failure(void);

#endif
