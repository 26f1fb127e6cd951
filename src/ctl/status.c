/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * status.c: synchroctl status (synchroctl(1), "STATUS"), the one screen a sysadmin reads
 * first.
 *
 * Layer: middle of src/ctl (doc/hacking.md).
 * Notes: The facts come from store/overview.c. --json prints the same facts as one object.
 * It is built with the core's JSON builder and written in RFC 8785 form. The exit status
 * says healthy (0), needs attention (5, with the reasons named), or facts unread (1).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/commands.h"
#include "store/conn.h"
#include "store/overview.h"
#include "synchro/alloc.h"
#include "synchro/buf.h"
#include "synchro/jcs.h"
#include "synchro/json.h"

/* The human form's width, and the column its values start at. */
#define WIDTH     80
#define KEY_WIDTH 15

/* Defaults of the options (synchroctl(1)). */
#define DEFAULT_MAX_LAG_BYTES   (64LL * 1024 * 1024)
#define DEFAULT_EXACT_MAX_BYTES (16LL * 1024 * 1024)
#define DEFAULT_TIMEOUT_MS      5000

typedef struct {
	bool json;
	long long max_lag_bytes;
	long long exact_max_bytes;
} status_opts;

/* The reasons for "needs attention": stable names (--json "attention", synchroctl(1)). */
enum { MAX_REASONS = 8 };
typedef struct {
	const char *code;
	const char *text;
} reason;

static const reason R_NO_LEADER = {"no_leader", "no walsync holds a live writer lease"};
static const reason R_SLOT_MISSING = {"slot_missing", "the replication slot does not exist"};
static const reason R_SLOT_INACTIVE = {"slot_inactive", "no walsync streams from the slot"};
static const reason R_WAL_AT_RISK = {"wal_at_risk", "the slot's WAL is unreserved or lost"};
static const reason R_LAG = {"lag", "walsync is further behind than --max-lag-bytes"};
static const reason R_MIGRATIONS = {"migrations_pending", "run synchroctl migrate"};
static const reason R_NO_SCHEMA = {"no_schema", "no schema version is published"};

typedef struct {
	const reason *r[MAX_REASONS];
	int n;
} reasons;

static void add(reasons *rs, const reason *r)
{
	if (rs->n < MAX_REASONS)
		rs->r[rs->n++] = r;
}

static bool lease_live(const sy_store_overview *o)
{
	return o->lease.found && o->lease.expires_in_s > 0;
}

/* The lag that decides: the materialized position's (what pull can see), else the slot's. */
static long long decisive_lag(const sy_store_overview *o)
{
	return o->materialized_lag_bytes >= 0 ? o->materialized_lag_bytes : o->slot_lag_bytes;
}

static void judge(const sy_store_overview *o, const status_opts *opt, reasons *rs)
{
	rs->n = 0;
	if (!(o->unread & SY_OV_LEASE) && !lease_live(o))
		add(rs, &R_NO_LEADER);
	/* A standby has no logical slot of its own (PostgreSQL 15): its slot facts mean nothing. */
	if (!(o->unread & SY_OV_SERVER) && !o->in_recovery) {
		if (!o->slot_found)
			add(rs, &R_SLOT_MISSING);
		else if (!o->slot_active)
			add(rs, &R_SLOT_INACTIVE);
		if (o->slot_found && (strcmp(o->wal_status, "unreserved") == 0 ||
		                      strcmp(o->wal_status, "lost") == 0))
			add(rs, &R_WAL_AT_RISK);
		if (!(o->unread & SY_OV_LEASE) && decisive_lag(o) > opt->max_lag_bytes)
			add(rs, &R_LAG);
	}
	if (!(o->unread & SY_OV_SCHEMA)) {
		if (o->migrations_pending > 0)
			add(rs, &R_MIGRATIONS);
		if (!o->schema_found)
			add(rs, &R_NO_SCHEMA);
	}
}

static const char *group_name(unsigned g)
{
	switch (g) {
	case SY_OV_SCHEMA: return "schema";
	case SY_OV_SERVER: return "server";
	case SY_OV_LEASE: return "lease";
	case SY_OV_CLIENTS: return "clients";
	case SY_OV_SIZES: return "sizes";
	}
	return "?";
}

/* --- the human form ------------------------------------------------------------------------ */

