/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * walsync_metrics.c: synchro-walsync's metrics file (walsync_metrics.h).
 *
 * Layer: middle of src/walsync (doc/hacking.md).
 * Notes: One statement reads the primary's flush position, the slot's confirmed position
 * and the lease's epoch. The counters come from walsync_stats.h. The text goes to
 * <file>.tmp, which is renamed over <file>. So node_exporter never reads half a file. The
 * file holds counters, positions, the writer id and the slot name. It holds no row value
 * and no credential.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "store/changelog.h"
#include "synchro/buf.h"
#include "walsync/walsync.h"
#include "walsync/walsync_metrics.h"

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A label value with \, " and newline escaped (text format 0.0.4). */
static void label(sy_buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			sy_buf_printf(b, "\\%c", *s);
		else if (*s == '\n')
			sy_buf_puts(b, "\\n");
		else
			sy_buf_printf(b, "%c", *s);
	}
}

/* One metric, labelled with this instance's writer_id: several instances may share a host
 * (and node_exporter's one exposition of every file). */
static void metric(sy_buf *b, const char *id, const char *type, const char *name, const char *help,
                   double v)
{
	sy_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s{writer_id=\"%s\"} %.17g\n", name, help,
	              name, type, name, id, v);
}

static void sample(sy_ws_metrics *m, double at, uint64_t flush)
{
	int i;
	if (m->nsamples < SY_WS_LAG_SAMPLES) {
		i = m->nsamples++;
	} else {
		i = m->head;
		m->head = (m->head + 1) % SY_WS_LAG_SAMPLES;
	}
	m->samples[i].at = at;
	m->samples[i].flush = flush;
}

/* Seconds since the newest sampled flush position at or below confirmed: everything
 * committed before then is materialized. Without one, the oldest sample's age (at least
 * that far behind). */
static double lag_seconds(const sy_ws_metrics *m, double now, uint64_t flush, uint64_t confirmed)
{
	if (confirmed >= flush)
		return 0;
	double best = -1, oldest = now;
	for (int i = 0; i < m->nsamples; i++) {
		if (m->samples[i].at < oldest)
			oldest = m->samples[i].at;
		if (m->samples[i].flush <= confirmed && m->samples[i].at > best)
			best = m->samples[i].at;
	}
	return now - (best >= 0 ? best : oldest);
}

static bool write_file(const char *path, const sy_buf *b)
{
	char tmp[sizeof((walsync *)0)->metrics_file + 8];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (f == NULL)
		return false;
	/* node_exporter reads it as another user: readable by all whatever the umask (the unit
	 * sets UMask=0077). It holds no secret. */
	bool ok = fchmod(fileno(f), 0644) == 0;
	ok = fwrite(b->data, 1, b->len, f) == b->len && ok;
	ok = fclose(f) == 0 && ok;
	if (ok && rename(tmp, path) == 0)
		return true;
	int e = errno;
	(void)remove(tmp);
	errno = e;
	return false;
}

