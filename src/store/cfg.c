/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cfg.c: synchro.conf: the single table of options and its reader.
 *
 * Layer: base of src/store (doc/hacking.md).
 * Notes: Tests check the table against the man page and the sample configuration.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <libpq-fe.h>

#include "store/cfg.h"
#include "synchro/alloc.h"

#define NOLIMIT 0, 0, NULL

/*
 * Every option of every program. synchro.conf(5) and conf/synchro.conf.sample document
 * each entry; tests/unit/test_config fails when one of them misses an option.
 */
static const sy_cfg_option options[] = {
        {"database", "conninfo", SY_CFG_STRING, "",
         "libpq connection string; empty: the libpq environment (PGHOST, PGDATABASE, ...)",
         NOLIMIT},
        {"database", "pooler", SY_CFG_ENUM, "none",
         "what synchro-fcgi's conninfo reaches: none (PostgreSQL, or a session pool) or "
         "transaction (a transaction pool such as PgBouncer's pool_mode = transaction)",
         0, 0, "none|transaction"},
        {"database", "pull_conninfo", SY_CFG_STRING, "",
         "libpq connection string of a streaming replica /v3/pull and /v3/rebuild read from when "
         "it has replayed far enough; empty: the primary serves every read",
         NOLIMIT},

        {"fcgi", "listen", SY_CFG_STRING, "",
         "absolute UNIX socket path or host:port; empty: the socket inherited on fd 0", NOLIMIT},
        {"fcgi", "listen_public", SY_CFG_ENUM, "no",
         "yes: listen may be a TCP address other than loopback (logged as a warning); no: such "
         "an address is refused at start",
         0, 0, "no|yes"},
        {"fcgi", "listen_owner", SY_CFG_STRING, "", "owner of the UNIX socket; empty: unchanged",
         NOLIMIT},
        {"fcgi", "listen_group", SY_CFG_STRING, "", "group of the UNIX socket; empty: unchanged",
         NOLIMIT},
        {"fcgi", "listen_mode", SY_CFG_MODE, "0660", "permissions of the UNIX socket (octal)",
         NOLIMIT},
        {"fcgi", "workers", SY_CFG_INT, "4", "responder processes the master keeps running", 1, 256,
         NULL},
        {"fcgi", "max_requests", SY_CFG_INT, "10000",
         "requests a responder serves before it is replaced; 0: never", 0, 1000000000, NULL},
        {"fcgi", "body_timeout_ms", SY_CFG_INT, "30000",
         "longest time a request body takes to arrive before the request is answered 408", 100,
         3600000, NULL},
        {"fcgi", "lock_timeout_ms", SY_CFG_INT, "2000",
         "longest wait for a row lock before answering 503; 0: wait forever", 0, 600000, NULL},
        {"fcgi", "retry_after_s", SY_CFG_INT, "1", "Retry-After seconds sent with 429 and 503", 1,
         3600, NULL},
        {"fcgi", "pull_wait_ms", SY_CFG_INT, "5000",
         "longest wait of a pull for the client's accepted pushes to be materialized", 0, 600000,
         NULL},
        {"fcgi", "pull_replica_wait_ms", SY_CFG_INT, "50",
         "longest wait of a pull or rebuild page for the replica to replay the primary's position "
         "before reading the primary",
         0, 60000, NULL},
        {"fcgi", "max_inflight", SY_CFG_INT, "0",
         "push requests executing at once across all responders before 429; 0: no limit", 0, 100000,
         NULL},
        {"fcgi", "max_inflight_per_client", SY_CFG_INT, "1",
         "push requests of one client executing at once before 429; 0: no limit", 0, 100000, NULL},

        {"walsync", "slot", SY_CFG_STRING, "synchro", "logical replication slot name", NOLIMIT},
        {"walsync", "writer_id", SY_CFG_STRING, "",
         "this instance's name in the writer lease; empty: hostname:pid", NOLIMIT},
        {"walsync", "lease_s", SY_CFG_INT, "30", "writer lease duration in seconds", 1, 3600, NULL},
        {"walsync", "renew_s", SY_CFG_INT, "5", "seconds between lease renewals (heartbeats)", 1,
         3600, NULL},
        {"walsync", "stale_heartbeat_s", SY_CFG_INT, "15",
         "a standby takes the lease over when the heartbeat is older than this", 1, 3600, NULL},
        {"walsync", "batch_rows", SY_CFG_INT, "5000",
         "most changes one changelog statement writes (a batch of more uses several)", 1, 100000,
         NULL},
        {"walsync", "lag_log_s", SY_CFG_INT, "60",
         "seconds between the holder's lag and rate log lines; 0: never", 0, 86400, NULL},
        {"walsync", "metrics_file", SY_CFG_STRING, "",
         "Prometheus textfile (node_exporter's textfile collector) written every "
         "metrics_interval_s; empty: none",
         NOLIMIT},
        {"walsync", "metrics_interval_s", SY_CFG_INT, "5",
         "seconds between two writes of metrics_file", 1, 3600, NULL},
        {"walsync", "notify_url", SY_CFG_STRING, "",
         "live notifications: the web server's local publisher location, "
         "http://HOST:PORT/PATH/ (the user's channel id appended); empty: none",
         NOLIMIT},
        {"walsync", "notify_timeout_ms", SY_CFG_INT, "200",
         "most milliseconds the notifications of one changelog write may take", 1, 10000, NULL},

        {"log", "target", SY_CFG_ENUM, "stderr", "where logs go", 0, 0, "stderr|syslog"},
        {"log", "level", SY_CFG_ENUM, "info", "most verbose level written", 0, 0,
         "error|warning|info|debug"},
};

