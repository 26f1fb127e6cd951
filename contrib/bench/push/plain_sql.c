/* SPDX-License-Identifier: BSD-2-Clause */
/* contrib/bench/push/plain_sql: the database's own limit for the push benchmark: the rows a push
 * of fresh inserts writes, by prepared INSERTs, one transaction per batch, one connection each. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../bench.h"

/*
 * Row values follow contrib/bench/push/push.lua exactly (ids, labels, every column), so that
 * both sides write the same rows into public.item, through the same version-fence trigger.
 */
static const char insert_sql[] =
        "INSERT INTO public.item (id, label, qty, price, weight, due, seen_at, tags, blob, ref) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";

typedef struct {
	const char *conninfo;
	int worker; /* 1-based: the "thread" part of the ids */
	long phase;
	long batch;
	bool pipeline;
	bool units;      /* each row in a savepoint with its constraints checked, as a push unit */
	double deadline; /* monotonic seconds */
	double interval; /* seconds between batch starts of this worker; 0: flat out */
	double start;
	/* results */
	long batches, rows, errors;
	double *lat; /* per batch, seconds */
	size_t nlat, caplat;
	double last_end;
	char errmsg[256];
} worker;

static void sleep_until(double t)
{
	double d = t - bench_mono();
	if (d <= 0)
		return;
	struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* The values of row n of worker w in phase p (see push.lua's row()). */
typedef struct {
	char id[24], label[64], qty[16], price[32], weight[32], ref[40];
	const char *v[10];
} row;

static void make_row(row *r, long phase, int w, long n)
{
	long long id = (long long)phase * 1000000000000LL + (long long)w * 1000000000LL + n;
	snprintf(r->id, sizeof r->id, "%lld", id);
	snprintf(r->label, sizeof r->label, "bench %lld", id);
	snprintf(r->qty, sizeof r->qty, "%ld", n % 1000);
	snprintf(r->price, sizeof r->price, "%ld.25", n);
	snprintf(r->weight, sizeof r->weight, "%ld.5", n);
	snprintf(r->ref, sizeof r->ref, "%08lx-%04x-4000-8000-%06lx%06lx", (unsigned long)phase,
	         (unsigned)w, (unsigned long)(n >> 24) & 0xffffff, (unsigned long)n & 0xffffff);
	r->v[0] = r->id;
	r->v[1] = r->label;
	r->v[2] = r->qty;
	r->v[3] = r->price;
	r->v[4] = r->weight;
	r->v[5] = "2026-12-01";
	r->v[6] = "2026-11-29T10:11:12.123456Z";
	r->v[7] = "{\"a\":[1,2,3],\"b\":\"x\"}";
	r->v[8] = "\\x00010203040506070809";
	r->v[9] = r->ref;
}

static bool ok_result(PGresult *res, worker *w)
{
	ExecStatusType st = PQresultStatus(res);
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_PIPELINE_SYNC)
		return true;
	if (w->errmsg[0] == '\0')
		snprintf(w->errmsg, sizeof w->errmsg, "%s", PQresultErrorMessage(res));
	return false;
}

static bool exec_simple(PGconn *c, const char *sql, worker *w)
{
	PGresult *res = PQexec(c, sql);
	bool ok = ok_result(res, w);
	PQclear(res);
	return ok;
}

/* One batch, one transaction, every statement in one pipeline: one round trip. */
static bool batch_pipelined(PGconn *c, worker *w, long first)
{
	row r;
	bool ok = PQsendQueryParams(c, "BEGIN", 0, NULL, NULL, NULL, NULL, 0) == 1;
	for (long i = 0; ok && i < w->batch; i++) {
		make_row(&r, w->phase, w->worker, first + i);
		if (w->units)
			ok = PQsendQueryParams(c, "SAVEPOINT u", 0, NULL, NULL, NULL, NULL, 0) ==
			             1 &&
			     PQsendQueryParams(c, "SET CONSTRAINTS ALL DEFERRED", 0, NULL, NULL,
			                       NULL, NULL, 0) == 1;
		ok = ok && PQsendQueryPrepared(c, "ins", 10, r.v, NULL, NULL, 0) == 1;
		if (w->units)
			ok = ok &&
			     PQsendQueryParams(c, "SET CONSTRAINTS ALL IMMEDIATE", 0, NULL, NULL,
			                       NULL, NULL, 0) == 1 &&
			     PQsendQueryParams(c, "RELEASE SAVEPOINT u", 0, NULL, NULL, NULL, NULL,
			                       0) == 1;
	}
	ok = ok && PQsendQueryParams(c, "COMMIT", 0, NULL, NULL, NULL, NULL, 0) == 1;
	ok = ok && PQpipelineSync(c) == 1;
	if (!ok) {
		snprintf(w->errmsg, sizeof w->errmsg, "%s", PQerrorMessage(c));
		return false;
	}
	bool all = true;
	for (;;) {
		PGresult *res = PQgetResult(c);
		if (res == NULL) {
			if (PQstatus(c) != CONNECTION_OK)
				return false;
			continue;
		}
		ExecStatusType st = PQresultStatus(res);
		all &= ok_result(res, w);
		PQclear(res);
		if (st == PGRES_PIPELINE_SYNC)
			break;
	}
	return all;
}

/* One batch, one transaction, one round trip per statement. */
static bool batch_serial(PGconn *c, worker *w, long first)
{
	row r;
	if (!exec_simple(c, "BEGIN", w))
		return false;
	bool ok = true;
	for (long i = 0; ok && i < w->batch; i++) {
		make_row(&r, w->phase, w->worker, first + i);
		PGresult *res = PQexecPrepared(c, "ins", 10, r.v, NULL, NULL, 0);
		ok = ok_result(res, w);
		PQclear(res);
	}
	if (!ok) {
		(void)exec_simple(c, "ROLLBACK", w);
		return false;
	}
	return exec_simple(c, "COMMIT", w);
}

static void *run_worker(void *arg)
{
	worker *w = arg;
	PGconn *c = PQconnectdb(w->conninfo);
	if (PQstatus(c) != CONNECTION_OK) {
		snprintf(w->errmsg, sizeof w->errmsg, "%s", PQerrorMessage(c));
		w->errors++;
		PQfinish(c);
		return NULL;
	}
	PGresult *res = PQprepare(c, "ins", insert_sql, 10, NULL);
	bool prepared = ok_result(res, w);
	PQclear(res);
	if (!prepared || (w->pipeline && PQenterPipelineMode(c) != 1)) {
		w->errors++;
		PQfinish(c);
		return NULL;
	}
	long n = 0;
	double next = w->start;
	while (bench_mono() < w->deadline) {
		if (w->interval > 0) {
			sleep_until(next);
			next += w->interval;
			if (bench_mono() >= w->deadline)
				break;
		}
		double t0 = bench_mono();
		bool ok = w->pipeline ? batch_pipelined(c, w, n) : batch_serial(c, w, n);
		double t1 = bench_mono();
		n += w->batch;
		if (!ok) {
			w->errors++;
			if (PQstatus(c) != CONNECTION_OK)
				break;
			continue;
		}
		w->batches++;
		w->rows += w->batch;
		w->last_end = t1;
		if (w->nlat == w->caplat) {
			size_t cap = w->caplat ? w->caplat * 2 : 4096;
			double *l = realloc(w->lat, cap * sizeof *l);
			if (l == NULL)
				break;
			w->lat = l;
			w->caplat = cap;
		}
		w->lat[w->nlat++] = t1 - t0;
	}
	PQfinish(c);
	return NULL;
}

static void usage(void)
{
	fputs("usage: plain_sql [-w WORKERS] [-n BATCH] [-d SECONDS] [-p PHASE] [-r "
	      "BATCHES_PER_S]\n"
	      "                 [-s | -u] [-c CONNINFO]\n"
	      "Inserts fresh rows into public.item, one transaction of BATCH prepared INSERTs per\n"
	      "batch, over one connection per worker (pipelined; -s: one round trip per "
	      "statement).\n"
	      "-u: each INSERT inside SAVEPOINT, SET CONSTRAINTS ALL DEFERRED ... IMMEDIATE, "
	      "RELEASE\n"
	      "(the statement shape of a push unit, pipelined).\n"
	      "-r paces the workers to that many batches per second in all. Prints key=value.\n",
	      stderr);
}

int main(int argc, char **argv)
{
	int workers = 4;
	long batch = 100, phase = 1;
	double seconds = 10, rate = 0;
	bool pipeline = true, units = false;
	const char *conninfo = "";
	int opt;
	while ((opt = getopt(argc, argv, "w:n:d:p:r:suc:")) != -1) {
		switch (opt) {
		case 'w': workers = atoi(optarg); break;
		case 'n': batch = atol(optarg); break;
		case 'd': seconds = atof(optarg); break;
		case 'p': phase = atol(optarg); break;
		case 'r': rate = atof(optarg); break;
		case 's': pipeline = false; break;
		case 'u': units = true; break;
		case 'c': conninfo = optarg; break;
		default: usage(); return 2;
		}
	}
	if (units && !pipeline) {
		usage();
		return 2;
	}
	if (workers < 1 || workers > 256 || batch < 1 || seconds <= 0 || phase < 1 ||
	    phase > 9000) {
		usage();
		return 2;
	}
	worker *ws = calloc((size_t)workers, sizeof *ws);
	pthread_t *th = calloc((size_t)workers, sizeof *th);
	if (ws == NULL || th == NULL)
		return 1;
	double start = bench_mono();
	for (int i = 0; i < workers; i++) {
		ws[i] = (worker){.conninfo = conninfo,
		                 .worker = i + 1,
		                 .phase = phase,
		                 .batch = batch,
		                 .pipeline = pipeline,
		                 .units = units,
		                 .deadline = start + seconds,
		                 .interval = rate > 0 ? workers / rate : 0,
		                 .start = start + (rate > 0 ? (double)i / rate : 0)};
		if (pthread_create(&th[i], NULL, run_worker, &ws[i]) != 0) {
			fputs("plain_sql: pthread_create failed\n", stderr);
			return 1;
		}
	}
	long batches = 0, rows = 0, errors = 0;
	size_t nlat = 0;
	double end = start;
	for (int i = 0; i < workers; i++) {
		pthread_join(th[i], NULL);
		batches += ws[i].batches;
		rows += ws[i].rows;
		errors += ws[i].errors;
		nlat += ws[i].nlat;
		if (ws[i].last_end > end)
			end = ws[i].last_end;
		if (ws[i].errmsg[0])
			fprintf(stderr, "plain_sql: worker %d: %s", i + 1, ws[i].errmsg);
	}
	double *lat = malloc((nlat ? nlat : 1) * sizeof *lat);
	if (lat == NULL)
		return 1;
	size_t k = 0;
	for (int i = 0; i < workers; i++) {
		memcpy(lat + k, ws[i].lat, ws[i].nlat * sizeof *lat);
		k += ws[i].nlat;
		free(ws[i].lat);
	}
	qsort(lat, nlat, sizeof *lat, bench_cmp_double);
	double secs = end - start;
	printf("workers=%d batch=%ld pipeline=%d units=%d seconds=%.3f batches=%ld rows=%ld "
	       "errors=%ld "
	       "rows_per_s=%.1f batches_per_s=%.1f p50_ms=%.3f p99_ms=%.3f\n",
	       workers, batch, pipeline ? 1 : 0, units ? 1 : 0, secs, batches, rows, errors,
	       secs > 0 ? (double)rows / secs : 0, secs > 0 ? (double)batches / secs : 0,
	       bench_pct(lat, nlat, 50) * 1e3, bench_pct(lat, nlat, 99) * 1e3);
	free(lat);
	free(ws);
	free(th);
	return errors > 0 ? 1 : 0;
}
