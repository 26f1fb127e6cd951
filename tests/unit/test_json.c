/* SPDX-License-Identifier: BSD-2-Clause */
/* CUnit suite of the strict JSON reader and the builders: JSONTestSuite, the
 * RFC 8259 corners, duplicates, depth, UTF-8, numbers, failing allocations. */
/* This file: the helpers the suite's files share (test_json.h) and the runner;
 * the tests are in test_json_structure.c, test_json_scalars.c, test_json_build.c. */
#include "config.h"

#include <CUnit/CUnit.h>
#include <dirent.h>
#include <float.h>
#include <json-c/json.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/buf.h"
#include "synchro/jcs.h"
#include "synchro/json.h"
#include "test_json.h"
#include "testutil.h"

/* Parses text[0..len); NULL when refused, with err filled. */
sy_json_doc *parse_n(const char *text, size_t len, sy_error *err)
{
	sy_error_clear(err);
	return sy_json_parse(text, len, err);
}

sy_json_doc *parse(const char *text, sy_error *err)
{
	return parse_n(text, strlen(text), err);
}

/* Asserts that text is refused as invalid JSON with the offset named. */
void expect_refused_at(const char *text, size_t len, long at)
{
	sy_error err;
	sy_json_doc *doc = parse_n(text, len, &err);
	CU_ASSERT_PTR_NULL(doc);
	sy_json_doc_free(doc);
	CU_ASSERT_EQUAL(err.code, SY_ERR_INVALID_REQUEST);
	CU_ASSERT_EQUAL(strncmp(err.message, "invalid JSON at byte ", 21), 0);
	if (at >= 0) {
		char want[64];
		snprintf(want, sizeof(want), "invalid JSON at byte %ld: ", at);
		if (strncmp(err.message, want, strlen(want)) != 0) {
			fprintf(stderr, "\n  input %.60s: got \"%s\", want offset %ld\n", text,
			        err.message, at);
			CU_FAIL("wrong byte offset");
		}
	}
}

void refused(const char *text)
{
	expect_refused_at(text, strlen(text), -1);
}

void accepted(const char *text)
{
	sy_error err;
	sy_json_doc *doc = parse(text, &err);
	if (doc == NULL)
		fprintf(stderr, "\n  refused %.60s: %s\n", text, err.message);
	CU_ASSERT_PTR_NOT_NULL(doc);
	sy_json_doc_free(doc);
}

/* Canonical form of a document, or NULL. */
char *canonical(const sy_json *v)
{
	sy_buf b = SY_BUF_INIT;
	sy_error err;
	if (!sy_jcs_write(&b, v, &err)) {
		sy_buf_free(&b);
		return NULL;
	}
	return sy_buf_steal(&b, NULL);
}

const sy_json *root_of(sy_json_doc *doc)
{
	return sy_json_doc_root(doc);
}

/* ------------------------------------------------------------ main */

int main(void)
{
	static const CU_TestInfo core[] = {
	        {"depth", test_depth},
	        {"duplicates", test_duplicates},
	        {"big object", test_big_object},
	        {"colliding member names", test_colliding_names},
	        {"trailing data and offsets", test_trailing},
	        {"strings", test_strings},
	        {"utf-8", test_utf8},
	        {"numbers", test_numbers},
	        {"values", test_values},
	        {"builders", test_builders},
	        {"failing allocations", test_alloc_failure},
	        {"decimal comma locale", test_locale},
	        {NULL, NULL},
	};
	static const CU_TestInfo data[] = {
	        {"JSONTestSuite", test_jsontestsuite},
	        {NULL, NULL},
	};
	sy_test_add_suite("json", core);
	if (sy_test_data_dir() != NULL)
		sy_test_add_suite("json-testdata", data);
	else
		fprintf(stderr, "SYNCHRO_TESTDATA absent: JSONTestSuite not run\n");
	return sy_test_run();
}
