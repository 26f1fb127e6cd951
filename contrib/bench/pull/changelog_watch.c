/* SPDX-License-Identifier: BSD-2-Clause */
/* contrib/bench/pull/changelog_watch: polls synchro.changelog and measures, per source
 * transaction, the time from its commit to the moment its changes were visible there. */
#include "config.h"

#include <errno.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../bench.h"

/*
 * walsync writes whole transactions in commit order, so the commit LSN alone is a cursor.
 * committed_at is the source commit timestamp from the stream; clock_timestamp() is read by
 * the same server at the poll, so no clock of another machine is involved. One row per
 * transaction keeps the poller cheap beside the load it measures.
 */
static const char poll_sql[] =
        "SELECT commit_lsn::text, count(*), "
        "       extract(epoch FROM clock_timestamp() - min(committed_at)) * 1000 "
        "  FROM synchro.changelog WHERE commit_lsn > $1::pg_lsn "
        " GROUP BY commit_lsn ORDER BY commit_lsn";

/* What walsync's SQL session (not its replication stream) is doing: sampled on this
 * connection rather than by a psql started every few milliseconds beside the load. */
static const char sample_sql[] =
        "SELECT count(*) FILTER (WHERE state = 'active'),"
        "       count(*) FILTER (WHERE wait_event_type = 'Lock'), count(*)"
        "  FROM pg_stat_activity WHERE application_name LIKE 'synchro-walsync%'"
        "   AND backend_type = 'client backend'";

int main(int argc, char **argv)
{
	double seconds = 10, interval_ms = 5, sample_ms = 0;
	const char *conninfo = "";
	int opt;
	while ((opt = getopt(argc, argv, "d:i:c:s:")) != -1) {
		switch (opt) {
		case 'd': seconds = atof(optarg); break;
		case 'i': interval_ms = atof(optarg); break;
		case 'c': conninfo = optarg; break;
		case 's': sample_ms = atof(optarg); break;
		default:
			fputs("usage: changelog_watch [-d SECONDS] [-i POLL_MS] [-c CONNINFO] [-s "
			      "SAMPLE_MS]\n"
			      "Prints key=value: transactions and changes that became visible in\n"
			      "synchro.changelog, and commit-to-visible latency percentiles; with "
			      "-s,\n"
			      "how often walsync's SQL session was active or waiting for a lock.\n",
			      stderr);
			return 2;
		}
	}
	PGconn *c = PQconnectdb(conninfo);
	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "changelog_watch: %s", PQerrorMessage(c));
		return 1;
	}
	PGresult *r =
	        PQexec(c, "SELECT coalesce(max(commit_lsn), '0/0')::text FROM synchro.changelog");
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		fprintf(stderr, "changelog_watch: %s", PQresultErrorMessage(r));
		return 1;
	}
	char cursor[64];
	snprintf(cursor, sizeof cursor, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	r = PQprepare(c, "poll", poll_sql, 1, NULL);
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		fprintf(stderr, "changelog_watch: %s", PQresultErrorMessage(r));
		return 1;
	}
	PQclear(r);
	r = PQprepare(c, "sample", sample_sql, 0, NULL);
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		fprintf(stderr, "changelog_watch: %s", PQresultErrorMessage(r));
		return 1;
	}
	PQclear(r);
	long long ws_samples = 0, ws_busy = 0, ws_lock = 0;
	double next_sample = 0;
	size_t n = 0, cap = 65536;
	double *lat = malloc(cap * sizeof *lat);
	long long changes = 0, polls = 0;
	double start = bench_mono(), first = 0, last = 0;
	if (lat == NULL)
		return 1;
	while (bench_mono() - start < seconds) {
		const char *p[1] = {cursor};
		r = PQexecPrepared(c, "poll", 1, p, NULL, NULL, 0);
		polls++;
		if (PQresultStatus(r) != PGRES_TUPLES_OK) {
			fprintf(stderr, "changelog_watch: %s", PQresultErrorMessage(r));
			return 1;
		}
		int rows = PQntuples(r);
		if (rows > 0) {
			double t = bench_mono();
			if (first == 0)
				first = t;
			last = t;
		}
		for (int i = 0; i < rows; i++) {
			if (n == cap) {
				cap *= 2;
				double *l = realloc(lat, cap * sizeof *l);
				if (l == NULL)
					return 1;
				lat = l;
			}
			changes += atoll(PQgetvalue(r, i, 1));
			lat[n++] = atof(PQgetvalue(r, i, 2));
		}
		if (rows > 0)
			snprintf(cursor, sizeof cursor, "%s", PQgetvalue(r, rows - 1, 0));
		PQclear(r);
		if (sample_ms > 0 && bench_mono() >= next_sample) {
			next_sample = bench_mono() + sample_ms / 1000.0;
			r = PQexecPrepared(c, "sample", 0, NULL, NULL, NULL, 0);
			if (PQresultStatus(r) != PGRES_TUPLES_OK) {
				fprintf(stderr, "changelog_watch: %s", PQresultErrorMessage(r));
				return 1;
			}
			ws_busy += atoll(PQgetvalue(r, 0, 0));
			ws_lock += atoll(PQgetvalue(r, 0, 1));
			ws_samples += atoll(PQgetvalue(r, 0, 2));
			PQclear(r);
		}
		struct timespec ts = {0, (long)(interval_ms * 1e6)};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
	}
	PQfinish(c);
	qsort(lat, n, sizeof *lat, bench_cmp_double);
	printf("transactions=%zu changes=%lld polls=%lld poll_ms=%g visible_span_s=%.3f "
	       "p50_ms=%.1f p90_ms=%.1f p99_ms=%.1f max_ms=%.1f ws_samples=%lld ws_busy=%lld "
	       "ws_lock=%lld\n",
	       n, changes, polls, interval_ms, last - first, bench_pct(lat, n, 50),
	       bench_pct(lat, n, 90), bench_pct(lat, n, 99), n ? lat[n - 1] : 0.0, ws_samples,
	       ws_busy, ws_lock);
	free(lat);
	return 0;
}