/* One fact a line: "key:" padded to KEY_WIDTH, then the value; control characters of stored
 * text shown as '?', and the line cut to WIDTH columns (UTF-8 continuation bytes take none). */
static void fact(const char *key, const char *fmt, ...) SY_PRINTF(2, 3);
static void fact(const char *key, const char *fmt, ...)
{
	char line[1024];
	int n = snprintf(line, sizeof line, "%s:", key);
	while (n < KEY_WIDTH)
		line[n++] = ' ';
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
	va_end(ap);
	int cols = 0;
	size_t i = 0, cut = 0;
	for (; line[i]; i++) {
		unsigned char ch = (unsigned char)line[i];
		if (ch < 0x20 || ch == 0x7f)
			line[i] = '?';
		if ((ch & 0xc0) == 0x80)
			continue;
		if (cols == WIDTH - 3)
			cut = i;
		if (++cols > WIDTH)
			break;
	}
	if (cols > WIDTH)
		memcpy(line + cut, "...", 4);
	puts(line);
}

/* "512 bytes", or "1.5 MiB (1572864 bytes)". */
static const char *bytes_text(char *buf, size_t size, long long v)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
	if (v < 0)
		return "unknown";
	if (v < 1024) {
		snprintf(buf, size, "%lld bytes", v);
		return buf;
	}
	double d = (double)v / 1024;
	size_t u = 0;
	while (d >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
		d /= 1024;
		u++;
	}
	snprintf(buf, size, "%.1f %s (%lld bytes)", d, units[u], v);
	return buf;
}

static const char *or_dash(const char *s)
{
	return s && s[0] ? s : "-";
}

/* noun: the singular and the plural, "row\0rows". */
static void print_table(const char *key, const char *noun, const sy_store_table_size *t)
{
	char b[64];
	const char *plural = noun + strlen(noun) + 1;
	if (t->rows < 0)
		fact(key, "unknown %s (never analyzed), %s", plural,
		     bytes_text(b, sizeof b, t->bytes));
	else
		fact(key, "%s%lld %s%s, %s", t->estimated ? "~" : "", t->rows,
		     t->rows == 1 && !t->estimated ? noun : plural,
		     t->estimated ? " (estimated)" : "", bytes_text(b, sizeof b, t->bytes));
}

static void print_lease(const sy_store_overview *o)
{
	const sy_store_lease_status *l = &o->lease;
	if (!l->found) {
		fact("leader", "none (no walsync has ever held the writer lease)");
		return;
	}
	if (lease_live(o))
		fact("leader", "%s, epoch %lld, lease expires in %.1f s", l->writer_id, l->epoch,
		     l->expires_in_s);
	else
		fact("leader", "none (%s held epoch %lld; lease expired %.1f s ago)", l->writer_id,
		     l->epoch, -l->expires_in_s);
	fact("lease_until", "%s", l->lease_until);
	if (l->heartbeat_at[0])
		fact("heartbeat", "%.1f s ago (%s)", l->heartbeat_age_s, l->heartbeat_at);
	else
		fact("heartbeat", "never");
	fact("fencing_token", "%s (age not recorded)", l->token);
}

static void print_server(const sy_store_overview *o)
{
	char b[64];
	fact("server", "PostgreSQL %s, %s", o->server_version,
	     o->in_recovery ? "standby (in recovery)" : "primary");
	fact("database", "%s", o->database);
	fact(o->in_recovery ? "wal_replayed" : "wal_flushed", "%s", or_dash(o->wal_lsn));
	if (o->walsync_sessions < 0)
		fact("walsync", "unknown%s", o->in_recovery ? " (counted on the primary)" : "");
	else {
		long long standbys = o->walsync_sessions - (lease_live(o) ? 1 : 0);
		fact("walsync", "%lld connected (%s%lld standby)", o->walsync_sessions,
		     lease_live(o) ? "leader + " : "", standbys < 0 ? 0 : standbys);
	}
	if (!o->slot[0])
		return;
	if (!o->slot_found) {
		fact("slot", "%s (missing)", o->slot);
		return;
	}
	if (o->slot_active)
		fact("slot", "%s, active (pid %lld), wal_status %s", o->slot, o->slot_pid,
		     or_dash(o->wal_status));
	else
		fact("slot", "%s, inactive, wal_status %s", o->slot, or_dash(o->wal_status));
	fact("retained_wal", "%s since restart_lsn %s", bytes_text(b, sizeof b, o->retained_bytes),
	     or_dash(o->restart_lsn));
	if (o->safe_wal_size < 0)
		fact("safe_wal_size", "unlimited (max_slot_wal_keep_size -1)");
	else
		fact("safe_wal_size", "%s", bytes_text(b, sizeof b, o->safe_wal_size));
	fact("slot_lag", "%s behind (confirmed_flush_lsn %s)",
	     bytes_text(b, sizeof b, o->slot_lag_bytes), or_dash(o->confirmed_flush_lsn));
}

