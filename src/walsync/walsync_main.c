/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * walsync_main.c: synchro-walsync's program: the command line, the settings of
 * synchro.conf [walsync], the signals, and the loop.
 *
 * Layer: top of src/walsync (doc/hacking.md).
 * Notes: SIGHUP reloads the lease timings, the log and [database] conninfo. The rest takes
 * effect at restart. The loop drives the lease (walsync_lease.c). While this instance
 * holds the lease, the loop drives the stream too (walsync_materialize.c).
 *
 * synchro-walsync(8) says what the program does. It materializes the version-fence
 * messages of the WAL into synchro.changelog, in commit order, as the single writer of the
 * lease. Standby instances wait to take over.
 */
#include "config.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "store/cfg.h"
#include "store/conn.h"
#include "synchro/alloc.h"
#include "walsync/stream.h"
#include "walsync/walsync.h"

static volatile sig_atomic_t reload_requested;

static void on_hup(int sig)
{
	(void)sig;
	reload_requested = 1;
}

static long env_long(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? strtol(v, NULL, 10) : 0;
}

static bool apply_settings(walsync *w, sy_cfg *cfg, bool first)
{
	const char *slot = sy_cfg_str(cfg, "walsync", "slot");
	if (!sy_ws_slot_name_valid(slot)) {
		sy_log(SY_LOG_ERR, "[walsync] slot must be 1..63 characters of a-z, 0-9 and _");
		return false;
	}
	int lease_s = (int)sy_cfg_int(cfg, "walsync", "lease_s");
	int renew_s = (int)sy_cfg_int(cfg, "walsync", "renew_s");
	int stale_s = (int)sy_cfg_int(cfg, "walsync", "stale_heartbeat_s");
	if (renew_s >= lease_s || renew_s >= stale_s) {
		sy_log(SY_LOG_ERR, "[walsync] renew_s must be below lease_s and stale_heartbeat_s");
		return false;
	}
	if (!first && (strcmp(slot, w->slot) != 0 ||
	               strcmp(sy_cfg_str(cfg, "walsync", "writer_id"),
	                      sy_cfg_str(w->cfg, "walsync", "writer_id")) != 0 ||
	               sy_cfg_int(cfg, "walsync", "batch_rows") != (long long)w->batch_rows))
		sy_log(SY_LOG_WARNING,
		       "slot, writer_id and batch_rows take effect at restart only");
	sy_log_level level = SY_LOG_INFO;
	(void)sy_log_level_parse(sy_cfg_str(cfg, "log", "level"), &level);
	sy_log_open("synchro-walsync", sy_cfg_str(cfg, "log", "target"), level);
	if (first) {
		w->conninfo = sy_cfg_str(cfg, "database", "conninfo");
		w->slot = slot;
		const char *id = sy_cfg_str(cfg, "walsync", "writer_id");
		if (id[0]) {
			snprintf(w->writer_id, sizeof w->writer_id, "%s", id);
		} else {
			char host[128] = "localhost";
			(void)gethostname(host, sizeof host - 1);
			host[sizeof host - 1] = '\0';
			snprintf(w->writer_id, sizeof w->writer_id, "%s:%ld", host, (long)getpid());
		}
	}
	w->lease_s = lease_s;
	w->renew_s = renew_s;
	w->stale_s = stale_s;
	w->lag_log_s = (int)sy_cfg_int(cfg, "walsync", "lag_log_s");
	const char *mf = sy_cfg_str(cfg, "walsync", "metrics_file");
	if (strlen(mf) >= sizeof w->metrics_file) {
		sy_log(SY_LOG_ERR, "[walsync] metrics_file: a path under %zu bytes",
		       sizeof w->metrics_file);
		return false;
	}
	snprintf(w->metrics_file, sizeof w->metrics_file, "%s", mf);
	w->metrics_interval_s = (int)sy_cfg_int(cfg, "walsync", "metrics_interval_s");
	w->metrics.next_ms = 0;
	if (!sy_ws_notify_configure(w->notify, sy_cfg_str(cfg, "walsync", "notify_url"),
	                            (int)sy_cfg_int(cfg, "walsync", "notify_timeout_ms")))
		return false;
	if (first) {
		w->batch_rows = (size_t)sy_cfg_int(cfg, "walsync", "batch_rows");
		/* The most changes walsync holds of one transaction (its memory bound). */
		w->piece_rows = w->batch_rows * 8;
	}
	return true;
}

/*
 * A new [database] conninfo (a failover by hand: the promoted standby's address): what was
 * decoded completely is written, then both connections and the stream close. The lease is
 * kept as it stands: the next round connects with the new string, renews the lease there
 * first (demoted if that database's lease is not this instance's), and checks the slot's
 * continuity before it streams (a promoted standby has no slot: STREAM BREAK).
 */
static bool reload_conninfo(walsync *w, const char *conninfo)
{
	if (strcmp(conninfo, w->conninfo) == 0)
		return true;
	if (!sy_store_conninfo_check(conninfo)) {
		sy_log(SY_LOG_ERR, "reload: invalid [database] conninfo (not shown: it may hold a "
		                   "password); keeping the running settings");
		return false;
	}
	char *copy = sy_strndup(conninfo, strlen(conninfo));
	if (copy == NULL) {
		sy_log(SY_LOG_ERR, "reload: out of memory; keeping the running settings");
		return false;
	}
	if (w->repl && w->leader && !w->in_txn && sy_store_connection_usable(w->db))
		sy_ws_flush_batch(w);
	sy_ws_stream_close(w);
	sy_ws_db_close(w);
	sy_free(w->conninfo_owned);
	w->conninfo_owned = copy;
	w->conninfo = copy;
	w->backoff_ms = 0;
	w->retry_at_ms = 0;
	sy_log(SY_LOG_INFO, "reload: [database] conninfo changed; reconnecting");
	return true;
}