#define OPTION_COUNT (sizeof options / sizeof options[0])

struct sy_cfg {
	char *path;
	char *values[OPTION_COUNT]; /* NULL: not set, the default applies */
	unsigned lines[OPTION_COUNT];
};

const sy_cfg_option *sy_cfg_options(size_t *count)
{
	*count = OPTION_COUNT;
	return options;
}

static bool enum_has(const char *choices, const char *v)
{
	size_t n = strlen(v);
	const char *p = choices;
	while (n > 0 && *p) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);
		if (len == n && memcmp(p, v, n) == 0)
			return true;
		p = bar ? bar + 1 : p + len;
	}
	return false;
}

static bool parse_int(const char *v, long long *out)
{
	if (!((*v >= '0' && *v <= '9') || (*v == '-' && v[1] >= '0' && v[1] <= '9')))
		return false;
	errno = 0;
	char *end;
	long long x = strtoll(v, &end, 10);
	if (errno != 0 || *end != '\0')
		return false;
	*out = x;
	return true;
}

static bool parse_mode(const char *v, long long *out)
{
	size_t n = strlen(v);
	if (n < 1 || n > 4)
		return false;
	long long x = 0;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '7')
			return false;
		x = x * 8 + (v[i] - '0');
	}
	if (x > 0777)
		return false;
	*out = x;
	return true;
}

bool sy_cfg_value_valid(const sy_cfg_option *opt, const char *value, const char **why)
{
	long long x;
	const char *reason = NULL;
	switch (opt->type) {
	case SY_CFG_STRING: break;
	case SY_CFG_INT:
		if (!parse_int(value, &x) || x < opt->min || x > opt->max)
			reason = "expected an integer in range";
		break;
	case SY_CFG_MODE:
		if (!parse_mode(value, &x))
			reason = "expected an octal mode between 0 and 0777";
		break;
	case SY_CFG_ENUM:
		if (!enum_has(opt->choices, value))
			reason = "expected one of the listed words";
		break;
	}
	if (why)
		*why = reason;
	return reason == NULL;
}

static long find_option(const char *section, size_t slen, const char *key, size_t klen)
{
	for (size_t i = 0; i < OPTION_COUNT; i++) {
		if (strlen(options[i].section) == slen &&
		    memcmp(options[i].section, section, slen) == 0 &&
		    strlen(options[i].key) == klen && memcmp(options[i].key, key, klen) == 0)
			return (long)i;
	}
	return -1;
}

