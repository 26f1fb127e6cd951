/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The client's documents stay in step with the code: doc/client.md quotes the example
 * program byte for byte, names every intent state; synchro-cli(1) names every command and
 * every exit status.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/client.h"
#include "testutil.h"

static char *read_src(const char *rel)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", sy_test_src_dir(), rel);
	size_t len;
	char *text = sy_test_read_file(path, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	return text;
}

static void test_example_quoted(void)
{
	char *doc = read_src("doc/client.md");
	char *example = read_src("src/client/example_todo.c");
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, example));
	for (int s = 0; s < SY_INTENT__COUNT; s++) {
		char name[64];
		snprintf(name, sizeof name, "`%s`",
		         sy_client_intent_state_name((sy_intent_state)s));
		if (strstr(doc, name) == NULL)
			fprintf(stderr, "doc/client.md does not name %s\n", name);
		CU_ASSERT_PTR_NOT_NULL(strstr(doc, name));
	}
	free(doc);
	free(example);
}

static void test_man_page(void)
{
	char *man = read_src("doc/synchro-cli.1");
	static const char *const words[] = {"connect", "insert", "update",  "delete", "atomic",
	                                    "sync",    "status", "pending", "show",   "explain",
	                                    "batch",   "rows",   "resolve", "verify", "\\-\\-json",
	                                    "query",   "index"};
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
		CU_ASSERT_PTR_NOT_NULL(strstr(man, words[i]));
	}
	for (int code = 0; code <= 7; code++) {
		char b[32];
		snprintf(b, sizeof b, ".TP\n.B %d\n", code);
		if (strstr(man, b) == NULL)
			fprintf(stderr, "synchro-cli(1) does not document exit status %d\n", code);
		CU_ASSERT_PTR_NOT_NULL(strstr(man, b));
	}
	free(man);
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"doc/client.md quotes the example and names every state", test_example_quoted},
	        {"synchro-cli(1) names every command and exit status", test_man_page},
	        CU_TEST_INFO_NULL,
	};
	sy_test_add_suite("client docs", tests);
	return sy_test_run();
}
