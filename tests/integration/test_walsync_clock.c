/* SPDX-License-Identifier: BSD-2-Clause */
/* test_walsync.pgt: clock steps. synchro-walsync under libfaketime (Debian package faketime),
 * its wall clock hours off and then stepped while the monotonic clock runs on, as a host's
 * clock does when NTP steps it: the lease stays with its holder (the lease's times are the
 * database's), and the commit-to-changelog lag it reports is measured on the primary's
 * clock, never the difference between two hosts' clocks. */
#include "config.h"

#include <CUnit/CUnit.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pgtest.h"
#include "testutil.h"
#include "walsync_suite.h"

const char *faketime_library(void)
{
	static char path[512];
	if (path[0] == '\0') {
		glob_t g;
		if (glob("/usr/lib/*/faketime/libfaketime.so.1", 0, NULL, &g) == 0 &&
		    g.gl_pathc > 0)
			snprintf(path, sizeof path, "%s", g.gl_pathv[0]);
		else if (glob("/usr/lib/faketime/libfaketime.so.1", 0, NULL, &g) == 0 &&
		         g.gl_pathc > 0)
			snprintf(path, sizeof path, "%s", g.gl_pathv[0]);
		globfree(&g);
	}
	return path[0] ? path : NULL;
}

/* Writes libfaketime's offset (seconds, signed) for the processes reading path. */
static void set_clock(const char *path, long offset_s)
{
	FILE *f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fprintf(f, "%+ld\n", offset_s);
	CU_ASSERT(fclose(f) == 0);
}

/* Starts walsync `name` with its wall clock read from clock_file (libfaketime, the monotonic
 * clock left alone). */
static pid_t start_skewed(const char *name, const char *clock_file)
{
	/* A sanitizer build's runtime need not come first for this preload. */
	const char *asan = getenv("ASAN_OPTIONS");
	char *saved = asan ? strdup(asan) : NULL, opts[1024];
	snprintf(opts, sizeof opts, "%s%sverify_asan_link_order=0", asan ? asan : "",
	         asan && *asan ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
	setenv("FAKETIME_TIMESTAMP_FILE", clock_file, 1);
	setenv("FAKETIME_NO_CACHE", "1", 1);
	setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
	pid_t pid = start_walsync(name, "LD_PRELOAD", faketime_library());
	unsetenv("FAKETIME_TIMESTAMP_FILE");
	unsetenv("FAKETIME_NO_CACHE");
	unsetenv("FAKETIME_DONT_FAKE_MONOTONIC");
	if (saved)
		setenv("ASAN_OPTIONS", saved, 1);
	else
		unsetenv("ASAN_OPTIONS");
	free(saved);
	return pid;
}

/* One metric's value from the metrics file at path; fails the test when it is absent. */
static double metric_value(const char *path, const char *name)
{
	char *text = sy_test_read_file(path, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	char key[128];
	snprintf(key, sizeof key, "\n%s{", name);
	const char *p = strstr(text, key);
	double v = -1e300;
	if (p && (p = strchr(p, '}')) != NULL)
		v = strtod(p + 1, NULL);
	else
		CU_FAIL("a metric is missing from the metrics file");
	free(text);
	return v;
}

/* The lag the heartbeat stored after a write committed at least two renewals before. */
static long long lag_after_write(int id)
{
	char sql[128];
	snprintf(sql, sizeof sql, "INSERT INTO item (id) VALUES (%d)", id);
	pgt_exec(db, sql);
	CU_ASSERT(wait_true(WAIT_ROWS,
	                    "SELECT EXISTS (SELECT 1 FROM synchro.changelog WHERE"
	                    " table_id = 'item' AND pk = '%d')",
	                    id));
	pause_ms(2500);
	return peek_int("SELECT lag_ms FROM synchro.writer_lease WHERE role = 'walsync'");
}

void test_clock_steps(void)
{
	for (int i = 0; i < nprocs; i++)
		if (procs[i].running)
			(void)stop_walsync(procs[i].pid);
	char f_clock[1024], g_clock[1024], prom[1024], conf[1200];
	snprintf(f_clock, sizeof f_clock, "%s/F.clock", test_tmpdir());
	snprintf(g_clock, sizeof g_clock, "%s/G.clock", test_tmpdir());
	snprintf(prom, sizeof prom, "%s/F.prom", test_tmpdir());
	snprintf(conf, sizeof conf, "metrics_file = %s\nmetrics_interval_s = 1\n", prom);
	/* F's host is two hours ahead of the database's, G's an hour behind. */
	set_clock(f_clock, 7200);
	set_clock(g_clock, -3600);
	extra_conf = conf;
	pid_t f = start_skewed("F", f_clock);
	extra_conf = "";
	long long epoch = wait_leader("F");
	CU_ASSERT_FATAL(epoch > 0);
	pid_t g = start_skewed("G", g_clock);
	CU_ASSERT(wait_log("G", "standby: the writer lease is held by F", 10000));

	long long lag = lag_after_write(970);
	CU_ASSERT(lag >= 0 && lag < 60000);
	if (!(lag >= 0 && lag < 60000))
		fprintf(stderr, "clock +2h: lag_ms %lld\n", lag);

	/* F's clock steps three hours back: it renews on, and measures on the primary's clock. */
	set_clock(f_clock, -3600);
	lag = lag_after_write(971);
	CU_ASSERT(lag >= 0 && lag < 60000);
	pause_ms(3 * 3000);
	CU_ASSERT_EQUAL(peek_int("SELECT count(*) FROM synchro.writer_lease WHERE role ="
	                         " 'walsync' AND writer_id = 'F' AND lease_until > now()"),
	                1);
	CU_ASSERT_EQUAL(current_epoch(), epoch);
	double c2c = metric_value(prom, "synchro_walsync_commit_to_changelog_seconds");
	CU_ASSERT(c2c >= 0 && c2c < 60);
	double lagged = metric_value(prom, "synchro_walsync_lag_seconds");
	CU_ASSERT(lagged >= 0 && lagged < 60);
	if (!(c2c >= 0 && c2c < 60 && lagged >= 0 && lagged < 60))
		fprintf(stderr, "metrics: commit_to_changelog %g s, lag %g s\n", c2c, lagged);
	CU_ASSERT_EQUAL(stop_walsync(g), 0);
	CU_ASSERT_EQUAL(stop_walsync(f), 0);
}