/* SIGHUP: lease timings, the lag log, the metrics file, log settings and the conninfo; the
 * rest needs a restart. */
static void reload(walsync *w)
{
	if (!w->conf_path)
		return;
	sy_error err = {0};
	sy_cfg *cfg = sy_cfg_load(w->conf_path, &err);
	if (!cfg) {
		sy_log(SY_LOG_ERR, "reload: %s; keeping the running settings", err.message);
		return;
	}
	/* w->slot keeps pointing into the first configuration, w->conninfo into it or a copy. */
	if (apply_settings(w, cfg, false) &&
	    reload_conninfo(w, sy_cfg_str(cfg, "database", "conninfo")))
		sy_log(SY_LOG_INFO, "reloaded %s", w->conf_path);
	sy_cfg_free(cfg);
}

/* On stop: what was decoded completely is written and confirmed, then the lease ends. */
static void shutdown_leader(walsync *w)
{
	if (w->repl && w->leader && !w->in_txn)
		sy_ws_flush_batch(w);
	sy_ws_stream_close(w);
	sy_ws_lease_release(w);
}

static void run(walsync *w)
{
	int64_t now = sy_clock_ms();
	w->stats.since_ms = now;
	w->stats.next_log_ms = now + (int64_t)w->lag_log_s * 1000;
	while (!sy_ws_stopping()) {
		if (reload_requested) {
			reload_requested = 0;
			reload(w);
		}
		sy_ws_metrics_tick(w, false);
		now = sy_clock_ms();
		if (w->lag_log_s > 0 && now >= w->stats.next_log_ms) {
			w->stats.next_log_ms = now + (int64_t)w->lag_log_s * 1000;
			if (w->leader && w->repl)
				sy_ws_log_lag(w);
		}
		if (now < w->retry_at_ms) {
			/* The lease is renewed through a backoff too. */
			int64_t until = w->retry_at_ms;
			if (w->leader && w->db && w->next_renew_ms < until)
				until = w->next_renew_ms;
			sy_ws_nap(until - now);
			if (!(w->leader && w->db && sy_clock_ms() >= w->next_renew_ms))
				continue;
		}
		if (!w->db && !sy_ws_db_open(w))
			continue;
		if (!w->leader) {
			sy_ws_lease_claim(w);
			continue;
		}
		if (sy_clock_ms() >= w->next_renew_ms) {
			sy_ws_lease_renew(w);
			if (!w->leader || !w->db)
				continue;
		}
		if (sy_clock_ms() < w->retry_at_ms)
			continue;
		if (!w->repl) {
			sy_ws_stream_start(w);
			continue;
		}
		sy_ws_stream_step(w);
	}
	shutdown_leader(w);
	sy_ws_metrics_tick(w, true);
}

static void usage(FILE *f)
{
	fputs("usage: synchro-walsync [-c synchro.conf]\n"
	      "Materializes the version-fence messages of the WAL into synchro.changelog as the\n"
	      "single writer of the writer lease; see synchro-walsync(8).\n",
	      f);
}

int main(int argc, char **argv)
{
	walsync w;
	memset(&w, 0, sizeof w);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-c") == 0 && i + 1 < argc) {
			w.conf_path = argv[++i];
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(argv[i], "--version") == 0) {
			printf("synchro-walsync %s\n", PACKAGE_VERSION);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	sy_log_open("synchro-walsync", "stderr", SY_LOG_INFO);
	if ((w.notify = sy_ws_notify_new()) == NULL) {
		sy_log(SY_LOG_ERR, "out of memory");
		return 1;
	}
	if (w.conf_path) {
		sy_error err = {0};
		w.cfg = sy_cfg_load(w.conf_path, &err);
		if (!w.cfg) {
			sy_log(SY_LOG_ERR, "%s", err.message);
			sy_ws_notify_free(w.notify);
			return 2;
		}
	}
	if (!apply_settings(&w, w.cfg, true)) {
		sy_cfg_free(w.cfg);
		sy_ws_notify_free(w.notify);
		return 2;
	}
	w.exit_after_commits = env_long("SYNCHRO_WALSYNC_TEST_EXIT_AFTER_COMMITS");
	w.stop_before_write = env_long("SYNCHRO_WALSYNC_TEST_STOP_BEFORE_WRITE");
	w.batch = sy_store_changes_new(w.batch_rows);
	w.fences = sy_ws_fences_new();
	if (!w.batch || !w.fences) {
		sy_ws_fences_free(w.fences);
		sy_log(SY_LOG_ERR, "out of memory");
		sy_cfg_free(w.cfg);
		sy_ws_notify_free(w.notify);
		return 1;
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = sy_ws_on_stop; /* no SA_RESTART: poll() returns at once */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_hup;
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);

	sy_log(SY_LOG_INFO, "starting as %s, slot %s, lease %d s, renew %d s, stale heartbeat %d s",
	       w.writer_id, w.slot, w.lease_s, w.renew_s, w.stale_s);
	run(&w);
	sy_ws_db_close(&w);
	sy_store_changes_free(w.batch);
	sy_ws_fences_free(w.fences);
	sy_ws_notify_free(w.notify);
	sy_ws_mirror_free(&w);
	sy_free(w.arena);
	sy_free(w.conninfo_owned);
	sy_cfg_free(w.cfg);
	sy_log(SY_LOG_INFO, "stopped");
	return 0;
}
