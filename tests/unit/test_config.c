/* SPDX-License-Identifier: BSD-2-Clause */
/* synchro.conf: the option table against its documentation, and the ini reader's rules. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/cfg.h"
#include "store/store.h"
#include "synchro/alloc.h"
#include "testutil.h"

static sy_cfg *parse(const char *text, sy_error *err)
{
	return sy_cfg_parse(text, strlen(text), "test.conf", err);
}

static void test_defaults_valid(void)
{
	size_t n;
	const sy_cfg_option *o = sy_cfg_options(&n);
	/* The options the programs are specified to read (later issues may add more). */
	static const char *const required[][2] = {{"database", "conninfo"},
	                                          {"fcgi", "listen"},
	                                          {"fcgi", "listen_owner"},
	                                          {"fcgi", "listen_group"},
	                                          {"fcgi", "listen_mode"},
	                                          {"fcgi", "workers"},
	                                          {"fcgi", "max_requests"},
	                                          {"fcgi", "lock_timeout_ms"},
	                                          {"fcgi", "retry_after_s"},
	                                          {"fcgi", "pull_wait_ms"},
	                                          {"fcgi", "max_inflight"},
	                                          {"fcgi", "max_inflight_per_client"},
	                                          {"walsync", "slot"},
	                                          {"walsync", "writer_id"},
	                                          {"walsync", "lease_s"},
	                                          {"walsync", "renew_s"},
	                                          {"walsync", "stale_heartbeat_s"},
	                                          {"log", "target"},
	                                          {"log", "level"}};
	for (size_t r = 0; r < sizeof required / sizeof required[0]; r++) {
		bool found = false;
		for (size_t i = 0; i < n; i++)
			found |= strcmp(o[i].section, required[r][0]) == 0 &&
			         strcmp(o[i].key, required[r][1]) == 0;
		if (!found)
			fprintf(stderr, "missing option [%s] %s\n", required[r][0], required[r][1]);
		CU_ASSERT(found);
	}
	for (size_t i = 0; i < n; i++) {
		const char *why = NULL;
		CU_ASSERT_PTR_NOT_NULL(o[i].doc);
		if (!sy_cfg_value_valid(&o[i], o[i].def, &why))
			CU_FAIL_FATAL("an option's default does not pass its own type");
		for (size_t j = 0; j < i; j++)
			CU_ASSERT(strcmp(o[i].section, o[j].section) != 0 ||
			          strcmp(o[i].key, o[j].key) != 0);
	}
}

/* The lines of text after the line equal to `header`, up to the next line starting with `next`. */
static const char *section_body(const char *text, const char *header, const char *next, size_t *len)
{
	size_t hl = strlen(header);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, header, hl) == 0 && (p[hl] == '\n' || p[hl] == '\0')) {
			const char *body = p + hl;
			const char *end = body;
			for (;;) {
				end = strchr(end + 1, '\n');
				if (!end || strncmp(end + 1, next, strlen(next)) == 0)
					break;
			}
			*len = end ? (size_t)(end - body) : strlen(body);
			return body;
		}
	}
	return NULL;
}

/* Whether body holds a line starting with prefix followed by key and one of the ends. */
static bool has_line(const char *body, size_t len, const char *prefix, const char *key,
                     const char *ends)
{
	char *copy = malloc(len + 2);
	if (!copy)
		return false;
	copy[0] = '\n';
	memcpy(copy + 1, body, len);
	copy[len + 1] = '\0';
	bool found = false;
	size_t pl = strlen(prefix), kl = strlen(key);
	for (const char *p = copy; (p = strchr(p, '\n')) != NULL && !found; p++) {
		const char *l = p + 1;
		if (strncmp(l, prefix, pl) == 0 && strncmp(l + pl, key, kl) == 0 &&
		    l[pl + kl] != '\0' && strchr(ends, l[pl + kl]))
			found = true;
	}
	free(copy);
	return found;
}

static char *read_src(const char *rel)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", sy_test_src_dir(), rel);
	size_t len;
	char *text = sy_test_read_file(path, &len);
	if (!text)
		fprintf(stderr, "cannot read %s\n", path);
	return text;
}

