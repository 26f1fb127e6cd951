/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * admin.c: synchroctl's database commands (synchroctl(1)) over the store.
 *
 * Layer: middle of src/ctl (doc/hacking.md).
 * Rules: doc/contract.md#schema-manifest (schema publish and show),
 * doc/contract.md#retirement (client list and retire), doc/contract.md#cursors (changelog
 * compact).
 * Notes: The commands are init and migrate, schema publish and show, client list and
 * retire, ledger inspect and purge-retired, lease status and changelog compact. status is
 * in src/ctl/status.c.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/commands.h"
#include "store/clients.h"
#include "store/cfg.h"
#include "store/conn.h"
#include "store/lease.h"
#include "store/stream_continuity.h"
#include "store/ledger.h"
#include "store/migrate.h"
#include "store/pull.h"
#include "store/schema.h"
#include "synchro/alloc.h"
#include "synchro/manifest.h"

/* Options of the database commands; each command says which it accepts. */
typedef struct {
	const char *user;
	const char *client;
	const char *batch;
	const char *before;
	bool show_body;
	const char *pos[2]; /* positional arguments after the subcommand */
	int npos;
} args;

enum { OPT_USER = 1, OPT_CLIENT = 2, OPT_BATCH = 4, OPT_SHOW_BODY = 8, OPT_BEFORE = 16 };