static void print_position(const sy_store_overview *o)
{
	char b[64];
	if (!o->position_known)
		fact("materialized", "unknown (no position recorded)");
	else
		fact("materialized", "%s behind (%s, recorded %.1f s ago)",
		     bytes_text(b, sizeof b, o->materialized_lag_bytes), o->materialized_lsn,
		     o->position_age_s);
	if (o->lease.lag_ms >= 0)
		fact("commit_lag", "%lld ms commit to changelog (walsync's last report)",
		     o->lease.lag_ms);
	const sy_store_last_break *br = &o->last_break;
	if (!br->found) {
		fact("stream_break", "none");
		return;
	}
	fact("stream_break", "%lld recorded, last at %s", br->count, br->detected_at);
	fact("break_reason", "%s", br->reason);
	fact("break_effect", "cursors before %s expired, %lld clients marked", br->horizon,
	     br->clients);
}

static void print_sizes(const sy_store_overview *o)
{
	print_table("batches", "row\0rows", &o->batches);
	print_table("mutations", "row\0rows", &o->mutations);
	print_table("changelog", "entry\0entries", &o->changelog);
	if (o->compacted_at[0])
		fact("horizon", "%s, compacted at %s", o->horizon, o->compacted_at);
	else
		fact("horizon", "%s, never compacted", or_dash(o->horizon));
	if (o->oldest_lsn[0]) {
		fact("oldest_entry", "%s committed %s", o->oldest_lsn, or_dash(o->oldest_at));
		fact("newest_entry", "%s committed %s", o->newest_lsn, or_dash(o->newest_at));
	}
}

static void print_human(const sy_store_overview *o, const reasons *rs, const char *health)
{
	char list[256] = "";
	for (int i = 0; i < rs->n; i++)
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
		         rs->r[i]->code);
	/* The names when they fit on the line; the attention lines below name them anyway. */
	if (rs->n == 0)
		fact("health", "%s", health);
	else if (KEY_WIDTH + strlen(health) + strlen(list) + 3 <= WIDTH)
		fact("health", "%s (%s)", health, list);
	else
		fact("health", "%s (%d reasons)", health, rs->n);
	for (int i = 0; i < rs->n; i++)
		fact("attention", "%s: %s", rs->r[i]->code, rs->r[i]->text);
	for (unsigned g = 1; g <= SY_OV_SIZES; g <<= 1)
		if (o->unread & g)
			fact("unread", "%s (%s)", group_name(g), o->unread_why);
	if (!(o->unread & SY_OV_SERVER))
		print_server(o);
	if (!(o->unread & SY_OV_SCHEMA)) {
		if (o->migrations_pending)
			fact("migration", "%d applied, %zu pending (this synchroctl has %d)",
			     o->migration, o->migrations_pending, o->migration_latest);
		else
			fact("migration", "%d (up to date)", o->migration);
		if (o->schema_found) {
			fact("schema", "version %lld, published %s", o->schema_version,
			     o->schema_published_at);
			fact("schema_hash", "%s", o->schema_hash);
		} else
			fact("schema", "none published");
	}
	if (!(o->unread & SY_OV_LEASE)) {
		print_lease(o);
		print_position(o);
	}
	if (!(o->unread & SY_OV_CLIENTS))
		fact("clients",
		     "%lld active, %lld retired (%lld registered; %lld connected in 24 h)",
		     o->clients - o->retired, o->retired, o->clients, o->seen_1d);
	if (!(o->unread & SY_OV_SIZES))
		print_sizes(o);
}

/* --- the JSON form ------------------------------------------------------------------------- */

typedef struct {
	sy_json_doc *doc;
	bool ok;
} jb;

