/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * metrics_push.c: the protocol's counters of /metrics (metrics_push.h), and their
 * Prometheus text.
 *
 * Layer: base of src/fcgi (doc/hacking.md).
 * Notes: They count what synchro_push decided, from its counts column (migration 18). No
 * body is parsed to count. They also count request-level errors by the protocol's code,
 * database errors by SQLSTATE class, lock failures and rebuilds. doc/operations.md#metrics
 * explains each.
 */
#include "config.h"

#include <string.h>

#include "fcgi/metrics_push.h"

/* PostgreSQL 15's SQLSTATE classes, then Synchro's own (SY001...); index CLASSES-1 is
 * "other". */
static const char classes[SY_METRICS_SQLSTATE_CLASSES - 1][3] = {
        "00", "01", "02", "03", "08", "09", "0A", "0B", "0F", "0L", "0P", "0Z", "20", "21", "22",
        "23", "24", "25", "26", "27", "28", "2B", "2D", "2F", "34", "38", "39", "3B", "3D", "3F",
        "40", "42", "44", "53", "54", "55", "57", "58", "72", "F0", "HV", "P0", "XX", "SY"};

static const char *const lock_reasons[SY_LOCK__COUNT] = {"lock_timeout", "deadlock",
                                                         "serialization_failure"};
static const char *const lock_states[SY_LOCK__COUNT] = {"55P03", "40P01", "40001"};

static void add(_Atomic uint64_t *v, uint64_t n)
{
	atomic_fetch_add_explicit(v, n, memory_order_relaxed);
}

static unsigned long long get(_Atomic uint64_t *v)
{
	return (unsigned long long)atomic_load_explicit(v, memory_order_relaxed);
}

void sy_metrics_error(sy_metrics *m, sy_route_id route, sy_errcode code)
{
	sy_metrics_proto *p = sy_metrics_proto_of(m);
	if (p == NULL || code == SY_ERR_NONE || (unsigned)code >= SY_ERR__COUNT)
		return;
	/* Out of memory is answered (and named) temporary_unavailable. */
	if (code == SY_ERR_NOMEM)
		code = SY_ERR_TEMPORARY_UNAVAILABLE;
	if ((unsigned)route >= SY_ROUTE__COUNT)
		route = SY_ROUTE_OTHER;
	add(&p->errors[route][code], 1);
}

void sy_metrics_push(sy_metrics *m, const sy_store_push_answer *ans)
{
	sy_metrics_proto *p = sy_metrics_proto_of(m);
	if (p == NULL)
		return;
	if (ans->replay)
		add(&p->batch_replays, 1);
	if (ans->has_counts) {
		for (int c = 0; c < SY_CODE__COUNT; c++)
			if (ans->counts[c] > 0)
				add(&p->outcomes[c], (uint64_t)ans->counts[c]);
		if (ans->counts[SY_STORE_PUSH_REPLAYED] > 0)
			add(&p->mutation_replays, (uint64_t)ans->counts[SY_STORE_PUSH_REPLAYED]);
	}
	if (ans->http_status == 429)
		add(&p->admission_refusals, 1);
	if (ans->sqlstate[0] != '\0')
		sy_metrics_db_error(m, ans->sqlstate);
}

void sy_metrics_db_error(sy_metrics *m, const char *sqlstate)
{
	sy_metrics_proto *p = sy_metrics_proto_of(m);
	if (p == NULL || sqlstate == NULL || strlen(sqlstate) != 5)
		return;
	size_t k = 0;
	while (k < SY_METRICS_SQLSTATE_CLASSES - 1 && memcmp(classes[k], sqlstate, 2) != 0)
		k++;
	add(&p->db_errors[k], 1);
	for (int l = 0; l < SY_LOCK__COUNT; l++)
		if (strcmp(sqlstate, lock_states[l]) == 0)
			add(&p->lock_failures[l], 1);
}

void sy_metrics_rebuild(sy_metrics *m, sy_rebuild_event event)
{
	sy_metrics_proto *p = sy_metrics_proto_of(m);
	if (p != NULL && (unsigned)event < SY_REBUILD__COUNT)
		add(&p->rebuilds[event], 1);
}