static int fail_line(int code, const char *fmt, ...) SY_PRINTF(2, 3);
static int fail_line(int code, const char *fmt, ...)
{
	va_list ap;
	fputs("synchroctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

static int exit_code(sy_store_status st)
{
	switch (st) {
	case SY_STORE_OK: return SY_CTL_EXIT_OK;
	case SY_STORE_INVALID: return SY_CTL_EXIT_USAGE;
	case SY_STORE_NOT_FOUND: return SY_CTL_EXIT_NOTFOUND;
	case SY_STORE_CONNECTION: return SY_CTL_EXIT_CONNECT;
	case SY_STORE_FAILED:
	case SY_STORE_CONFLICT:
	case SY_STORE_NOMEM: break;
	}
	return SY_CTL_EXIT_FAILURE;
}

static int store_failure(sy_store_status st, const sy_error *err)
{
	return fail_line(exit_code(st), "%s", err->message);
}

/* Parses argv[first..] into a; allowed is a mask of OPT_*; max_pos positional arguments. */
static bool parse_args(int argc, char **argv, int first, unsigned allowed, int max_pos, args *a,
                       const char *cmd)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = {{"--user", OPT_USER},
	             {"--client", OPT_CLIENT},
	             {"--batch", OPT_BATCH},
	             {"--before", OPT_BEFORE}};
	memset(a, 0, sizeof *a);
	for (int i = first; i < argc; i++) {
		const char *s = argv[i];
		if (strcmp(s, "--show-body") == 0 && (allowed & OPT_SHOW_BODY)) {
			a->show_body = true;
			continue;
		}
		bool matched = false;
		for (size_t k = 0; k < sizeof names / sizeof names[0] && !matched; k++) {
			size_t n = strlen(names[k].name);
			if (!(allowed & names[k].bit) || strncmp(s, names[k].name, n) != 0 ||
			    (s[n] != '\0' && s[n] != '='))
				continue;
			const char *v = s[n] == '=' ? s + n + 1 : (i + 1 < argc ? argv[++i] : NULL);
			if (!v) {
				fail_line(SY_CTL_EXIT_USAGE, "%s: %s needs a value", cmd,
				          names[k].name);
				return false;
			}
			const char **slot = names[k].bit == OPT_USER     ? &a->user
			                    : names[k].bit == OPT_CLIENT ? &a->client
			                    : names[k].bit == OPT_BATCH  ? &a->batch
			                                                 : &a->before;
			*slot = v;
			matched = true;
		}
		if (matched)
			continue;
		if (s[0] == '-' && s[1] != '\0') {
			fail_line(SY_CTL_EXIT_USAGE, "%s: unknown option '%s'", cmd, s);
			return false;
		}
		if (a->npos >= max_pos) {
			fail_line(SY_CTL_EXIT_USAGE, "%s: unexpected argument '%s'", cmd, s);
			return false;
		}
		a->pos[a->npos++] = s;
	}
	return true;
}

static void print_note(void *arg, const char *line)
{
	(void)arg;
	printf("%s\n", line);
}

static int cmd_migrate(PGconn *c, bool roles)
{
	sy_error err = {0};
	size_t applied = 0;
	/* Refusals come before the roles are created: a refused init changes nothing. */
	sy_store_status st = sy_store_migrate_preflight(c, &err);
	if (roles && st == SY_STORE_OK)
		st = sy_store_create_roles(c, print_note, NULL, &err);
	if (st == SY_STORE_OK)
		st = sy_store_migrate(c, print_note, NULL, &applied, &err);
	if (st != SY_STORE_OK)
		return store_failure(st, &err);
	if (applied == 0)
		printf("migrations up to date\n");
	return SY_CTL_EXIT_OK;
}

/* Reads a whole file into a new NUL-terminated buffer (sy_free()); NULL with errno set. */
static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t n = 0, cap = 0;
	for (;;) {
		if (cap - n < 4096) {
			size_t ncap = cap ? cap * 2 : 65536;
			char *b = sy_realloc(buf, ncap + 1);
			if (!b) {
				sy_free(buf);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			buf = b;
			cap = ncap;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		sy_free(buf);
		errno = EIO;
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

static int cmd_schema_publish(const sy_cfg *cfg, const char *path)
{
	size_t len = 0;
	char *text = read_file(path, &len);
	if (!text)
		return fail_line(SY_CTL_EXIT_USAGE, "schema publish: %s: %s", path,
		                 strerror(errno));
	sy_error err = {0};
	sy_manifest *m = sy_manifest_parse(text, len, &err);
	sy_free(text);
	if (!m)
		return fail_line(err.code == SY_ERR_NOMEM ? SY_CTL_EXIT_FAILURE : SY_CTL_EXIT_USAGE,
		                 "schema publish: %s: invalid manifest: %s", path, err.message);
	int code;
	PGconn *c = sy_ctl_open_db(cfg, &code);
	if (c) {
		sy_store_published pub;
		sy_store_status st = sy_store_schema_publish(c, m, print_note, NULL, &pub, &err);
		if (st == SY_STORE_OK) {
			printf("version %lld hash %s%s\n", pub.version, pub.hash,
			       pub.created ? "" : " unchanged");
			code = SY_CTL_EXIT_OK;
		} else {
			/* A manifest that does not fit the catalog is a refusal, not bad usage. */
			code = fail_line(st == SY_STORE_INVALID ? SY_CTL_EXIT_FAILURE
			                                        : exit_code(st),
			                 "schema publish: %s", err.message);
		}
	}
	sy_store_disconnect(c);
	sy_manifest_free(m);
	return code;
}

static bool parse_positive(const char *s, long long *out)
{
	if (!s[0] || s[0] == '0' || strlen(s) > 18)
		return false;
	for (const char *p = s; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	*out = atoll(s);
	return true;
}

static int cmd_schema_show(PGconn *c, long long version)
{
	sy_error err = {0};
	sy_store_schema s;
	sy_store_status st = sy_store_schema_get(c, version, &s, &err);
	if (st != SY_STORE_OK)
		return store_failure(st, &err);
	printf("version %lld hash %s published %s\n", s.version, s.hash, s.published_at);
	fwrite(s.manifest, 1, s.manifest_len, stdout);
	fputc('\n', stdout);
	sy_store_schema_clear(&s);
	return SY_CTL_EXIT_OK;
}

/* Operator output: control characters of stored identities would garble the columns. */
static void put_field(const char *s)
{
	if (!s[0]) {
		fputc('-', stdout);
		return;
	}
	for (; *s; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, stdout);
}

static bool print_client(void *arg, const sy_store_client *cl)
{
	(void)arg;
	put_field(cl->client_id);
	fputc('\t', stdout);
	put_field(cl->user_id);
	printf("\t%lld\t%lld\t%lld\t", cl->generation, cl->accepted_write_epoch,
	       cl->materialized_write_epoch);
	put_field(cl->created_at);
	fputc('\t', stdout);
	put_field(cl->last_seen_at);
	fputc('\t', stdout);
	put_field(cl->retired_at);
	fputc('\n', stdout);
	return true;
}

static int cmd_client_list(PGconn *c, const char *user)
{
	sy_error err = {0};
	printf("client_id\tuser_id\tgeneration\taccepted_write_epoch\tmaterialized_write_epoch\t"
	       "created_at\tlast_seen_at\tretired_at\n");
	sy_store_status st = sy_store_client_list(c, user, print_client, NULL, NULL, &err);
	return st == SY_STORE_OK ? SY_CTL_EXIT_OK : store_failure(st, &err);
}

static int cmd_client_retire(PGconn *c, const char *user, const char *client_id)
{
	sy_error err = {0};
	sy_store_retirement ret;
	sy_store_status st = sy_store_client_retire(c, user, client_id, &ret, &err);
	if (st != SY_STORE_OK)
		return store_failure(st, &err);
	printf("retired client %s of user ", ret.client_id);
	put_field(user);
	printf(" at %s (retirement %s)\n", ret.retired_at, ret.retirement_id);
	return SY_CTL_EXIT_OK;
}

static bool print_mutation(void *arg, const sy_store_mutation *m)
{
	(void)arg;
	printf("mutation %d: ", m->ordinal);
	put_field(m->mutation_id);
	fputs(" table ", stdout);
	put_field(m->table_id);
	fputs(" pk ", stdout);
	put_field(m->pk);
	printf(" %s %s code ", m->operation, m->status);
	put_field(m->code);
	printf(" fingerprint %s completed %s\n", m->fingerprint, m->completed_at);
	if (m->outcome) {
		printf("outcome %d: ", m->ordinal);
		fwrite(m->outcome, 1, m->outcome_len, stdout);
		fputc('\n', stdout);
	}
	return true;
}

static int cmd_ledger_inspect(PGconn *c, const args *a)
{
	sy_error err = {0};
	sy_store_batch b;
	sy_store_status st =
	        sy_store_ledger_batch(c, a->user, a->client, a->batch, a->show_body, &b, &err);
	if (st != SY_STORE_OK)
		return store_failure(st, &err);
	fputs("user: ", stdout);
	put_field(a->user);
	printf("\nclient: %s\nbatch: %s\n", a->client, a->batch);
	printf("state: %s\n", b.state);
	if (b.http_status)
		printf("status: %d\n", b.http_status);
	else
		printf("status: -\n");
	printf("fingerprint: %s\n", b.fingerprint);
	printf("fingerprint_algorithm: %s\nfingerprint_version: %d\nfingerprint_domain: %s\n",
	       b.fp_algorithm, b.fp_version, b.fp_domain);
	printf("protocol_version: %d\nclient_generation: %lld\n", b.protocol_version,
	       b.client_generation);
	printf("schema: version %lld hash %s\n", b.schema_version, b.schema_hash);
	printf("atomic: %s\n", b.atomic ? "true" : "false");
	printf("created_at: %s\ncompleted_at: %s\n", b.created_at,
	       b.completed_at[0] ? b.completed_at : "-");
	printf("mutations: %lld\n", b.mutation_count);
	st = sy_store_ledger_mutations(c, a->user, a->client, a->batch, a->show_body,
	                               print_mutation, NULL, &err);
	if (a->show_body && b.response) {
		fputs("response: ", stdout);
		fwrite(b.response, 1, b.response_len, stdout);
		fputc('\n', stdout);
	} else if (a->show_body) {
		printf("response: -\n");
	} else {
		printf("response: (hidden; --show-body prints the stored bodies)\n");
	}
	sy_store_batch_clear(&b);
	return st == SY_STORE_OK ? SY_CTL_EXIT_OK : store_failure(st, &err);
}

static int cmd_ledger_purge(PGconn *c)
{
	sy_error err = {0};
	sy_store_purged p;
	sy_store_status st = sy_store_ledger_purge_retired(c, &p, &err);
	if (st != SY_STORE_OK)
		return store_failure(st, &err);
	printf("purged %lld batches and %lld mutations of %lld retired clients; row fences kept\n",
	       p.batches, p.mutations, p.clients);
	return SY_CTL_EXIT_OK;
}

static int cmd_lease_status(PGconn *c, const sy_cfg *cfg)
{
	sy_error err = {0};
	sy_store_lease_status ls;
	sy_store_status st =
	        sy_store_lease_status_get(c, sy_cfg_str(cfg, "walsync", "slot"), &ls, &err);
	if (st != SY_STORE_OK)
		return store_failure(st, &err);
	fputs("holder: ", stdout);
	put_field(ls.found ? ls.writer_id : "");
	fputc('\n', stdout);
	if (ls.found) {
		printf("writer_epoch: %lld\nfencing_token: %s\n", ls.epoch, ls.token);
		if (ls.expires_in_s > 0)
			printf("lease_until: %s (expires in %.1f s)\n", ls.lease_until,
			       ls.expires_in_s);
		else
			printf("lease_until: %s (expired %.1f s ago)\n", ls.lease_until,
			       -ls.expires_in_s);
		if (ls.heartbeat_at[0])
			printf("heartbeat_at: %s (age %.1f s)\n", ls.heartbeat_at,
			       ls.heartbeat_age_s);
		else
			printf("heartbeat_at: -\n");
	}
	fputs("slot: ", stdout);
	put_field(ls.slot);
	if (ls.slot[0] && !ls.slot_found)
		fputs(" (missing)", stdout);
	else if (ls.slot_active)
		printf(" (active, pid %lld)", ls.slot_pid);
	else if (ls.slot_found)
		fputs(" (inactive)", stdout);
	fputc('\n', stdout);
	fputs("confirmed_flush_lsn: ", stdout);
	put_field(ls.confirmed_flush_lsn);
	fputc('\n', stdout);
	if (ls.lag_bytes >= 0)
		printf("lag_bytes: %lld\n", ls.lag_bytes);
	else
		printf("lag_bytes: -\n");
	fputs("materialized_lsn: ", stdout);
	put_field(ls.materialized_lsn);
	fputc('\n', stdout);
	if (ls.lag_ms >= 0)
		printf("lag_ms: %lld\n", ls.lag_ms);
	else
		printf("lag_ms: -\n");
	/* Slot continuity (doc/operations.md): the last break walsync found, never hidden. */
	sy_store_last_break br;
	st = sy_store_last_break_get(c, &br, &err);
	if (st != SY_STORE_OK)
		return store_failure(st, &err);
	if (br.found)
		printf("stream_break: %lld recorded; last at %s: %s; cursors before %s expired, "
		       "accepted writes of %lld clients marked materialized\n",
		       br.count, br.detected_at, br.reason, br.horizon, br.clients);
	else
		printf("stream_break: none\n");
	if (!ls.found)
		return fail_line(SY_CTL_EXIT_NOTFOUND,
		                 "lease status: no walsync has held the writer lease");
	return SY_CTL_EXIT_OK;
}

/*
 * A duration as changelog compact takes it: one or more <digits><unit> with unit s, m, h or d
 * ("7d", "12h", "30m", "1d12h"), at most 100 years; the seconds in *out.
 */
static bool parse_duration(const char *s, long long *out)
{
	const long long max = 100LL * 366 * 86400;
	long long total = 0;
	if (*s == '\0')
		return false;
	while (*s) {
		long long n = 0;
		const char *start = s;
		while (*s >= '0' && *s <= '9') {
			n = n * 10 + (*s++ - '0');
			if (n > max)
				return false;
		}
		if (s == start)
			return false;
		long long unit = *s == 's'   ? 1
		                 : *s == 'm' ? 60
		                 : *s == 'h' ? 3600
		                 : *s == 'd' ? 86400
		                             : 0;
		if (unit == 0 || n > max / unit)
			return false;
		total += n * unit;
		if (total > max)
			return false;
		s++;
	}
	*out = total;
	return true;
}

static int cmd_changelog_compact(PGconn *c, long long before_s)
{
	sy_error err = {0};
	sy_store_compacted out;
	sy_store_status st = sy_store_changelog_compact(c, before_s, &out, &err);
	if (st != SY_STORE_OK)
		return store_failure(st, &err);
	char cursor[SY_STORE_CURSOR_LEN + 1];
	sy_store_cursor_format(&out.horizon, cursor);
	printf("removed %lld changelog entries committed before %s and %lld rebuild sessions\n",
	       out.removed, out.cutoff, out.sessions);
	printf("horizon %s%s: older cursors answer cursor_expired\n", cursor,
	       out.moved ? "" : " (unchanged)");
	return SY_CTL_EXIT_OK;
}

/* The commands that need the database, once their arguments are valid. */
typedef enum {
	C_INIT,
	C_MIGRATE,
	C_SCHEMA_SHOW,
	C_CLIENT_LIST,
	C_CLIENT_RETIRE,
	C_LEDGER_INSPECT,
	C_LEDGER_PURGE,
	C_LEASE_STATUS,
	C_CHANGELOG_COMPACT
} db_command;

static int run(const sy_cfg *cfg, db_command cmd, const args *a, long long version)
{
	int code;
	PGconn *c = sy_ctl_open_db(cfg, &code);
	if (!c)
		return code;
	switch (cmd) {
	case C_INIT: code = cmd_migrate(c, true); break;
	case C_MIGRATE: code = cmd_migrate(c, false); break;
	case C_SCHEMA_SHOW: code = cmd_schema_show(c, version); break;
	case C_CLIENT_LIST: code = cmd_client_list(c, a->user); break;
	case C_CLIENT_RETIRE: code = cmd_client_retire(c, a->user, a->pos[0]); break;
	case C_LEDGER_INSPECT: code = cmd_ledger_inspect(c, a); break;
	case C_LEDGER_PURGE: code = cmd_ledger_purge(c); break;
	case C_LEASE_STATUS: code = cmd_lease_status(c, cfg); break;
	case C_CHANGELOG_COMPACT: code = cmd_changelog_compact(c, version); break;
	}
	sy_store_disconnect(c);
	return code;
}

static int dispatch(const sy_cfg *cfg, int argc, char **argv)
{
	const char *cmd = argv[0];
	const char *sub = argc > 1 ? argv[1] : "";
	args a;
	if (strcmp(cmd, "init") == 0 || strcmp(cmd, "migrate") == 0) {
		if (!parse_args(argc, argv, 1, 0, 0, &a, cmd))
			return SY_CTL_EXIT_USAGE;
		return run(cfg, cmd[0] == 'i' ? C_INIT : C_MIGRATE, &a, 0);
	}
	if (strcmp(cmd, "schema") == 0 && strcmp(sub, "publish") == 0) {
		if (!parse_args(argc, argv, 2, 0, 1, &a, "schema publish"))
			return SY_CTL_EXIT_USAGE;
		if (a.npos != 1)
			return fail_line(SY_CTL_EXIT_USAGE,
			                 "usage: synchroctl schema publish FILE");
		return cmd_schema_publish(cfg, a.pos[0]);
	}
	if (strcmp(cmd, "schema") == 0 && strcmp(sub, "show") == 0) {
		long long version = 0;
		if (!parse_args(argc, argv, 2, 0, 1, &a, "schema show"))
			return SY_CTL_EXIT_USAGE;
		if (a.npos == 1 && !parse_positive(a.pos[0], &version))
			return fail_line(SY_CTL_EXIT_USAGE,
			                 "schema show: VERSION must be a positive integer");
		return run(cfg, C_SCHEMA_SHOW, &a, version);
	}
	if (strcmp(cmd, "client") == 0 && strcmp(sub, "list") == 0) {
		if (!parse_args(argc, argv, 2, OPT_USER, 0, &a, "client list"))
			return SY_CTL_EXIT_USAGE;
		return run(cfg, C_CLIENT_LIST, &a, 0);
	}
	if (strcmp(cmd, "client") == 0 && strcmp(sub, "retire") == 0) {
		if (!parse_args(argc, argv, 2, OPT_USER, 1, &a, "client retire"))
			return SY_CTL_EXIT_USAGE;
		if (!a.user || a.npos != 1)
			return fail_line(SY_CTL_EXIT_USAGE,
			                 "usage: synchroctl client retire --user USER CLIENT_ID");
		return run(cfg, C_CLIENT_RETIRE, &a, 0);
	}
	if (strcmp(cmd, "ledger") == 0 && strcmp(sub, "inspect") == 0) {
		if (!parse_args(argc, argv, 2, OPT_USER | OPT_CLIENT | OPT_BATCH | OPT_SHOW_BODY, 0,
		                &a, "ledger inspect"))
			return SY_CTL_EXIT_USAGE;
		if (!a.user || !a.client || !a.batch)
			return fail_line(
			        SY_CTL_EXIT_USAGE,
			        "usage: synchroctl ledger inspect --user USER --client CLIENT_ID "
			        "--batch BATCH_ID [--show-body]");
		return run(cfg, C_LEDGER_INSPECT, &a, 0);
	}
	if (strcmp(cmd, "ledger") == 0 && strcmp(sub, "purge-retired") == 0) {
		if (!parse_args(argc, argv, 2, 0, 0, &a, "ledger purge-retired"))
			return SY_CTL_EXIT_USAGE;
		return run(cfg, C_LEDGER_PURGE, &a, 0);
	}
	if (strcmp(cmd, "lease") == 0 && strcmp(sub, "status") == 0) {
		if (!parse_args(argc, argv, 2, 0, 0, &a, "lease status"))
			return SY_CTL_EXIT_USAGE;
		return run(cfg, C_LEASE_STATUS, &a, 0);
	}
	if (strcmp(cmd, "status") == 0)
		return sy_ctl_status(cfg, argc, argv);
	if (strcmp(cmd, "changelog") == 0 && strcmp(sub, "compact") == 0) {
		long long before;
		if (!parse_args(argc, argv, 2, OPT_BEFORE, 0, &a, "changelog compact"))
			return SY_CTL_EXIT_USAGE;
		if (!a.before)
			return fail_line(SY_CTL_EXIT_USAGE,
			                 "usage: synchroctl changelog compact --before DURATION");
		if (!parse_duration(a.before, &before))
			return fail_line(SY_CTL_EXIT_USAGE,
			                 "changelog compact: --before: expected a duration such as "
			                 "7d, 12h, 30m or 1d12h");
		return run(cfg, C_CHANGELOG_COMPACT, &a, before);
	}
	if (strcmp(cmd, "schema") == 0 || strcmp(cmd, "client") == 0 ||
	    strcmp(cmd, "ledger") == 0 || strcmp(cmd, "lease") == 0 ||
	    strcmp(cmd, "changelog") == 0)
		return fail_line(SY_CTL_EXIT_USAGE, "%s: unknown subcommand '%s'", cmd, sub);
	return fail_line(SY_CTL_EXIT_USAGE, "unknown command '%s' (synchroctl --help lists them)",
	                 cmd);
}

int sy_ctl_admin(const char *conf, int argc, char **argv)
{
	sy_cfg *cfg = NULL;
	if (conf) {
		sy_error err = {0};
		cfg = sy_cfg_load(conf, &err);
		if (!cfg)
			return fail_line(SY_CTL_EXIT_USAGE, "%s", err.message);
	}
	int code = dispatch(cfg, argc, argv);
	sy_cfg_free(cfg);
	fflush(stdout);
	return code;
}
