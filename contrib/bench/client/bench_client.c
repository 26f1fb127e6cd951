/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * contrib/bench/client: libsynchro-client's own figures (run through contrib/bench/client/run).
 *   bench_client writes DB URL USER:PW N PER_TXN   durable local writes per second, and each
 *                                                  transaction's time (begin to committed)
 *   bench_client sync DB URL USER:PW N             N queued intents, then one sync: push-done
 *                                                  time, sync-done time (pull of the echoes)
 *   bench_client rows DB URL USER:PW N             a new device's first sync of the user's N
 *                                                  rows (rows/s, peak RSS), then queries over
 *                                                  the synced tables: a point query by pk, an
 *                                                  indexed query of 50 rows, a live query's
 *                                                  refresh after a local write
 * Prints one JSON object per run on stdout.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <uuid/uuid.h>

#include "synchro/client.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct {
	bool pushing;
	double done, done_cpu; /* when the phase first left pushing */
	bool rebuilding;
	double rebuilt, rebuilt_cpu; /* when the phase first left rebuilding */
} watch;

static void on_event(void *ctx, sy_client_event_kind kind, const char *table, const char *pk,
                     const char *mutation_id);

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static watch W;
static sy_client *current;

static sy_client *open_client(const char *db, const char *url, char *userpw)
{
	char *pw = strchr(userpw, ':');
	if (pw != NULL)
		*pw++ = '\0';
	sy_client_options o = {.url = url,
	                       .user = userpw,
	                       .password = pw,
	                       .batch_max = 1000,
	                       .listener = on_event,
	                       .listener_ctx = &W};
	sy_client_error err;
	sy_client *c = NULL;
	sy_client_rc rc = sy_client_open(db, &o, &c, &err);
	current = c; /* the first sync's phases are watched too */
	if (rc != SY_CLIENT_OK ||
	    /* 10 min: the first sync rebuilds every row of the user, slow under a profiler */
	    sy_client_sync(c, 600000, &err) != SY_CLIENT_OK) {
		fprintf(stderr, "bench_client: %s\n", err.message);
		sy_client_close(c);
		return NULL;
	}
	return c;
}

/* Push is done when the phase leaves pushing: pull only starts with no batch unsettled. */
static void on_event(void *ctx, sy_client_event_kind kind, const char *table, const char *pk,
                     const char *mutation_id)
{
	watch *w = ctx;
	(void)table;
	(void)pk;
	(void)mutation_id;
	if (kind != SY_CLIENT_EVENT_PHASE || current == NULL)
		return;
	sy_client_status s;
	if (sy_client_status_get(current, &s, NULL) != SY_CLIENT_OK)
		return;
	if (s.phase == SY_PHASE_REBUILDING)
		w->rebuilding = true;
	else if (w->rebuilding && w->rebuilt == 0)
		w->rebuilt = now_s(), w->rebuilt_cpu = cpu_s();
	if (s.phase == SY_PHASE_PUSHING)
		w->pushing = true;
	else if (w->pushing && w->done == 0 &&
	         (s.phase == SY_PHASE_PULLING || s.phase == SY_PHASE_IDLE))
		w->done = now_s(), w->done_cpu = cpu_s();
}