static sy_json *j_obj(jb *b)
{
	return sy_json_new_object(b->doc);
}

static void put(jb *b, sy_json *o, const char *key, sy_json *v)
{
	if (!sy_json_object_put(b->doc, o, key, v))
		b->ok = false;
}

static sy_json *j_str(jb *b, const char *s) /* "" is null */
{
	return s[0] ? sy_json_new_cstring(b->doc, s) : sy_json_new_null(b->doc);
}

static sy_json *j_int(jb *b, long long v) /* negative is null (unknown) */
{
	return v >= 0 ? sy_json_new_int(b->doc, v) : sy_json_new_null(b->doc);
}

/* Seconds to the millisecond. */
static sy_json *j_secs(jb *b, double v, bool known)
{
	if (!known)
		return sy_json_new_null(b->doc);
	return sy_json_new_double(b->doc,
	                          (double)(long long)(v * 1000 + (v < 0 ? -0.5 : 0.5)) / 1000);
}

static sy_json *j_table(jb *b, const sy_store_table_size *t, const char *rows)
{
	sy_json *o = j_obj(b);
	put(b, o, rows, j_int(b, t->rows));
	char est[40];
	snprintf(est, sizeof est, "%s_estimated", rows);
	put(b, o, est, sy_json_new_bool(b->doc, t->estimated));
	put(b, o, "bytes", j_int(b, t->bytes));
	return o;
}

static sy_json *j_leader(jb *b, const sy_store_overview *o)
{
	const sy_store_lease_status *l = &o->lease;
	if (!l->found)
		return sy_json_new_null(b->doc);
	sy_json *v = j_obj(b);
	put(b, v, "writer_id", j_str(b, l->writer_id));
	put(b, v, "epoch", j_int(b, l->epoch));
	put(b, v, "fencing_token", j_str(b, l->token));
	put(b, v, "live", sy_json_new_bool(b->doc, lease_live(o)));
	put(b, v, "lease_until", j_str(b, l->lease_until));
	put(b, v, "lease_expires_in_s", j_secs(b, l->expires_in_s, true));
	put(b, v, "heartbeat_at", j_str(b, l->heartbeat_at));
	put(b, v, "heartbeat_age_s", j_secs(b, l->heartbeat_age_s, l->heartbeat_at[0] != 0));
	return v;
}

static sy_json *j_server(jb *b, const sy_store_overview *o)
{
	sy_json *v = j_obj(b);
	put(b, v, "version", j_str(b, o->server_version));
	put(b, v, "version_num", j_int(b, o->server_version_num));
	put(b, v, "in_recovery", sy_json_new_bool(b->doc, o->in_recovery));
	put(b, v, "database", j_str(b, o->database));
	put(b, v, "time", j_str(b, o->now));
	put(b, v, "wal_lsn", j_str(b, o->wal_lsn));
	return v;
}

static sy_json *j_slot(jb *b, const sy_store_overview *o)
{
	sy_json *v = j_obj(b);
	put(b, v, "name", j_str(b, o->slot));
	put(b, v, "exists", sy_json_new_bool(b->doc, o->slot_found));
	put(b, v, "active", sy_json_new_bool(b->doc, o->slot_active));
	put(b, v, "active_pid", j_int(b, o->slot_active ? o->slot_pid : -1));
	put(b, v, "wal_status", j_str(b, o->wal_status));
	put(b, v, "restart_lsn", j_str(b, o->restart_lsn));
	put(b, v, "confirmed_flush_lsn", j_str(b, o->confirmed_flush_lsn));
	put(b, v, "retained_wal_bytes", j_int(b, o->retained_bytes));
	put(b, v, "safe_wal_size_bytes", j_int(b, o->safe_wal_size));
	return v;
}

static sy_json *j_lag(jb *b, const sy_store_overview *o)
{
	bool server = !(o->unread & SY_OV_SERVER), lease = !(o->unread & SY_OV_LEASE);
	sy_json *v = j_obj(b);
	put(b, v, "slot_bytes", j_int(b, server ? o->slot_lag_bytes : -1));
	put(b, v, "materialized_bytes", j_int(b, lease ? o->materialized_lag_bytes : -1));
	put(b, v, "materialized_lsn", j_str(b, lease ? o->materialized_lsn : ""));
	put(b, v, "position_recorded_at", j_str(b, lease ? o->position_at : ""));
	put(b, v, "position_age_s", j_secs(b, o->position_age_s, lease && o->position_age_s >= 0));
	put(b, v, "commit_to_changelog_ms", j_int(b, lease ? o->lease.lag_ms : -1));
	return v;
}