/* STYLE: one table of options; every one is in synchro.conf(5) and the sample config. */
static void test_documented(void)
{
	char *man = read_src("doc/synchro.conf.5");
	char *sample = read_src("conf/synchro.conf.sample");
	CU_ASSERT_PTR_NOT_NULL_FATAL(man);
	CU_ASSERT_PTR_NOT_NULL_FATAL(sample);
	size_t n;
	const sy_cfg_option *o = sy_cfg_options(&n);
	for (size_t i = 0; i < n; i++) {
		char header[64];
		size_t len;
		snprintf(header, sizeof header, ".SS [%s]", o[i].section);
		const char *body = section_body(man, header, ".SS", &len);
		if (!body || !has_line(body, len, ".B ", o[i].key, "\n ")) {
			fprintf(stderr, "synchro.conf.5 lacks [%s] %s\n", o[i].section, o[i].key);
			CU_FAIL("option missing from doc/synchro.conf.5");
		}
		snprintf(header, sizeof header, "[%s]", o[i].section);
		body = section_body(sample, header, "[", &len);
		if (!body || !(has_line(body, len, "", o[i].key, " =") ||
		               has_line(body, len, "# ", o[i].key, " ="))) {
			fprintf(stderr, "synchro.conf.sample lacks [%s] %s\n", o[i].section,
			        o[i].key);
			CU_FAIL("option missing from conf/synchro.conf.sample");
		}
	}
	/* And the sample itself is a valid configuration. */
	sy_error err = {0};
	sy_cfg *cfg = sy_cfg_parse(sample, strlen(sample), "synchro.conf.sample", &err);
	if (!cfg)
		fprintf(stderr, "%s\n", err.message);
	CU_ASSERT_PTR_NOT_NULL(cfg);
	sy_cfg_free(cfg);
	free(man);
	free(sample);
}

static void test_parse(void)
{
	sy_error err = {0};
	sy_cfg *cfg = parse("# comment\n"
	                    "; another\n"
	                    "\n"
	                    "[database]\n"
	                    "  conninfo =  host=/tmp dbname=x password=a#b;c  \r\n"
	                    "[ fcgi ]\n"
	                    "workers=8\n"
	                    "listen_mode = 600\n"
	                    "listen_owner =\n"
	                    "[log]\n"
	                    "\tlevel\t=\tdebug",
	                    &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
	CU_ASSERT_STRING_EQUAL(sy_cfg_str(cfg, "database", "conninfo"),
	                       "host=/tmp dbname=x password=a#b;c");
	CU_ASSERT_EQUAL(sy_cfg_int(cfg, "fcgi", "workers"), 8);
	CU_ASSERT_EQUAL(sy_cfg_int(cfg, "fcgi", "listen_mode"), 0600);
	CU_ASSERT_STRING_EQUAL(sy_cfg_str(cfg, "fcgi", "listen_owner"), "");
	CU_ASSERT(sy_cfg_is_set(cfg, "fcgi", "listen_owner"));
	CU_ASSERT_STRING_EQUAL(sy_cfg_str(cfg, "log", "level"), "debug");
	CU_ASSERT_STRING_EQUAL(sy_cfg_str(cfg, "log", "target"), "stderr");
	CU_ASSERT(!sy_cfg_is_set(cfg, "log", "target"));
	CU_ASSERT_EQUAL(sy_cfg_int(cfg, "fcgi", "pull_wait_ms"), 5000);
	CU_ASSERT_STRING_EQUAL(sy_cfg_path(cfg), "test.conf");
	sy_cfg_free(cfg);
}

static void test_defaults_without_file(void)
{
	CU_ASSERT_STRING_EQUAL(sy_cfg_str(NULL, "database", "conninfo"), "");
	CU_ASSERT_STRING_EQUAL(sy_cfg_str(NULL, "fcgi", "listen"), "");
	CU_ASSERT_EQUAL(sy_cfg_int(NULL, "fcgi", "pull_wait_ms"), 5000);
	CU_ASSERT_EQUAL(sy_cfg_int(NULL, "fcgi", "listen_mode"), 0660);
	CU_ASSERT_EQUAL(sy_cfg_int(NULL, "walsync", "lease_s"), 30);
	CU_ASSERT_EQUAL(sy_cfg_int(NULL, "walsync", "renew_s"), 5);
	CU_ASSERT_EQUAL(sy_cfg_int(NULL, "walsync", "stale_heartbeat_s"), 15);
	CU_ASSERT(!sy_cfg_is_set(NULL, "walsync", "lease_s"));
	CU_ASSERT_STRING_EQUAL(sy_cfg_path(NULL), "");
}

static void expect_error(const char *text, const char *message)
{
	sy_error err = {0};
	sy_cfg *cfg = parse(text, &err);
	CU_ASSERT_PTR_NULL(cfg);
	sy_cfg_free(cfg);
	if (strcmp(err.message, message) != 0)
		fprintf(stderr, "\n got: %s\nwant: %s\n", err.message, message);
	CU_ASSERT_STRING_EQUAL(err.message, message);
}

static void test_errors(void)
{
	expect_error("[database]\nconninfo = x\n\n# c\nconnifo = y\n",
	             "test.conf:5: unknown key 'connifo' in section [database]");
	expect_error("[database]\n[fcgi]\nconninfo = x\n",
	             "test.conf:3: unknown key 'conninfo' in section [fcgi]");
	expect_error("[datbase]\n", "test.conf:1: unknown section [datbase]");
	expect_error("conninfo = x\n", "test.conf:1: key 'conninfo' outside any [section]");
	expect_error("[database]\nconninfo = a\nconninfo = b\n",
	             "test.conf:3: [database] conninfo set twice (first on line 2)");
	expect_error("[fcgi]\nworkers = 0\n",
	             "test.conf:2: [fcgi] workers: expected an integer in 1..256");
	expect_error("[fcgi]\nworkers = 4x\n",
	             "test.conf:2: [fcgi] workers: expected an integer in 1..256");
	expect_error("[fcgi]\nworkers = \n",
	             "test.conf:2: [fcgi] workers: expected an integer in 1..256");
	expect_error("[fcgi]\nlisten_mode = 0888\n",
	             "test.conf:2: [fcgi] listen_mode: expected an octal mode between 0 and 0777");
	expect_error("[log]\ntarget = file\n",
	             "test.conf:2: [log] target: expected one of stderr|syslog");
	expect_error("[fcgi\n", "test.conf:1: section header without closing ']'");
	expect_error("[database]\nx\0y\n",
	             "test.conf:2: expected \"key = value\", \"[section]\" or a comment");
}

/* A stray line may hold a password: messages never repeat values or unparsable lines. */
static void test_no_echo(void)
{
	const char *cases[] = {"[database]\nhost=/tmp password=s3cr3t\n", "[database]\ns3cr3t\n",
	                       "[fcgi]\nworkers = s3cr3t\n", "[database]\n = s3cr3t\n",
	                       "[s3cr3t password]\n"};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		sy_error err = {0};
		sy_cfg *cfg = parse(cases[i], &err);
		CU_ASSERT_PTR_NULL(cfg);
		sy_cfg_free(cfg);
		CU_ASSERT(strstr(err.message, "s3cr3t") == NULL);
		CU_ASSERT(strncmp(err.message, "test.conf:", 10) == 0);
	}
}