static bool section_known(const char *s, size_t n)
{
	for (size_t i = 0; i < OPTION_COUNT; i++)
		if (strlen(options[i].section) == n && memcmp(options[i].section, s, n) == 0)
			return true;
	return false;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

static void trim(const char **s, size_t *n)
{
	while (*n > 0 && is_blank(**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n > 0 && is_blank((*s)[*n - 1]))
		(*n)--;
}

/* Names are printed in messages only when they are plain words: a stray line may hold a secret. */
static bool plain_name(const char *s, size_t n)
{
	if (n == 0 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return false;
	}
	return true;
}

static bool line_error(sy_error *err, const char *name, unsigned line, const char *what)
{
	return sy_error_set(err, SY_ERR_INVALID_REQUEST, "%s:%u: %s", name, line, what);
}

void sy_cfg_free(sy_cfg *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < OPTION_COUNT; i++)
		sy_free(cfg->values[i]);
	sy_free(cfg->path);
	sy_free(cfg);
}

sy_cfg *sy_cfg_parse(const char *text, size_t len, const char *name, sy_error *err)
{
	char msg[SY_ERROR_MESSAGE_MAX];
	sy_cfg *cfg = sy_calloc(1, sizeof *cfg);
	if (!cfg || !(cfg->path = sy_strndup(name, strlen(name)))) {
		sy_error_set(err, SY_ERR_NOMEM, "out of memory");
		goto fail;
	}
	const char *section = NULL;
	size_t section_len = 0;
	unsigned lineno = 0;
	size_t pos = 0;
	while (pos < len) {
		const char *line = text + pos;
		const char *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) : len - pos;
		pos += n + (nl ? 1 : 0);
		lineno++;
		if (memchr(line, '\0', n)) {
			line_error(err, name, lineno, "NUL byte in line");
			goto fail;
		}
		trim(&line, &n);
		if (n == 0 || line[0] == '#' || line[0] == ';')
			continue;
		if (line[0] == '[') {
			if (line[n - 1] != ']') {
				line_error(err, name, lineno, "section header without closing ']'");
				goto fail;
			}
			const char *s = line + 1;
			size_t sn = n - 2;
			trim(&s, &sn);
			if (!section_known(s, sn)) {
				if (plain_name(s, sn))
					snprintf(msg, sizeof msg, "unknown section [%.*s]", (int)sn,
					         s);
				else
					snprintf(msg, sizeof msg, "unknown section");
				line_error(err, name, lineno, msg);
				goto fail;
			}
			section = s;
			section_len = sn;
			continue;
		}
		const char *eq = memchr(line, '=', n);
		if (!eq) {
			line_error(err, name, lineno,
			           "expected \"key = value\", \"[section]\" or a comment");
			goto fail;
		}
		const char *key = line;
		size_t kn = (size_t)(eq - line);
		const char *val = eq + 1;
		size_t vn = n - kn - 1;
		trim(&key, &kn);
		trim(&val, &vn);
		if (!plain_name(key, kn)) {
			line_error(err, name, lineno, "missing or malformed key before '='");
			goto fail;
		}
		if (!section) {
			snprintf(msg, sizeof msg, "key '%.*s' outside any [section]", (int)kn, key);
			line_error(err, name, lineno, msg);
			goto fail;
		}
		long i = find_option(section, section_len, key, kn);
		if (i < 0) {
			snprintf(msg, sizeof msg, "unknown key '%.*s' in section [%.*s]", (int)kn,
			         key, (int)section_len, section);
			line_error(err, name, lineno, msg);
			goto fail;
		}
		const sy_cfg_option *opt = &options[i];
		if (cfg->values[i]) {
			snprintf(msg, sizeof msg, "[%s] %s set twice (first on line %u)",
			         opt->section, opt->key, cfg->lines[i]);
			line_error(err, name, lineno, msg);
			goto fail;
		}
		char *v = sy_strndup(val, vn);
		if (!v) {
			sy_error_set(err, SY_ERR_NOMEM, "out of memory");
			goto fail;
		}
		cfg->values[i] = v;
		cfg->lines[i] = lineno;
		const char *why;
		if (!sy_cfg_value_valid(opt, v, &why)) {
			if (opt->type == SY_CFG_INT)
				snprintf(msg, sizeof msg,
				         "[%s] %s: expected an integer in %lld..%lld", opt->section,
				         opt->key, opt->min, opt->max);
			else if (opt->type == SY_CFG_ENUM)
				snprintf(msg, sizeof msg, "[%s] %s: expected one of %s",
				         opt->section, opt->key, opt->choices);
			else
				snprintf(msg, sizeof msg, "[%s] %s: %s", opt->section, opt->key,
				         why);
			line_error(err, name, lineno, msg);
			goto fail;
		}
	}
	return cfg;
fail:
	sy_cfg_free(cfg);
	return NULL;
}