void sy_ws_metrics_tick(walsync *w, bool force)
{
	sy_ws_metrics *m = &w->metrics;
	int64_t now_ms = sy_clock_ms();
	if (w->metrics_file[0] == '\0' || (!force && now_ms < m->next_ms))
		return;
	m->next_ms = now_ms + (int64_t)w->metrics_interval_s * 1000;
	/* Timestamps for the exposition are this host's clock; the lag's samples are taken on
	 * the monotonic clock, so that a step of this host's clock does not enter the lag. */
	double now = wall_now(), mono = (double)now_ms / 1000.0;
	if (m->started_at == 0)
		m->started_at = now;

	sy_store_walsync_positions pos;
	bool known = false;
	if (w->db != NULL) {
		sy_error err = {0};
		known = sy_store_walsync_positions_get(w->db, w->slot, &pos, &err) == SY_STORE_OK;
		if (!known)
			sy_log(SY_LOG_WARNING, "metrics: %s", err.message);
	}
	const sy_ws_stats *s = &w->stats;
	sy_buf b = SY_BUF_INIT, idb = SY_BUF_INIT;
	label(&idb, w->writer_id);
	const char *id = idb.failed || idb.data == NULL ? "" : idb.data;
	sy_buf_puts(&b, "# HELP synchro_walsync_info This instance: its writer_id in the lease "
	                "and its slot.\n# TYPE synchro_walsync_info gauge\n"
	                "synchro_walsync_info{writer_id=\"");
	label(&b, w->writer_id);
	sy_buf_puts(&b, "\",slot=\"");
	label(&b, w->slot);
	sy_buf_puts(&b, "\"} 1\n");
	metric(&b, id, "gauge", "synchro_walsync_start_time_seconds",
	       "When this instance started, seconds since 1970.", m->started_at);
	metric(&b, id, "gauge", "synchro_walsync_last_loop_timestamp_seconds",
	       "When the loop last wrote this file, seconds since 1970 (stale: stopped or "
	       "stuck).",
	       now);
	metric(&b, id, "gauge", "synchro_walsync_database_connected",
	       "1 while the SQL connection is open and answered the last read, else 0.",
	       known ? 1 : 0);
	metric(&b, id, "gauge", "synchro_walsync_leader",
	       "1 while this instance holds the writer lease, else 0.", w->leader ? 1 : 0);
	if (known && pos.lease_found)
		metric(&b, id, "gauge", "synchro_walsync_writer_epoch",
		       "The writer lease's epoch (writer_epoch) as last read; every claim raises "
		       "it.",
		       (double)pos.lease_epoch);
	metric(&b, id, "counter", "synchro_walsync_lease_acquired_total",
	       "Claims of the writer lease this instance won.", (double)s->lease_acquired);
	metric(&b, id, "counter", "synchro_walsync_lease_takeovers_total",
	       "Claims won over a lease another writer_id held last (expired or stale).",
	       (double)s->lease_takeovers);
	metric(&b, id, "counter", "synchro_walsync_lease_losses_total",
	       "Times this instance found its lease lost while holding it (back to standby).",
	       (double)s->lease_lost);
	metric(&b, id, "counter", "synchro_walsync_stream_restarts_total",
	       "Replication streams closed other than at stop (errors, lost connections, lost "
	       "lease); each restarts from the slot.",
	       (double)s->stream_restarts);
	metric(&b, id, "counter", "synchro_walsync_slot_breaks_total",
	       "STREAM BREAKs resolved: the slot lost transactions, cursors before it expired.",
	       (double)s->slot_breaks);
	metric(&b, id, "counter", "synchro_walsync_changelog_entries_total",
	       "Changelog entries this instance wrote (rate(): the materialization rate).",
	       (double)s->entries_total);
	metric(&b, id, "counter", "synchro_walsync_transactions_total",
	       "Source transactions this instance materialized.", (double)s->txns_total);
	metric(&b, id, "counter", "synchro_walsync_changelog_commits_total",
	       "Changelog transactions this instance committed.", (double)s->commits);
	metric(&b, id, "counter", "synchro_walsync_bad_messages_total",
	       "Malformed logical messages skipped.", (double)s->bad_messages);
	metric(&b, id, "counter", "synchro_walsync_forged_messages_total",
	       "Version-fence messages no fence transition vouched for, and membership or link "
	       "messages after migration 23 (refused).",
	       (double)s->forged_messages);
	if (sy_ws_notify_enabled(w->notify)) {
		metric(&b, id, "counter", "synchro_walsync_notify_published_total",
		       "Live notifications the web server's pub/sub module accepted.",
		       (double)sy_ws_notify_published(w->notify));
		metric(&b, id, "counter", "synchro_walsync_notify_failed_total",
		       "Live notifications not published (refused, no answer, over "
		       "notify_timeout_ms); never sent again.",
		       (double)sy_ws_notify_failed(w->notify));
	}
	if (w->leader)
		metric(&b, id, "gauge", "synchro_walsync_commit_to_changelog_seconds",
		       "Commit to changelog time of the newest batch written.",
		       (double)s->last_lag_ms / 1000.0);
	if (known && (pos.slot_found || w->leader)) {
		uint64_t confirmed = pos.slot_found ? pos.slot_confirmed : 0;
		if (w->leader && w->confirmed > confirmed)
			confirmed = w->confirmed;
		sample(m, mono, pos.flush_lsn);
		metric(&b, id, "gauge", "synchro_walsync_lag_bytes",
		       "WAL bytes between the primary's flush position and the slot's confirmed "
		       "(materialized) position.",
		       pos.flush_lsn > confirmed ? (double)(pos.flush_lsn - confirmed) : 0);
		metric(&b, id, "gauge", "synchro_walsync_lag_seconds",
		       "Seconds since the primary's flush position was where the slot's confirmed "
		       "position is now (0: caught up; sampled every metrics_interval_s).",
		       lag_seconds(m, mono, pos.flush_lsn, confirmed));
	}
	if (b.failed) {
		sy_log(SY_LOG_WARNING, "metrics: out of memory");
	} else if (!write_file(w->metrics_file, &b)) {
		if (!m->failing)
			sy_log(SY_LOG_WARNING, "metrics: cannot write %s: %s", w->metrics_file,
			       strerror(errno));
		m->failing = true;
	} else if (m->failing) {
		sy_log(SY_LOG_INFO, "metrics: writing %s again", w->metrics_file);
		m->failing = false;
	}
	sy_buf_free(&b);
	sy_buf_free(&idb);
}