static void counter(sy_buf *out, const char *name, const char *help, unsigned long long v)
{
	sy_buf_printf(out, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name, v);
}

void sy_metrics_proto_write(sy_metrics_proto *p, sy_buf *out)
{
	sy_buf_puts(out, "# HELP synchro_push_outcomes_total Mutation outcomes decided by first "
	                 "executions answered 200, by status and code (code none: applied).\n"
	                 "# TYPE synchro_push_outcomes_total counter\n");
	for (int c = 0; c < SY_CODE__COUNT; c++) {
		const char *code = sy_code_name((sy_code)c);
		sy_buf_printf(out, "synchro_push_outcomes_total{status=\"%s\",code=\"%s\"} %llu\n",
		              sy_status_name(sy_code_status((sy_code)c)),
		              code != NULL ? code : "none", get(&p->outcomes[c]));
	}
	counter(out, "synchro_push_mutation_replays_total",
	        "Mutations answered with the stored outcome another batch ledgered (cross-batch "
	        "replay), not executed again.",
	        get(&p->mutation_replays));
	counter(out, "synchro_push_batch_replays_total",
	        "Pushes answered with a batch's stored response (exact replay).",
	        get(&p->batch_replays));
	counter(out, "synchro_push_admission_refusals_total",
	        "Pushes refused by admission control (429 retry_later: max_inflight or "
	        "max_inflight_per_client).",
	        get(&p->admission_refusals));
	sy_buf_puts(out, "# HELP synchro_http_errors_total Requests answered with a "
	                 "request-level error, by route, HTTP status and the protocol's error "
	                 "code.\n# TYPE synchro_http_errors_total counter\n");
	for (int r = 0; r < SY_ROUTE__COUNT; r++)
		for (int e = 1; e < SY_ERR__COUNT; e++) {
			unsigned long long n = get(&p->errors[r][e]);
			if (n > 0)
				sy_buf_printf(out,
				              "synchro_http_errors_total{route=\"%s\",status=\"%d\","
				              "code=\"%s\"} %llu\n",
				              sy_route_name((sy_route_id)r),
				              sy_errcode_http_status((sy_errcode)e),
				              sy_errcode_name((sy_errcode)e), n);
		}
	sy_buf_puts(out, "# HELP synchro_db_errors_total Errors PostgreSQL returned to the "
	                 "responders' statements, and that rolled a push back inside "
	                 "synchro_push, by SQLSTATE class (its first two characters).\n"
	                 "# TYPE synchro_db_errors_total counter\n");
	for (int k = 0; k < SY_METRICS_SQLSTATE_CLASSES; k++) {
		unsigned long long n = get(&p->db_errors[k]);
		if (n > 0)
			sy_buf_printf(out, "synchro_db_errors_total{class=\"%s\"} %llu\n",
			              k < SY_METRICS_SQLSTATE_CLASSES - 1 ? classes[k] : "other", n);
	}
	sy_buf_puts(out, "# HELP synchro_db_lock_failures_total Statements that failed on a "
	                 "lock: a wait past lock_timeout_ms (55P03, the push answered 503), a "
	                 "deadlock's victim (40P01) or a serialization failure (40001), each "
	                 "attempt counted (the push runs them again). Waits that ended in the "
	                 "lock are not counted.\n"
	                 "# TYPE synchro_db_lock_failures_total counter\n");
	for (int l = 0; l < SY_LOCK__COUNT; l++)
		sy_buf_printf(out, "synchro_db_lock_failures_total{reason=\"%s\"} %llu\n",
		              lock_reasons[l], get(&p->lock_failures[l]));
	counter(out, "synchro_rebuilds_started_total",
	        "Rebuilds started: first pages (no page token) answered 200.",
	        get(&p->rebuilds[SY_REBUILD_STARTED]));
	counter(out, "synchro_rebuilds_completed_total",
	        "Rebuilds completed: last pages answered 200.",
	        get(&p->rebuilds[SY_REBUILD_COMPLETED]));
	counter(out, "synchro_rebuilds_invalidated_total",
	        "Rebuild pages answered 409 rebuild_invalidated (the client starts over).",
	        get(&p->rebuilds[SY_REBUILD_INVALIDATED]));
}
