/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * contrib/bench/app-writes/app_writes: the application's own writes to one table, as an
 * application makes them over libpq (prepared statements, one connection), and the CPU its
 * backend spent on them, read from /proc/<backend pid>/schedstat (nanoseconds on the CPU)
 * before and after. Run by contrib/bench/app-writes/bench.py:
 *
 *   app_writes -t TABLE -o insert|update|delete -n ROWS_PER_TXN -m row|set -b FIRST_ID
 *              -r ROWS -w WARM_ROWS
 *
 * Rows FIRST_ID .. FIRST_ID + WARM_ROWS + ROWS - 1: the first WARM_ROWS warm the connection's
 * caches (not measured), then ROWS are written in transactions of ROWS_PER_TXN rows, each
 * row its own statement (-m row: BEGIN, n statements, COMMIT; one row: the statement alone)
 * or each transaction one statement over its n rows (-m set). An update changes the title
 * and done of each row (of owner alice, as an app scopes its writes); a delete is a hard delete.
 * Prints one line of key=value pairs.
 */
#include "config.h"

#include <inttypes.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../bench.h"

static PGconn *db;

static void die(const char *what, PGresult *r)
{
	fprintf(stderr, "app_writes: %s: %s", what, PQerrorMessage(db));
	PQclear(r);
	PQfinish(db);
	exit(1);
}

static void run(const char *sql)
{
	PGresult *r = PQexec(db, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		die(sql, r);
	PQclear(r);
}

/* The backend's CPU time so far, in nanoseconds (schedstat), or ticks of stat as a fallback. */
static double backend_cpu_s(int pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/schedstat", pid);
	FILE *f = fopen(path, "r");
	unsigned long long ns = 0;
	if (f != NULL) {
		int n = fscanf(f, "%llu", &ns);
		fclose(f);
		if (n == 1)
			return (double)ns / 1e9;
	}
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (f == NULL) {
		fprintf(stderr, "app_writes: cannot read the backend's CPU (%s)\n", path);
		exit(1);
	}
	char buf[2048];
	size_t len = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[len] = '\0';
	char *p = strrchr(buf, ')');
	unsigned long long ut = 0, st = 0;
	if (p == NULL ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2) {
		fprintf(stderr, "app_writes: cannot parse %s\n", path);
		exit(1);
	}
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

typedef struct {
	const char *table, *op, *mode;
	long per_txn, first, rows, warm;
} opts;

static const char *sql_of(const opts *o, char *buf, size_t size)
{
	bool set = strcmp(o->mode, "set") == 0;
	if (strcmp(o->op, "insert") == 0)
		snprintf(
		        buf, size,
		        set ? "INSERT INTO public.%s (id, owner, title, done, note)"
		              " SELECT i, $2::text, 'title ' || i, false, NULL"
		              " FROM pg_catalog.generate_series($1::bigint, $1::bigint + "
		              "$3::bigint - 1) i"
		            : "INSERT INTO public.%s (id, owner, title, done, note)"
		              " VALUES ($1::bigint, $2::text, 'title ' || $1::bigint, false, NULL)",
		        o->table);
	else if (strcmp(o->op, "update") == 0)
		snprintf(buf, size,
		         set ? "UPDATE public.%s SET title = 'changed ' || id, done = NOT done"
		               " WHERE id BETWEEN $1::bigint AND $1::bigint + $3::bigint - 1"
		               " AND owner = $2::text"
		             : "UPDATE public.%s SET title = 'changed ' || id, done = NOT done"
		               " WHERE id = $1::bigint AND owner = $2::text",
		         o->table);
	else if (strcmp(o->op, "delete") == 0)
		snprintf(buf, size,
		         set ? "DELETE FROM public.%s WHERE id BETWEEN $1::bigint AND $1::bigint + "
		               "$3::bigint - 1"
		               " AND owner = $2::text"
		             : "DELETE FROM public.%s WHERE id = $1::bigint AND owner = $2::text",
		         o->table);
	else
		return NULL;
	return buf;
}

/* Rows [from, from + count) in transactions of o->per_txn rows; returns the rows written. */
static long write_rows(const opts *o, long from, long count)
{
	bool set = strcmp(o->mode, "set") == 0;
	long done = 0;
	char id[24], n[24];
	for (long t = 0; t < count; t += o->per_txn) {
		long k = o->per_txn < count - t ? o->per_txn : count - t;
		bool block = !set && k > 1;
		if (block)
			run("BEGIN");
		for (long i = 0; i < (set ? 1 : k); i++) {
			snprintf(id, sizeof id, "%ld", from + t + i);
			snprintf(n, sizeof n, "%ld", k);
			const char *v[] = {id, "alice", n};
			PGresult *r = PQexecPrepared(db, "w", set ? 3 : 2, v, NULL, NULL, 0);
			if (PQresultStatus(r) != PGRES_COMMAND_OK)
				die("a write", r);
			done += strtol(PQcmdTuples(r), NULL, 10);
			PQclear(r);
		}
		if (block)
			run("COMMIT");
	}
	return done;
}

int main(int argc, char **argv)
{
	opts o = {"app_plain", "insert", "row", 1, 1, 10000, 200};
	int c;
	while ((c = getopt(argc, argv, "t:o:n:m:b:r:w:")) != -1) {
		switch (c) {
		case 't': o.table = optarg; break;
		case 'o': o.op = optarg; break;
		case 'n': o.per_txn = strtol(optarg, NULL, 10); break;
		case 'm': o.mode = optarg; break;
		case 'b': o.first = strtol(optarg, NULL, 10); break;
		case 'r': o.rows = strtol(optarg, NULL, 10); break;
		case 'w': o.warm = strtol(optarg, NULL, 10); break;
		default:
			fprintf(stderr,
			        "usage: app_writes -t TABLE -o insert|update|delete -n ROWS_PER_TXN"
			        " -m row|set -b FIRST_ID -r ROWS -w WARM_ROWS\n");
			return 2;
		}
	}
	char sql[512];
	if (o.per_txn < 1 || o.rows < 1 || o.warm < 0 || sql_of(&o, sql, sizeof sql) == NULL ||
	    (strcmp(o.mode, "row") != 0 && strcmp(o.mode, "set") != 0)) {
		fprintf(stderr, "app_writes: bad arguments\n");
		return 2;
	}
	db = PQconnectdb("application_name=app_writes");
	if (PQstatus(db) != CONNECTION_OK)
		die("connect", NULL);
	PGresult *r = PQprepare(db, "w", sql, 0, NULL);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		die("prepare", r);
	PQclear(r);
	int pid = PQbackendPID(db);
	long warm = write_rows(&o, o.first, o.warm);
	double c0 = backend_cpu_s(pid), t0 = bench_mono();
	long rows = write_rows(&o, o.first + o.warm, o.rows);
	double t1 = bench_mono(), c1 = backend_cpu_s(pid);
	printf("rows=%ld warm=%ld backend_cpu_s=%.6f wall_s=%.6f backend_pid=%d\n", rows, warm,
	       c1 - c0, t1 - t0, pid);
	PQfinish(db);
	return rows == o.rows && warm == o.warm ? 0 : 3;
}
