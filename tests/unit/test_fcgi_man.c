/* SPDX-License-Identifier: BSD-2-Clause */
/* synchro-fcgi(8) documents every [fcgi] option of the one option table. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/cfg.h"
#include "testutil.h"

/* Whether a roff line of man names word as a bold option: ".B word" or ".BR word ...". */
static bool documented(const char *man, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = man; (p = strstr(p, word)) != NULL; p += n) {
		const char *line = p;
		while (line > man && line[-1] != '\n')
			line--;
		bool bold = strncmp(line, ".B ", 3) == 0 || strncmp(line, ".BR ", 4) == 0;
		bool whole = (p[-1] == ' ' || p[-1] == '"') &&
		             (p[n] == '\n' || p[n] == ' ' || p[n] == '"');
		if (bold && whole)
			return true;
	}
	return false;
}

static void test_fcgi_options_in_man_page(void)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/doc/synchro-fcgi.8", sy_test_src_dir());
	size_t len;
	char *man = sy_test_read_file(path, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(man);
	size_t n;
	const sy_cfg_option *o = sy_cfg_options(&n);
	size_t fcgi = 0;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(o[i].section, "fcgi") != 0)
			continue;
		fcgi++;
		if (!documented(man, o[i].key)) {
			fprintf(stderr, "synchro-fcgi.8 lacks [fcgi] %s\n", o[i].key);
			CU_FAIL("option missing from doc/synchro-fcgi.8");
		}
	}
	CU_ASSERT(fcgi >= 10);
	CU_ASSERT_FALSE(documented(man, "no_such_option"));
	free(man);
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"every [fcgi] option is in synchro-fcgi(8)", test_fcgi_options_in_man_page},
	        CU_TEST_INFO_NULL,
	};
	sy_test_add_suite("fcgi man page", tests);
	return sy_test_run();
}
