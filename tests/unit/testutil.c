/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared helpers of the CUnit suites. */
#include "config.h"

#include <CUnit/Basic.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"

void sy_test_add_suite(const char *name, const CU_TestInfo *tests)
{
	if (CU_get_registry() == NULL && CU_initialize_registry() != CUE_SUCCESS) {
		fprintf(stderr, "CUnit: cannot initialize the registry\n");
		exit(99);
	}
	CU_pSuite s = CU_add_suite(name, NULL, NULL);
	if (s == NULL) {
		fprintf(stderr, "CUnit: cannot add suite %s\n", name);
		exit(99);
	}
	for (const CU_TestInfo *t = tests; t->pName != NULL; t++) {
		if (CU_add_test(s, t->pName, t->pTestFunc) == NULL) {
			fprintf(stderr, "CUnit: cannot add test %s\n", t->pName);
			exit(99);
		}
	}
}

int sy_test_run(void)
{
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
	unsigned ran = CU_get_number_of_tests_run();
	CU_cleanup_registry();
	if (ran == 0) {
		fprintf(stderr, "no test ran\n");
		return 1;
	}
	return failed ? 1 : 0;
}

char *sy_test_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	char *buf = NULL;
	size_t cap = 0, n = 0;
	for (;;) {
		if (n + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			char *p = realloc(buf, cap);
			if (p == NULL) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = p;
		}
		size_t r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
		if (r == 0)
			break;
	}
	fclose(f);
	buf[n] = '\0';
	if (len != NULL)
		*len = n;
	return buf;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **sy_test_list_files(const char *dir, const char *suffix, size_t *n)
{
	DIR *d = opendir(dir);
	char **names = NULL;
	size_t cap = 0;
	*n = 0;
	if (d == NULL) {
		fprintf(stderr, "cannot open %s\n", dir);
		return NULL;
	}
	struct dirent *e;
	size_t sl = strlen(suffix);
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		if (l <= sl || strcmp(e->d_name + l - sl, suffix) != 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			char **grown = realloc(names, cap * sizeof *names);
			if (grown == NULL) {
				fprintf(stderr, "out of memory listing %s\n", dir);
				exit(99);
			}
			names = grown;
		}
		names[(*n)++] = strndup(e->d_name, l - sl);
	}
	closedir(d);
	qsort(names, *n, sizeof *names, by_name);
	return names;
}

void sy_test_free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

const char *sy_test_data_dir(void)
{
	const char *d = getenv("SYNCHRO_TESTDATA");
	struct stat st;
	if (d == NULL || *d == '\0' || stat(d, &st) != 0 || !S_ISDIR(st.st_mode))
		return NULL;
	return d;
}

const char *sy_test_src_dir(void)
{
	const char *d = getenv("SYNCHRO_SRCDIR");
	return d != NULL && *d != '\0' ? d : ".";
}
