/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * contrib/bench/client: libsynchro-client's own figures (run through contrib/bench/client/run).
 *   bench_client writes DB URL USER:PW N PER_TXN   durable local writes per second, and each
 *                                                  transaction's time (begin to committed)
 *   bench_client sync DB URL USER:PW N             N queued intents, then one sync: push-done
 *                                                  time, sync-done time (pull of the echoes)
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
	if (sy_client_open(db, &o, &c, &err) != SY_CLIENT_OK ||
	    /* 10 min: the first sync rebuilds every row of the user, slow under a profiler */
	    sy_client_sync(c, 600000, &err) != SY_CLIENT_OK) {
		fprintf(stderr, "bench_client: %s\n", err.message);
		sy_client_close(c);
		return NULL;
	}
	return c;
}

static sy_client *current;

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

int main(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr, "usage: bench_client writes|sync DB URL USER:PW N [PER_TXN]\n");
		return 2;
	}
	long n = strtol(argv[5], NULL, 10);
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
	}
done:
	sy_client_close(c);
	return rc;
}