/* Whether a libpq connection string (keyword/value or URI) carries a password. A string
 * libpq cannot parse is reported where it is used, without its text. */
static bool holds_password(const char *conninfo)
{
	if (conninfo == NULL || *conninfo == '\0')
		return false;
	char *msg = NULL;
	PQconninfoOption *opts = PQconninfoParse(conninfo, &msg);
	PQfreemem(msg);
	if (opts == NULL)
		return false;
	bool found = false;
	for (const PQconninfoOption *o = opts; o->keyword != NULL; o++)
		if (strcmp(o->keyword, "password") == 0 && o->val != NULL && *o->val != '\0')
			found = true;
	PQconninfoFree(opts);
	return found;
}

/*
 * A file holding a database password that every user of the host may read is refused, as
 * libpq ignores such a password file: the password is already out, and a program that
 * goes on with it hides that. Its owner and group are the administrator's choice (root and
 * the program's group, mode 0640).
 */
static bool check_mode(const sy_cfg *cfg, FILE *f, const char *path, sy_error *err)
{
	struct stat st;
	if (fstat(fileno(f), &st) != 0 || (st.st_mode & S_IROTH) == 0)
		return true;
	const char *key = holds_password(sy_cfg_str(cfg, "database", "conninfo")) ? "conninfo"
	                  : holds_password(sy_cfg_str(cfg, "database", "pull_conninfo"))
	                          ? "pull_conninfo"
	                          : NULL;
	if (key == NULL)
		return true;
	return sy_error_set(err, SY_ERR_INVALID_REQUEST,
	                    "%.120s: every user may read it (mode %04o) and [database] %s holds a "
	                    "password: chmod o-r it, or keep the password in ~/.pgpass",
	                    path, (unsigned)(st.st_mode & 07777), key);
}

sy_cfg *sy_cfg_load(const char *path, sy_error *err)
{
	sy_cfg *cfg = NULL;
	char *text = NULL;
	size_t len = 0, cap = 0;
	FILE *f = fopen(path, "rb");
	if (!f) {
		sy_error_set(err, SY_ERR_INVALID_REQUEST, "%s: cannot open: %s", path,
		             strerror(errno));
		return NULL;
	}
	for (;;) {
		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			char *t = sy_realloc(text, ncap);
			if (!t) {
				sy_error_set(err, SY_ERR_NOMEM, "out of memory");
				goto fail;
			}
			text = t;
			cap = ncap;
		}
		size_t got = fread(text + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		sy_error_set(err, SY_ERR_INVALID_REQUEST, "%s: read error", path);
		goto fail;
	}
	cfg = sy_cfg_parse(text ? text : "", len, path, err);
	if (cfg && !check_mode(cfg, f, path, err)) {
		sy_cfg_free(cfg);
		cfg = NULL;
	}
fail:
	fclose(f);
	sy_free(text);
	return cfg;
}

static size_t lookup(const char *section, const char *key, bool want_int)
{
	long i = find_option(section, strlen(section), key, strlen(key));
	if (i >= 0) {
		sy_cfg_type t = options[i].type;
		bool is_int = t == SY_CFG_INT || t == SY_CFG_MODE;
		if (is_int == want_int)
			return (size_t)i;
	}
	fprintf(stderr, "synchro: internal error: no %s option [%s] %s\n",
	        want_int ? "integer" : "string", section, key);
	abort();
}

const char *sy_cfg_str(const sy_cfg *cfg, const char *section, const char *key)
{
	size_t i = lookup(section, key, false);
	return cfg && cfg->values[i] ? cfg->values[i] : options[i].def;
}

long long sy_cfg_int(const sy_cfg *cfg, const char *section, const char *key)
{
	size_t i = lookup(section, key, true);
	const char *v = cfg && cfg->values[i] ? cfg->values[i] : options[i].def;
	long long x = 0;
	/* Values were checked on reading, defaults by the table's test. */
	if (options[i].type == SY_CFG_MODE)
		(void)parse_mode(v, &x);
	else
		(void)parse_int(v, &x);
	return x;
}

bool sy_cfg_is_set(const sy_cfg *cfg, const char *section, const char *key)
{
	long i = find_option(section, strlen(section), key, strlen(key));
	return cfg && i >= 0 && cfg->values[i] != NULL;
}

const char *sy_cfg_path(const sy_cfg *cfg)
{
	return cfg ? cfg->path : "";
}