static sy_json *j_breaks(jb *b, const sy_store_overview *o)
{
	const sy_store_last_break *br = &o->last_break;
	sy_json *v = j_obj(b);
	put(b, v, "count", sy_json_new_int(b->doc, br->found ? br->count : 0));
	if (!br->found) {
		put(b, v, "last", sy_json_new_null(b->doc));
		return v;
	}
	sy_json *last = j_obj(b);
	put(b, last, "detected_at", j_str(b, br->detected_at));
	put(b, last, "reason", j_str(b, br->reason));
	put(b, last, "slot_lsn", j_str(b, br->slot_lsn));
	put(b, last, "horizon", j_str(b, br->horizon));
	put(b, last, "clients", j_int(b, br->clients));
	put(b, v, "last", last);
	return v;
}

/* A group's members, or null for each when the group was not read. */
#define OR_NULL(group, expr) ((o->unread & (group)) ? sy_json_new_null(b->doc) : (expr))

static bool print_json(const sy_store_overview *o, const reasons *rs, const char *health)
{
	jb bb = {sy_json_doc_new(), true}, *b = &bb;
	if (!b->doc)
		return false;
	sy_json *root = j_obj(b);
	put(b, root, "health", sy_json_new_cstring(b->doc, health));
	sy_json *att = sy_json_new_array(b->doc);
	for (int i = 0; i < rs->n; i++)
		if (!sy_json_array_push(b->doc, att, sy_json_new_cstring(b->doc, rs->r[i]->code)))
			b->ok = false;
	put(b, root, "attention", att);
	sy_json *unread = sy_json_new_array(b->doc);
	for (unsigned g = 1; g <= SY_OV_SIZES; g <<= 1)
		if ((o->unread & g) &&
		    !sy_json_array_push(b->doc, unread, sy_json_new_cstring(b->doc, group_name(g))))
			b->ok = false;
	put(b, root, "unread", unread);
	put(b, root, "server", OR_NULL(SY_OV_SERVER, j_server(b, o)));
	sy_json *mig = j_obj(b);
	put(b, mig, "applied", j_int(b, o->migration));
	put(b, mig, "latest", j_int(b, o->migration_latest));
	put(b, mig, "pending", j_int(b, (long long)o->migrations_pending));
	put(b, root, "migration", OR_NULL(SY_OV_SCHEMA, mig));
	sy_json *schema = sy_json_new_null(b->doc);
	if (o->schema_found) {
		schema = j_obj(b);
		put(b, schema, "version", j_int(b, o->schema_version));
		put(b, schema, "hash", j_str(b, o->schema_hash));
		put(b, schema, "published_at", j_str(b, o->schema_published_at));
	}
	put(b, root, "schema", OR_NULL(SY_OV_SCHEMA, schema));
	put(b, root, "leader", OR_NULL(SY_OV_LEASE, j_leader(b, o)));
	sy_json *ws = j_obj(b);
	long long standbys = o->walsync_sessions - (lease_live(o) ? 1 : 0);
	put(b, ws, "sessions", j_int(b, o->walsync_sessions));
	put(b, ws, "standbys",
	    j_int(b, o->walsync_sessions < 0 ? -1
	             : standbys < 0          ? 0
	                                     : standbys));
	put(b, root, "walsync", OR_NULL(SY_OV_SERVER | SY_OV_LEASE, ws));
	put(b, root, "slot", OR_NULL(SY_OV_SERVER, j_slot(b, o)));
	put(b, root, "lag", j_lag(b, o));
	put(b, root, "stream_breaks", OR_NULL(SY_OV_LEASE, j_breaks(b, o)));
	sy_json *cl = j_obj(b);
	put(b, cl, "registered", j_int(b, o->clients));
	put(b, cl, "active", j_int(b, o->clients - o->retired));
	put(b, cl, "retired", j_int(b, o->retired));
	put(b, cl, "connected_24h", j_int(b, o->seen_1d));
	put(b, root, "clients", OR_NULL(SY_OV_CLIENTS, cl));
	sy_json *ledger = j_obj(b);
	put(b, ledger, "batches", j_table(b, &o->batches, "rows"));
	put(b, ledger, "mutations", j_table(b, &o->mutations, "rows"));
	put(b, root, "ledger", OR_NULL(SY_OV_SIZES, ledger));
	sy_json *chl = j_table(b, &o->changelog, "entries");
	put(b, chl, "horizon", j_str(b, o->horizon));
	put(b, chl, "compacted_at", j_str(b, o->compacted_at));
	put(b, chl, "oldest_lsn", j_str(b, o->oldest_lsn));
	put(b, chl, "oldest_committed_at", j_str(b, o->oldest_at));
	put(b, chl, "newest_lsn", j_str(b, o->newest_lsn));
	put(b, chl, "newest_committed_at", j_str(b, o->newest_at));
	put(b, root, "changelog", OR_NULL(SY_OV_SIZES, chl));

	sy_buf out;
	sy_buf_init(&out);
	sy_error err = {0};
	bool ok = b->ok && sy_jcs_write(&out, root, &err);
	if (ok) {
		fwrite(out.data, 1, out.len, stdout);
		fputc('\n', stdout);
	}
	sy_buf_free(&out);
	sy_json_doc_free(b->doc);
	return ok;
}