/* lat: when not NULL, each transaction's time (begin to committed), in ms */
static int write_n(sy_client *c, long n, long per_txn, double *lat)
{
	sy_client_error err;
	for (long i = 0, k_txn = 0; i < n; k_txn++) {
		sy_client_txn *t;
		double t0 = now_s();
		if (sy_client_begin(c, false, &t, &err) != SY_CLIENT_OK)
			goto fail;
		for (long k = 0; k < per_txn && i < n; k++, i++) {
			uuid_t u;
			char id[37], pk[40], cols[64];
			uuid_generate_random(u);
			uuid_unparse_lower(u, id);
			snprintf(pk, sizeof pk, "\"%s\"", id);
			snprintf(cols, sizeof cols, "{\"title\":\"bench %ld\"}", i);
			if (sy_client_insert(t, "todo", pk, cols, NULL, &err) != SY_CLIENT_OK) {
				sy_client_rollback(t);
				goto fail;
			}
		}
		if (sy_client_commit(t, &err) != SY_CLIENT_OK)
			goto fail;
		if (lat != NULL)
			lat[k_txn] = (now_s() - t0) * 1000;
	}
	return 0;
fail:
	fprintf(stderr, "bench_client: %s\n", err.message);
	return 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Nearest rank of the sorted xs. */
static double pct(double *xs, size_t n, int p)
{
	qsort(xs, n, sizeof *xs, cmp_double);
	size_t k = (n * (size_t)p + 99) / 100;
	return xs[k > 0 ? k - 1 : 0];
}

typedef struct {
	char (*ids)[40];
	size_t n, cap;
	long count;
} collected;

static void on_id(void *ctx, const char *row_json)
{
	collected *c = ctx;
	const char *v = strstr(row_json, "\"id\":\"");
	if (v != NULL && c->n < c->cap) {
		snprintf(c->ids[c->n], sizeof c->ids[0], "\"%.36s\"", v + 6);
		c->n++;
	}
}

static void on_count(void *ctx, const char *row_json)
{
	collected *c = ctx;
	sscanf(row_json, "{\"n\":%ld}", &c->count);
}

static void on_nothing(void *ctx, const char *row_json)
{
	(void)row_json;
	(*(long *)ctx)++;
}

static void on_live(void *ctx, const char *rows_json, const sy_client_error *err)
{
	(void)err;
	if (rows_json != NULL)
		(*(long *)ctx)++;
}

#define Q 1000

static int rows_mode(sy_client *c, long n, double first_sync_s, double first_sync_cpu,
                     double rebuild_t0, double rebuild_c0)
{
	sy_client_error err;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	long rss_kb = ru.ru_maxrss;
	collected ids = {calloc(Q, sizeof *ids.ids), 0, Q, 0};
	double *lat = calloc(Q, sizeof *lat);
	long got = 0, lives = 0;
	sy_client_live_query *live = NULL;
	int rc = 1;
	if (ids.ids == NULL || lat == NULL)
		goto done;
	double t0 = now_s();
	if (sy_client_query(c, "SELECT count(*) AS n FROM todo", NULL, on_count, &ids, &err) !=
	    SY_CLIENT_OK)
		goto fail;
	double count_ms = (now_s() - t0) * 1000;
	if (ids.count < n) {
		fprintf(stderr, "bench_client: %ld rows synced, %ld wanted\n", ids.count, n);
		goto done;
	}
	t0 = now_s();
	if (sy_client_index(c, "todo", "[\"done\",\"title\"]", &err) != SY_CLIENT_OK)
		goto fail;
	double index_s = now_s() - t0;
	if (sy_client_query(c, "SELECT id FROM todo ORDER BY random() LIMIT 1000", NULL, on_id,
	                    &ids, &err) != SY_CLIENT_OK)
		goto fail;
	/* a point query by pk, as the app makes it: statement text, parameters, rows as JSON */
	for (size_t i = 0; i < ids.n; i++) {
		char params[48];
		snprintf(params, sizeof params, "[%s]", ids.ids[i]);
		t0 = now_s();
		if (sy_client_query(c, "SELECT * FROM todo WHERE id = ?", params, on_nothing, &got,
		                    &err) != SY_CLIENT_OK)
			goto fail;
		lat[i] = (now_s() - t0) * 1000;
	}
	double point_p50 = pct(lat, ids.n, 50), point_p99 = pct(lat, ids.n, 99);
	const char *page =
	        "SELECT id, title, done FROM todo WHERE done = ? ORDER BY title LIMIT 50";
	for (size_t i = 0; i < 200; i++) {
		t0 = now_s();
		if (sy_client_query(c, page, i % 2 ? "[1]" : "[0]", on_nothing, &got, &err) !=
		    SY_CLIENT_OK)
			goto fail;
		lat[i] = (now_s() - t0) * 1000;
	}
	double page_p50 = pct(lat, 200, 50), page_p99 = pct(lat, 200, 99);
	/* a live query's refresh: the commit of an update of a row it shows, to its callback */
	if (sy_client_live(c, page, "[0]", on_live, &lives, &live, &err) != SY_CLIENT_OK)
		goto fail;
	size_t writes = ids.n < 200 ? ids.n : 200;
	for (size_t i = 0; i < writes; i++) {
		char cols[64];
		snprintf(cols, sizeof cols, "{\"title\":\"a%04zu\",\"done\":false}", i);
		long before = lives;
		sy_client_txn *t;
		t0 = now_s();
		if (sy_client_begin(c, false, &t, &err) != SY_CLIENT_OK)
			goto fail;
		if (sy_client_update(t, "todo", ids.ids[i], cols, NULL, &err) != SY_CLIENT_OK) {
			sy_client_rollback(t);
			goto fail;
		}
		if (sy_client_commit(t, &err) != SY_CLIENT_OK)
			goto fail;
		lat[i] = (now_s() - t0) * 1000;
		if (lives != before + 1) {
			fprintf(stderr, "bench_client: the live query ran %ld times\n",
			        lives - before);
			goto done;
		}
	}
	double live_p50 = pct(lat, writes, 50), live_p99 = pct(lat, writes, 99);
	printf("{\"mode\":\"rows\",\"rows\":%ld,\"first_sync_seconds\":%.3f,"
	       "\"first_sync_cpu_seconds\":%.3f,\"rows_per_s\":%.0f,\"peak_rss_kb\":%ld,"
	       "\"count_ms\":%.3f,\"index_seconds\":%.3f,\"point_ms_p50\":%.4f,"
	       "\"point_ms_p99\":%.4f,\"page50_ms_p50\":%.4f,\"page50_ms_p99\":%.4f,"
	       "\"commit_live_ms_p50\":%.3f,\"commit_live_ms_p99\":%.3f,\"queries\":%zu,"
	       "\"rebuild_seconds\":%.3f,\"rebuild_cpu_seconds\":%.3f}\n",
	       ids.count, first_sync_s, first_sync_cpu, (double)ids.count / first_sync_s, rss_kb,
	       count_ms, index_s, point_p50, point_p99, page_p50, page_p99, live_p50, live_p99,
	       ids.n, W.rebuilt > 0 ? W.rebuilt - rebuild_t0 : -1,
	       W.rebuilt > 0 ? W.rebuilt_cpu - rebuild_c0 : -1);
	rc = 0;
	goto done;
fail:
	fprintf(stderr, "bench_client: %s\n", err.message);
done:
	sy_client_live_free(live);
	free(ids.ids);
	free(lat);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr,
		        "usage: bench_client writes|sync|rows DB URL USER:PW N [PER_TXN]\n");
		return 2;
	}
	long n = strtol(argv[5], NULL, 10);
	double open_t0 = now_s(), open_c0 = cpu_s();
	sy_client *c = open_client(argv[2], argv[3], argv[4]);
	if (c == NULL)
		return 1;
	int rc = 1;
	sy_client_error err;
	if (strcmp(argv[1], "writes") == 0 && argc == 7) {
		long per = strtol(argv[6], NULL, 10);
		long txns = per > 0 ? (n + per - 1) / per : 0;
		double *lat = per > 0 ? calloc((size_t)txns + 1, sizeof *lat) : NULL;
		double t0 = now_s();
		if (lat != NULL && write_n(c, n, per, lat) == 0) {
			double dt = now_s() - t0;
			printf("{\"mode\":\"writes\",\"writes\":%ld,\"per_txn\":%ld,\"seconds\":%."
			       "3f,"
			       "\"writes_per_s\":%.0f,\"latencies_ms\":[",
			       n, per, dt, (double)n / dt);
			for (long k = 0; k < txns; k++)
				printf("%s%.3f", k ? "," : "", lat[k]);
			printf("]}\n");
			rc = 0;
		}
		free(lat);
	} else if (strcmp(argv[1], "sync") == 0) {
		if (write_n(c, n, 1000, NULL) != 0)
			goto done;
		double t0 = now_s(), c0 = cpu_s();
		current = c;
		memset(&W, 0, sizeof W);
		if (sy_client_sync(c, 900000, &err) != SY_CLIENT_OK) {
			fprintf(stderr, "bench_client: %s\n", err.message);
			goto done;
		}
		sy_client_status s;
		if (sy_client_status_get(c, &s, &err) != SY_CLIENT_OK ||
		    s.counts[SY_INTENT_APPLIED] != (size_t)n || W.done == 0) {
			fprintf(stderr, "bench_client: %zu of %ld applied\n",
			        s.counts[SY_INTENT_APPLIED], n);
			goto done;
		}
		double pushed = W.done - t0, pushed_cpu = W.done_cpu - c0;
		double dt = now_s() - t0;
		printf("{\"mode\":\"sync\",\"intents\":%ld,\"push_seconds\":%.3f,"
		       "\"intents_per_s\":%.0f,\"push_cpu_seconds\":%.3f,\"sync_seconds\":%.3f}\n",
		       n, pushed, (double)n / pushed, pushed_cpu, dt);
		rc = 0;
	} else if (strcmp(argv[1], "rows") == 0) {
		/* open_client's sync was the device's first: connect, schema, the rebuild */
		rc = rows_mode(c, n, now_s() - open_t0, cpu_s() - open_c0, open_t0, open_c0);
	}
done:
	sy_client_close(c);
	return rc;
}
