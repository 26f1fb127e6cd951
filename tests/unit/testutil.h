/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared helpers of the CUnit suites: running a registry, reading files, test data. */
#ifndef SY_TESTUTIL_H
#define SY_TESTUTIL_H

#include <CUnit/CUnit.h>
#include <stdbool.h>
#include <stddef.h>

/* Runs every registered suite; returns the process exit status (0, 1). */
int sy_test_run(void);
/* Adds a suite with tests {name, fn, ...} terminated by {NULL, NULL}. */
void sy_test_add_suite(const char *name, const CU_TestInfo *tests);
/* Reads a whole file; returns a new NUL-terminated buffer (free()) or NULL. */
char *sy_test_read_file(const char *path, size_t *len);
/*
 * The names (suffix removed) of the files in dir ending in suffix, sorted by bytes;
 * *n of them. Free with sy_test_free_names(). NULL (and *n 0) when dir cannot be read.
 */
char **sy_test_list_files(const char *dir, const char *suffix, size_t *n);
void sy_test_free_names(char **names, size_t n);
/* The public test data directory ($SYNCHRO_TESTDATA), or NULL when absent. */
const char *sy_test_data_dir(void);
/* The source tree ($SYNCHRO_SRCDIR, else "."). */
const char *sy_test_src_dir(void);

/*
 * The failing allocator: sy_test_alloc_install() makes it libsynchro's allocator. It fails
 * allocation number fail_at (counting from 0; -1: none), and every later one when sticky.
 * It counts the calls and the blocks alive, so a suite checks that a failure leaks nothing.
 * sy_test_alloc_remove() gives back malloc, realloc and free.
 */
typedef struct {
	long calls;
	long fail_at;
	long live;
	bool sticky;
} sy_test_alloc_state;
extern sy_test_alloc_state sy_test_alloc;
void sy_test_alloc_install(long fail_at, bool sticky);
void sy_test_alloc_remove(void);

/* Exit status automake's harness reads as "skipped". */
#define SY_TEST_SKIP 77

#endif