/* --- the command --------------------------------------------------------------------------- */

static bool parse_bytes(const char *s, long long *out)
{
	if (!s || !s[0] || strlen(s) > 18)
		return false;
	for (const char *p = s; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	*out = atoll(s);
	return true;
}

static int usage_error(const char *fmt, ...) SY_PRINTF(1, 2);
static int usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs("synchroctl: status: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return SY_CTL_EXIT_USAGE;
}

int sy_ctl_status(const sy_cfg *cfg, int argc, char **argv)
{
	status_opts opt = {false, DEFAULT_MAX_LAG_BYTES, DEFAULT_EXACT_MAX_BYTES};
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		if (strcmp(s, "--json") == 0) {
			opt.json = true;
		} else if (strcmp(s, "--max-lag-bytes") == 0 ||
		           strcmp(s, "--exact-max-bytes") == 0) {
			long long *dst = s[2] == 'm' ? &opt.max_lag_bytes : &opt.exact_max_bytes;
			if (i + 1 >= argc || !parse_bytes(argv[i + 1], dst))
				return usage_error("%s needs a number of bytes", s);
			i++;
		} else {
			return usage_error(
			        "unexpected argument '%s' (usage: synchroctl status [--json] "
			        "[--max-lag-bytes N] [--exact-max-bytes N])",
			        s);
		}
	}
	int code;
	PGconn *c = sy_ctl_open_db(cfg, &code);
	if (!c)
		return code;
	sy_error err = {0};
	sy_store_overview *o = sy_calloc(1, sizeof *o);
	sy_store_status st =
	        o ? sy_store_overview_get(c, sy_cfg_str(cfg, "walsync", "slot"),
	                                  opt.exact_max_bytes, DEFAULT_TIMEOUT_MS, o, &err)
	          : SY_STORE_NOMEM;
	sy_store_disconnect(c);
	if (st != SY_STORE_OK) {
		fprintf(stderr, "synchroctl: status: %s\n",
		        st == SY_STORE_NOMEM && !err.message[0] ? "out of memory" : err.message);
		sy_free(o);
		return st == SY_STORE_CONNECTION ? SY_CTL_EXIT_CONNECT : SY_CTL_EXIT_FAILURE;
	}
	reasons rs;
	judge(o, &opt, &rs);
	const char *health = o->unread ? "unknown" : rs.n ? "attention" : "ok";
	code = o->unread ? SY_CTL_EXIT_FAILURE : rs.n ? SY_CTL_EXIT_ATTENTION : SY_CTL_EXIT_OK;
	if (o->unread)
		fprintf(stderr, "synchroctl: status: some facts could not be read: %s\n",
		        o->unread_why);
	if (opt.json) {
		if (!print_json(o, &rs, health)) {
			fputs("synchroctl: status: out of memory\n", stderr);
			code = SY_CTL_EXIT_FAILURE;
		}
	} else {
		print_human(o, &rs, health);
	}
	sy_free(o);
	return code;
}