static void test_load_file(void)
{
	char path[] = "/tmp/sy-test-config-XXXXXX";
	int fd = mkstemp(path);
	CU_ASSERT_FATAL(fd >= 0);
	FILE *f = fdopen(fd, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("[walsync]\nslot = s1\n[walsync]\nlease_s = 40\nbogus = 1\n", f);
	fclose(f);
	sy_error err = {0};
	sy_cfg *cfg = sy_cfg_load(path, &err);
	CU_ASSERT_PTR_NULL(cfg);
	char want[128];
	snprintf(want, sizeof want, "%s:5: unknown key 'bogus' in section [walsync]", path);
	CU_ASSERT_STRING_EQUAL(err.message, want);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("[walsync]\nslot = s1\n[walsync]\nlease_s = 40\n", f);
	fclose(f);
	cfg = sy_cfg_load(path, &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
	CU_ASSERT_STRING_EQUAL(sy_cfg_str(cfg, "walsync", "slot"), "s1");
	CU_ASSERT_EQUAL(sy_cfg_int(cfg, "walsync", "lease_s"), 40);
	sy_cfg_free(cfg);
	unlink(path);
	cfg = sy_cfg_load(path, &err);
	CU_ASSERT_PTR_NULL(cfg);
	CU_ASSERT(strstr(err.message, path) == err.message);
	CU_ASSERT(strstr(err.message, "cannot open") != NULL);
}

/* A file with a password in [database] conninfo or pull_conninfo is refused while every
 * user may read it, and loads once it is not; one without a password loads either way. */
static void test_password_mode(void)
{
	char path[] = "/tmp/sy-test-config-XXXXXX";
	int fd = mkstemp(path);
	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	struct {
		const char *text;
		const char *key; /* the key named in the refusal; NULL: accepted at 0644 */
	} cases[] = {
	        {"[database]\nconninfo = host=/tmp dbname=x password=s3cr3t\n", "conninfo"},
	        {"[database]\nconninfo = postgresql://u:s3cr3t@db/x\n", "conninfo"},
	        {"[database]\nconninfo = host=/tmp\npull_conninfo = host=r password=s3cr3t\n",
	         "pull_conninfo"},
	        {"[database]\nconninfo = host=/tmp dbname=x user=u\n", NULL},
	        {"[database]\nconninfo = host=/tmp password=\n", NULL},
	        {"[fcgi]\nworkers = 2\n", NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		FILE *f = fopen(path, "w");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		fputs(cases[i].text, f);
		fclose(f);
		CU_ASSERT_FATAL(chmod(path, 0644) == 0);
		sy_error err = {0};
		sy_cfg *cfg = sy_cfg_load(path, &err);
		if (cases[i].key == NULL) {
			CU_ASSERT_PTR_NOT_NULL(cfg);
		} else {
			CU_ASSERT_PTR_NULL(cfg);
			char want[300];
			snprintf(want, sizeof want,
			         "%s: every user may read it (mode 0644) and [database] %s holds a "
			         "password: chmod o-r it, or keep the password in ~/.pgpass",
			         path, cases[i].key);
			CU_ASSERT_STRING_EQUAL(err.message, want);
			CU_ASSERT(strstr(err.message, "s3cr3t") == NULL);
		}
		sy_cfg_free(cfg);
		CU_ASSERT_FATAL(chmod(path, 0640) == 0);
		cfg = sy_cfg_load(path, &err);
		CU_ASSERT_PTR_NOT_NULL(cfg);
		sy_cfg_free(cfg);
	}
	unlink(path);
}

/* Every allocation of the reader fails in turn: NULL with SY_ERR_NOMEM, never a crash. */
static void test_alloc_failures(void)
{
	const char *text = "[database]\nconninfo = x\n[fcgi]\nworkers = 3\nlisten = /tmp/s\n";
	bool succeeded = false;
	long failures = 0;
	for (long k = 0; k < 100 && !succeeded; k++) {
		sy_test_alloc_install(k, true);
		sy_error err = {0};
		sy_cfg *cfg = parse(text, &err);
		if (cfg) {
			succeeded = true;
			CU_ASSERT_EQUAL(sy_cfg_int(cfg, "fcgi", "workers"), 3);
		} else {
			CU_ASSERT_EQUAL(err.code, SY_ERR_NOMEM);
			failures++;
		}
		sy_cfg_free(cfg);
		CU_ASSERT_EQUAL(sy_test_alloc.live, 0);
	}
	sy_test_alloc_remove();
	CU_ASSERT(succeeded);
	CU_ASSERT(failures > 0);
}

static void expect_time(const char *pg, const char *want, bool ok)
{
	char out[SY_STORE_TIME_LEN + 1];
	CU_ASSERT_EQUAL(sy_store_format_time(pg, out), ok);
	CU_ASSERT_STRING_EQUAL(out, want);
}

/* timestamptz text (DateStyle ISO, any TimeZone) in server_time form, in UTC. */
static void test_format_time(void)
{
	expect_time("2026-01-02 03:04:05.5+00", "2026-01-02T03:04:05.500000Z", true);
	expect_time("2026-01-02 03:04:05.123456+00", "2026-01-02T03:04:05.123456Z", true);
	expect_time("2026-01-02 03:04:05+00", "2026-01-02T03:04:05.000000Z", true);
	expect_time("0001-01-01 00:00:00+00", "0001-01-01T00:00:00.000000Z", true);
	expect_time("", "", true);
	expect_time("infinity", "infinity", false);
	/* cut to fit */
	expect_time("2026-01-02 03:04:05.1234567+00", "2026-01-02 03:04:05.1234567", false);
	/* another session TimeZone: the same instant */
	expect_time("2026-01-02 03:04:05+01", "2026-01-02T02:04:05.000000Z", true);
	expect_time("2026-01-02 08:34:05.25+05:30", "2026-01-02T03:04:05.250000Z", true);
	expect_time("2026-01-01 19:04:05-08", "2026-01-02T03:04:05.000000Z", true);
	expect_time("1890-01-01 00:53:28+00:53:28", "1890-01-01T00:00:00.000000Z", true);
	expect_time("10000-01-01 00:30:00+01", "10000-01-01 00:30:00+01", false);
	expect_time("0001-01-01 00:30:00+01", "0001-01-01 00:30:00+01", false);
	expect_time("2026-01-02 03:04:05+1", "2026-01-02 03:04:05+1", false);
	expect_time("2026-01-02 03:04:05+01:60", "2026-01-02 03:04:05+01:60", false);
	expect_time("2026-01-02 03:04:05", "2026-01-02 03:04:05", false);
	expect_time("2026-01-02 03:04:05.+00", "2026-01-02 03:04:05.+00", false);
	expect_time("12026-01-02 03:04:05+00", "12026-01-02 03:04:05+00", false);
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"defaults pass their types", test_defaults_valid},
	        {"every option documented", test_documented},
	        {"parse", test_parse},
	        {"defaults without a file", test_defaults_without_file},
	        {"errors name file:line", test_errors},
	        {"values never echoed", test_no_echo},
	        {"load a file", test_load_file},
	        {"a password in a file every user may read", test_password_mode},
	        {"allocation failures", test_alloc_failures},
	        CU_TEST_INFO_NULL,
	};
	static const CU_TestInfo store_tests[] = {
	        {"timestamps as server_time", test_format_time},
	        CU_TEST_INFO_NULL,
	};
	sy_test_add_suite("config", tests);
	sy_test_add_suite("store helpers", store_tests);
	return sy_test_run();
}
