/* SPDX-License-Identifier: BSD-2-Clause */
/* The push path's SQL (ADR 002): replay lookup, database gates, the first-execution
 * transaction (units, compare-and-swap, ledgers) over libpq pipelines. */
#include "config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/push.h"
#include "synchro/alloc.h"
#include "synchro/fingerprint.h"
#include "synchro/jcs.h"
#include "synchro/manifest.h"
#include "synchro/matrix.h"
#include "synchro/octets.h"
#include "synchro/outcome.h"
#include "synchro/types.h"

/* ADR: deadlocks and serialization failures are retried a bounded number of times. */
#define RETRIES 3
/* Named statements kept per connection; beyond this, statements go unnamed. */
#define STMT_MAX 2048
/* Attempts at a consistent row-and-fence lock when a concurrent insert slips between. */
#define LOCK_TRIES       3
#define PROTOCOL_VERSION "3"

/* ---- prepared statements, keyed by their SQL text ---- */

enum { STMT_NONE, STMT_PENDING, STMT_READY };

typedef struct {
	char *sql; /* NULL: free slot */
	uint64_t hash;
	char name[24];
	int state;
} stmt;

/* ---- schema manifests ---- */

/* A synced table of one manifest, with its quoted identifiers and fixed statements. */
typedef struct {
	const sy_table *t;
	char *rel;
	char *pk;
	char **cols; /* per field of t->fields */
	int owner;   /* index of the owner field in t->fields, or -1 */
	char *lock_sql;
	char *read_sql;
	char *delete_sql;
	char *reads_sql; /* read_sql for an array of keys ($2), a row each, in their order */
} tinfo;

typedef struct {
	long long version;
	char hash[SY_HASH_HEX_LEN + 1];
	sy_manifest *m;
	tinfo *ti; /* per table; built on first use as the current schema */
} man;

struct sy_store_push {
	const PGconn *conn;
	int pid;
	unsigned long names;
	/*
	 * Open addressing, stmt_cap slots (a power of two), each statement allocated on its
	 * own: a pipeline keeps pointers to the statements it prepares while later ones are
	 * added, and growing the table must not move them.
	 */
	stmt **stmts;
	size_t stmt_cap, stmt_count;
	man *mans;
	size_t man_count, man_cap;
	long long latest; /* the latest version seen (an index into mans by version) */
};

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

static void stmts_clear(sy_store_push *p)
{
	for (size_t i = 0; i < p->stmt_cap; i++) {
		if (p->stmts[i] != NULL)
			sy_free(p->stmts[i]->sql);
		sy_free(p->stmts[i]);
	}
	sy_free(p->stmts);
	p->stmts = NULL;
	p->stmt_cap = p->stmt_count = 0;
}

static void tinfo_free(tinfo *ti, size_t n)
{
	if (ti == NULL)
		return;
	for (size_t i = 0; i < n; i++) {
		sy_free(ti[i].rel);
		sy_free(ti[i].pk);
		if (ti[i].cols != NULL)
			for (size_t j = 0; j < ti[i].t->field_count; j++)
				sy_free(ti[i].cols[j]);
		sy_free(ti[i].cols);
		sy_free(ti[i].lock_sql);
		sy_free(ti[i].read_sql);
		sy_free(ti[i].delete_sql);
		sy_free(ti[i].reads_sql);
	}
	sy_free(ti);
}

sy_store_push *sy_store_push_new(void)
{
	return sy_calloc(1, sizeof(sy_store_push));
}

void sy_store_push_free(sy_store_push *p)
{
	if (p == NULL)
		return;
	stmts_clear(p);
	for (size_t i = 0; i < p->man_count; i++) {
		if (p->mans[i].ti != NULL)
			tinfo_free(p->mans[i].ti, p->mans[i].m->table_count);
		sy_manifest_free(p->mans[i].m);
	}
	sy_free(p->mans);
	sy_free(p);
}

void sy_store_push_answer_clear(sy_store_push_answer *a)
{
	sy_buf_free(&a->body);
}

/* Statements belong to one session: a new connection or backend starts afresh. */
static void notice_connection(sy_store_push *p, PGconn *c)
{
	if (p->conn == c && p->pid == PQbackendPID(c))
		return;
	stmts_clear(p);
	p->conn = c;
	p->pid = PQbackendPID(c);
}

/* The statement of sql (found or added); NULL when the table is full or memory runs out. */
static stmt *stmt_slot(sy_store_push *p, const char *sql)
{
	if (p->stmt_cap == 0) {
		p->stmts = sy_calloc(64, sizeof *p->stmts);
		if (p->stmts == NULL)
			return NULL;
		p->stmt_cap = 64;
	}
	uint64_t h = fnv1a(sql);
	size_t mask = p->stmt_cap - 1;
	for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
		stmt *s = p->stmts[i];
		if (s == NULL)
			break;
		if (s->hash == h && strcmp(s->sql, sql) == 0)
			return s;
	}
	if (p->stmt_count >= STMT_MAX)
		return NULL;
	if ((p->stmt_count + 1) * 2 > p->stmt_cap) {
		size_t ncap = p->stmt_cap * 2;
		stmt **n = sy_calloc(ncap, sizeof *n);
		if (n == NULL)
			return NULL;
		for (size_t i = 0; i < p->stmt_cap; i++) {
			if (p->stmts[i] == NULL)
				continue;
			size_t j = (size_t)p->stmts[i]->hash & (ncap - 1);
			while (n[j] != NULL)
				j = (j + 1) & (ncap - 1);
			n[j] = p->stmts[i];
		}
		sy_free(p->stmts);
		p->stmts = n;
		p->stmt_cap = ncap;
		mask = ncap - 1;
	}
	stmt *s = sy_calloc(1, sizeof *s);
	if (s == NULL)
		return NULL;
	s->sql = sy_strndup(sql, strlen(sql));
	if (s->sql == NULL) {
		sy_free(s);
		return NULL;
	}
	s->hash = h;
	s->state = STMT_NONE;
	snprintf(s->name, sizeof s->name, "sy_push_%lu", ++p->names);
	size_t i = (size_t)h & mask;
	while (p->stmts[i] != NULL)
		i = (i + 1) & mask;
	p->stmts[i] = s;
	p->stmt_count++;
	return s;
}

/* ---- pipelines: every statement of one round trip sent, then one Sync ---- */

enum { STEP_QUERY, STEP_PREPARE };

typedef struct {
	int kind;
	ExecStatusType expect;
	stmt *prep;
	PGresult *res; /* the result when it had the expected status */
} step;

typedef struct {
	sy_store_push *p;
	PGconn *c;
	step *steps;
	size_t n, cap;
	bool broken; /* a send failed or memory ran out: the pipeline cannot run */
	bool nomem;
	size_t failed; /* after run: the first step that failed, n when none */
	char sqlstate[6];
	bool lost; /* the connection is gone */
	unsigned *round_trips;
} pq_pipe;

static void pipe_init(pq_pipe *pp, sy_store_push *p, PGconn *c, unsigned *round_trips)
{
	memset(pp, 0, sizeof *pp);
	pp->p = p;
	pp->c = c;
	pp->round_trips = round_trips;
}

static void pipe_reset(pq_pipe *pp)
{
	for (size_t i = 0; i < pp->n; i++)
		PQclear(pp->steps[i].res);
	pp->n = 0;
	pp->broken = pp->nomem = pp->lost = false;
	pp->failed = 0;
	pp->sqlstate[0] = '\0';
}

static void pipe_free(pq_pipe *pp)
{
	pipe_reset(pp);
	sy_free(pp->steps);
	pp->steps = NULL;
	pp->cap = 0;
}

static bool add_step(pq_pipe *pp, int kind, ExecStatusType expect, stmt *prep, size_t *idx)
{
	if (pp->n == pp->cap) {
		size_t ncap = pp->cap ? pp->cap * 2 : 32;
		step *n = sy_realloc(pp->steps, ncap * sizeof *n);
		if (n == NULL) {
			pp->broken = pp->nomem = true;
			return false;
		}
		pp->steps = n;
		pp->cap = ncap;
	}
	step *s = &pp->steps[pp->n];
	s->kind = kind;
	s->expect = expect;
	s->prep = prep;
	s->res = NULL;
	if (idx != NULL)
		*idx = pp->n;
	pp->n++;
	return true;
}

/*
 * Queues sql as a named statement (prepared on first use); parameter i is binary when
 * formats (may be NULL: all text) says 1, lengths[i] octets long; the result's columns are
 * binary when result_format is 1 (read them with the col_ helpers).
 */
static size_t pipe_query_fmt(pq_pipe *pp, const char *sql, int nparams, const char *const *params,
                             const int *lengths, const int *formats, int result_format,
                             ExecStatusType expect)
{
	size_t idx = 0;
	if (pp->broken)
		return 0;
	stmt *s = stmt_slot(pp->p, sql);
	if (s != NULL && s->state == STMT_NONE) {
		if (!PQsendPrepare(pp->c, s->name, sql, nparams, NULL)) {
			pp->broken = true;
			return 0;
		}
		s->state = STMT_PENDING;
		if (!add_step(pp, STEP_PREPARE, PGRES_COMMAND_OK, s, NULL))
			return 0;
	}
	int ok = s != NULL ? PQsendQueryPrepared(pp->c, s->name, nparams, params, lengths, formats,
	                                         result_format)
	                   : PQsendQueryParams(pp->c, sql, nparams, NULL, params, lengths, formats,
	                                       result_format);
	if (!ok) {
		pp->broken = true;
		return 0;
	}
	add_step(pp, STEP_QUERY, expect, NULL, &idx);
	return idx;
}

/* pipe_query_fmt with text parameters. */
static size_t pipe_query(pq_pipe *pp, const char *sql, int nparams, const char *const *params,
                         ExecStatusType expect)
{
	return pipe_query_fmt(pp, sql, nparams, params, NULL, NULL, 0, expect);
}

/* pipe_query with the result in binary format. */
static size_t pipe_query_bin(pq_pipe *pp, const char *sql, int nparams, const char *const *params,
                             ExecStatusType expect)
{
	return pipe_query_fmt(pp, sql, nparams, params, NULL, NULL, 1, expect);
}

/* Queues a statement that takes no parameters and is not worth preparing (utilities). */
static size_t pipe_command(pq_pipe *pp, const char *sql)
{
	size_t idx = 0;
	if (pp->broken)
		return 0;
	if (!PQsendQueryParams(pp->c, sql, 0, NULL, NULL, NULL, NULL, 0)) {
		pp->broken = true;
		return 0;
	}
	add_step(pp, STEP_QUERY, PGRES_COMMAND_OK, NULL, &idx);
	return idx;
}

/*
 * Sends the Sync and reads every result. True when every step answered as
 * expected; else pp->failed names the first step that did not, with its SQLSTATE.
 * Results stay in the steps until pipe_reset().
 */
static bool pipe_run(pq_pipe *pp)
{
	bool sync_sent = false;
	pp->failed = pp->n;
	pp->sqlstate[0] = '\0';
	if (!pp->broken) {
		sync_sent = PQpipelineSync(pp->c) == 1;
		if (!sync_sent)
			pp->broken = true;
	}
	if (pp->round_trips != NULL)
		(*pp->round_trips)++;
	for (size_t i = 0; i < pp->n && sync_sent; i++) {
		step *s = &pp->steps[i];
		PGresult *r = PQgetResult(pp->c);
		if (r == NULL) {
			pp->broken = true;
			if (pp->failed == pp->n)
				pp->failed = i;
			break;
		}
		ExecStatusType st = PQresultStatus(r);
		if (st == s->expect) {
			s->res = r;
		} else {
			if (pp->failed == pp->n) {
				pp->failed = i;
				const char *code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
				snprintf(pp->sqlstate, sizeof pp->sqlstate, "%s", code ? code : "");
			}
			PQclear(r);
		}
		if (s->kind == STEP_PREPARE)
			s->prep->state = st == PGRES_COMMAND_OK ? STMT_READY : STMT_NONE;
		/* Each statement's results end with a NULL. */
		while ((r = PQgetResult(pp->c)) != NULL)
			PQclear(r);
	}
	for (size_t i = 0; i < pp->n; i++)
		if (pp->steps[i].kind == STEP_PREPARE && pp->steps[i].prep->state == STMT_PENDING)
			pp->steps[i].prep->state = STMT_NONE;
	if (sync_sent && !pp->broken) {
		PGresult *r = PQgetResult(pp->c);
		if (r == NULL || PQresultStatus(r) != PGRES_PIPELINE_SYNC)
			pp->broken = true;
		PQclear(r);
	}
	if (pp->broken) {
		pp->lost = PQstatus(pp->c) == CONNECTION_BAD;
		if (pp->failed == pp->n)
			pp->failed = 0;
		if (!pp->lost && !pp->nomem) {
			/* Out of step with the server: only a new session is safe. */
			pp->lost = true;
		}
		return false;
	}
	if (pp->failed == pp->n)
		return true;
	if (PQstatus(pp->c) == CONNECTION_BAD)
		pp->lost = true;
	return false;
}

static PGresult *res_of(const pq_pipe *pp, size_t idx)
{
	return idx < pp->n ? pp->steps[idx].res : NULL;
}

/* ---- small helpers ---- */

static const char *pg_type(sy_type t)
{
	switch (t) {
	case SY_TYPE_TEXT: return "text";
	case SY_TYPE_INT32: return "int4";
	case SY_TYPE_INT64: return "int8";
	case SY_TYPE_FLOAT64: return "float8";
	case SY_TYPE_NUMERIC: return "numeric";
	case SY_TYPE_BOOL: return "bool";
	case SY_TYPE_TIMESTAMP: return "timestamptz";
	case SY_TYPE_DATE: return "date";
	case SY_TYPE_UUID: return "uuid";
	case SY_TYPE_BYTES: return "bytea";
	case SY_TYPE_JSON: return "jsonb";
	case SY_TYPE__COUNT: break;
	}
	return "text";
}

/* Appends s as an element of a PostgreSQL array literal (always quoted). */
static void array_elem(sy_buf *b, const char *s, size_t len)
{
	if (b->len > 1)
		sy_buf_putc(b, ',');
	if (s == NULL) {
		sy_buf_puts(b, "NULL");
		return;
	}
	/* worst case reserved once: every character escaped, and the quotes */
	if (len > (SIZE_MAX - 3) / 2)
		b->failed = true;
	if (b->failed || !sy_buf_reserve(b, 2 * len + 2))
		return;
	char *o = b->data + b->len;
	*o++ = '"';
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '"' || s[i] == '\\')
			*o++ = '\\';
		*o++ = s[i];
	}
	*o++ = '"';
	*o = '\0';
	b->len = (size_t)(o - b->data);
}

/* The decimal digits of v, written backwards from the end of d (no snprintf on hot paths). */
#define DECIMAL_MAX 24
static const char *decimal(char d[DECIMAL_MAX], unsigned long long v, size_t *len)
{
	size_t i = DECIMAL_MAX;
	do {
		d[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0);
	*len = DECIMAL_MAX - i;
	return d + i;
}

static bool sqlstate_class(const char *state, const char *cls)
{
	return strncmp(state, cls, 2) == 0;
}

/* ---- manifests ---- */

static man *man_find(sy_store_push *p, long long version)
{
	for (size_t i = 0; i < p->man_count; i++)
		if (p->mans[i].version == version)
			return &p->mans[i];
	return NULL;
}

/* Parses and keeps one stored manifest; NULL when it does not parse or memory runs out. */
static man *man_add(sy_store_push *p, long long version, const char *hash, const char *text,
                    size_t len, sy_error *err)
{
	man *found = man_find(p, version);
	if (found != NULL)
		return found;
	sy_manifest *m = sy_manifest_parse(text, len, err);
	if (m == NULL)
		return NULL;
	if (p->man_count == p->man_cap) {
		size_t ncap = p->man_cap ? p->man_cap * 2 : 8;
		man *n = sy_realloc(p->mans, ncap * sizeof *n);
		if (n == NULL) {
			sy_manifest_free(m);
			sy_error_set(err, SY_ERR_NOMEM, "out of memory");
			return NULL;
		}
		p->mans = n;
		p->man_cap = ncap;
	}
	man *e = &p->mans[p->man_count++];
	memset(e, 0, sizeof *e);
	e->version = version;
	snprintf(e->hash, sizeof e->hash, "%s", hash);
	e->m = m;
	return e;
}

static char *dup_printf(sy_buf *b)
{
	if (b->failed)
		return NULL;
	size_t len;
	return sy_buf_steal(b, &len);
}

/*
 * Every source write names its mutation ($1) for the fence trigger in the same statement:
 * the one-row function scan runs before the row is written, so the trigger (which fires
 * after the row) reads it; a statement fewer per unit than a separate set_config.
 */
static const char with_mutation[] =
        "pg_catalog.set_config('synchro.mutation_id', $1::text, true) AS sy_mutation";

/* The select list of a read after a write: fence state and version, row presence, fields. */
static void read_columns(sy_buf *b, const tinfo *x)
{
	sy_buf_printf(b, "SELECT f.state, f.version, r.%s IS NOT NULL", x->pk);
	for (size_t j = 0; j < x->t->field_count; j++)
		sy_buf_printf(b, ", r.%s", x->cols[j]);
}

/* Quoted names and the fixed statements of every table of e (once per manifest). */
static bool man_tables(PGconn *c, man *e, sy_error *err)
{
	if (e->ti != NULL)
		return true;
	const sy_manifest *m = e->m;
	tinfo *ti = sy_calloc(m->table_count ? m->table_count : 1, sizeof *ti);
	if (ti == NULL)
		return sy_error_set(err, SY_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < m->table_count; i++) {
		const sy_table *t = &m->tables[i];
		tinfo *x = &ti[i];
		x->t = t;
		x->owner = -1;
		x->rel = sy_store_quote_relation(c, t->relation, err);
		x->pk = x->rel ? sy_store_quote_ident(c, t->pk.column, err) : NULL;
		x->cols = sy_calloc(t->field_count ? t->field_count : 1, sizeof *x->cols);
		if (x->rel == NULL || x->pk == NULL || x->cols == NULL)
			goto fail;
		for (size_t j = 0; j < t->field_count; j++) {
			x->cols[j] = sy_store_quote_ident(c, t->fields[j].column, err);
			if (x->cols[j] == NULL)
				goto fail;
			if (t->owner_field != NULL &&
			    strcmp(t->owner_field, t->fields[j].field_id) == 0)
				x->owner = (int)j;
		}
		const char *pkt = pg_type(t->pk.type);
		sy_buf b = SY_BUF_INIT;
		sy_buf_printf(&b, "SELECT r.%s", x->pk);
		for (size_t j = 0; j < t->field_count; j++)
			sy_buf_printf(&b, ", r.%s", x->cols[j]);
		sy_buf_printf(&b, " FROM %s r WHERE r.%s = $1::%s FOR UPDATE OF r", x->rel, x->pk,
		              pkt);
		x->lock_sql = dup_printf(&b);
		sy_buf_free(&b);
		read_columns(&b, x);
		sy_buf_printf(&b,
		              " FROM (SELECT 1) one"
		              " LEFT JOIN synchro.row_fences f ON f.table_id = $1 AND f.pk = $2"
		              " LEFT JOIN %s r ON r.%s = $2::%s",
		              x->rel, x->pk, pkt);
		x->read_sql = dup_printf(&b);
		sy_buf_free(&b);
		/*
		 * One primary-key probe per key, whatever the statistics said when the plan
		 * was cached (LATERAL ... LIMIT 1: never a hash join over a table scan).
		 */
		read_columns(&b, x);
		sy_buf_printf(
		        &b,
		        " FROM unnest($2::text[]) WITH ORDINALITY AS q(pk, i)"
		        " LEFT JOIN LATERAL (SELECT f.state, f.version FROM synchro.row_fences f"
		        "   WHERE f.table_id = $1 AND f.pk = q.pk LIMIT 1) f ON true"
		        " LEFT JOIN LATERAL (SELECT * FROM %s s WHERE s.%s = q.pk::%s LIMIT 1) r"
		        "   ON true ORDER BY q.i",
		        x->rel, x->pk, pkt);
		x->reads_sql = dup_printf(&b);
		sy_buf_free(&b);
		if (t->delete_mode == SY_DELETE_SOFT) {
			char *del = sy_store_quote_ident(c, t->delete_column, err);
			if (del == NULL)
				goto fail;
			/* ADR: a soft delete leaves the source tombstone (deleted column set). */
			sy_buf_printf(&b, "UPDATE %s SET %s = now() FROM %s WHERE %s = $2::%s",
			              x->rel, del, with_mutation, x->pk, pkt);
			sy_free(del);
		} else {
			sy_buf_printf(&b, "DELETE FROM %s USING %s WHERE %s = $2::%s", x->rel,
			              with_mutation, x->pk, pkt);
		}
		x->delete_sql = dup_printf(&b);
		sy_buf_free(&b);
		if (x->lock_sql == NULL || x->read_sql == NULL || x->reads_sql == NULL ||
		    x->delete_sql == NULL) {
			sy_error_set(err, SY_ERR_NOMEM, "out of memory");
			goto fail;
		}
	}
	e->ti = ti;
	return true;
fail:
	tinfo_free(ti, m->table_count);
	return false;
}

static const tinfo *man_tinfo(const man *e, const sy_table *t)
{
	return &e->ti[t - e->m->tables];
}

/* ---- the request being answered ---- */

/* A mutation identity found in the mutation ledger. */
typedef struct {
	size_t index; /* in the request */
	bool same_batch;
	bool fp_equal;
	bool atomic_rejected; /* its stored outcome is atomic_batch_rejected */
	char *outcome;        /* the exact stored canonical outcome (sy_free) */
	size_t outcome_len;
} ledgered;

/* What the gates read: latest schema, client, batch and mutation ledgers. */
typedef struct {
	bool schema_found;
	long long schema_version;
	char schema_hash[SY_HASH_HEX_LEN + 1];
	bool client_found;
	bool bound;
	long long generation;
	bool retired;
	char now[SY_STORE_TIME_LEN + 1]; /* the transaction's now() (in-transaction lookup) */
	bool batch_found;
	bool batch_complete;
	bool batch_fp_equal;
	int http_status;
	char *response; /* sy_free */
	size_t response_len;
	bool probed; /* the mutation ledger was read (led and nled hold what it has) */
	ledgered *led;
	size_t nled;
	bool schema_stale; /* head_sql found a newer schema than this process knows (or it knows
	                      none) */
} lookup;

static void schema_found(lookup *lk, long long version, const char *hash)
{
	lk->schema_found = true;
	lk->schema_version = version;
	snprintf(lk->schema_hash, sizeof lk->schema_hash, "%s", hash);
}

/* A mutation's classification before the database is asked (pure rules). */
typedef struct {
	const tinfo *ti;  /* NULL when the table is not in the current schema */
	sy_code terminal; /* decided without the row: schema, table, write none */
	bool invalid;     /* validation_failed unless the owner policy refuses first */
	const char *message;
	const char **incompat;
	size_t nincompat;
	const char *pk_text; /* the key as PostgreSQL text (the fence pk) */
	const char **vals;   /* per column: PostgreSQL text input, NULL for null */
	const sy_field **fields;
} pre;

/* A mutation's outcome in this execution. */
typedef struct {
	sy_outcome o;
	bool decided;
	const sy_json *stored; /* cross-batch replay: the stored outcome */
} res;

/* The current row state of one identity, from a lock or a read. */
typedef struct {
	sy_row_state state;
	const char *version; /* NULL without a fence */
	bool has_row;
	const PGresult *r;
	int row; /* of r */
	int off; /* column of the first field */
} rowst;

/* X_PROBE: the gates need the mutation ledger before they can answer. */
typedef enum { X_OK, X_DONE, X_FAIL, X_RETRY, X_RESTART, X_PROBE } xstatus;

typedef struct {
	sy_store_push *p;
	PGconn *c;
	const sy_store_push_params *prm;
	const sy_push_request *req;
	const char *user;
	sy_store_push_answer *out;
	sy_error *err;
	sy_store_status st; /* of an operational failure */
	char sqlstate[6];
	sy_fingerprint bfp;
	char bfp_hex[SY_FP_HEX_LEN + 1];
	bool ledger_ready; /* mfp, by_id and ids are set (ledger_inputs()) */
	sy_fingerprint *mfp;
	size_t *by_id; /* request indexes sorted by mutation_id */
	char *ids;     /* uuid[] literal of every mutation id */
	man *cur;
	pq_pipe pp;
	lookup lk;
	long long head_known; /* the schema version head_sql was given (0: none known) */
	/* first execution */
	bool prepared;
	sy_json_doc *doc; /* arena of outcomes and their rows */
	pre *pre;
	res *res;
	size_t applied;
	char server_time[SY_STORE_TIME_LEN + 1];
} ctx;

static const char fence_sql[] = "SELECT state, version FROM synchro.lock_fence($1, $2)";

static const char schema_sql[] =
        "SELECT version, hash FROM synchro.schema_versions ORDER BY version DESC LIMIT 1";
static const char latest_sql[] = "SELECT version, hash, manifest FROM synchro.schema_versions"
                                 " ORDER BY version DESC LIMIT 1";
/*
 * The lookup before any transaction, in one statement (a replay is this and nothing else):
 * client, retirement, whether a schema newer than $4 (the latest this process knows;
 * published versions never change) exists, batch; NULL columns where there is none.
 * Only when one does is the latest read (latest_sql): an index probe here instead of a
 * sorted scan joined in cost about a fifth of PostgreSQL's CPU for a 1-mutation replay.
 * The probe is max(version), one step down the primary key from its end: "EXISTS (...
 * version > $4)" planned generically as a filtered scan of every published version, and
 * when none is newer (nearly always) it read them all (2,000 versions: 0.18 ms a push).
 */
static const char head_sql[] =
        "SELECT c.user_id, c.generation,"
        "       EXISTS (SELECT 1 FROM synchro.retirements r WHERE r.client_id = c.client_id),"
        "       COALESCE((SELECT max(v.version) FROM synchro.schema_versions v) > $4::bigint,"
        "                false),"
        "       b.state, b.fp_algorithm, b.fp_version, b.fp_domain, b.fingerprint, b.http_status,"
        "       b.response"
        "  FROM (SELECT 1) one"
        "  LEFT JOIN synchro.clients c ON c.client_id = $1::uuid"
        "  LEFT JOIN synchro.batches b"
        "         ON b.user_id = $2 AND b.client_id = $1::uuid AND b.batch_id = $3::uuid";
/* ADR: concurrent requests of one client serialize here; the row lock also orders a push
 * against connect (new generation) and retirement, which update or lock this row. */
static const char client_lock_sql[] =
        "SELECT c.user_id, c.generation, now()"
        "  FROM synchro.clients c WHERE c.client_id = $1::uuid FOR NO KEY UPDATE OF c";
/*
 * Retirement under the lock, in a statement of its own after client_lock_sql: that
 * statement reads the client row as it is once the lock is granted, but any other table
 * as it was when it started waiting (READ COMMITTED), so a retirement that committed
 * during the wait would be missed there.
 */
static const char retired_sql[] =
        "SELECT EXISTS (SELECT 1 FROM synchro.retirements r WHERE r.client_id = $1::uuid)";
static const char batch_sql[] =
        "SELECT b.state, b.fp_algorithm, b.fp_version, b.fp_domain, b.fingerprint, b.http_status,"
        "       b.response"
        "  FROM synchro.batches b"
        " WHERE b.user_id = $1 AND b.client_id = $2::uuid AND b.batch_id = $3::uuid";
/*
 * One primary-key probe per id (the LIMIT keeps the subquery a parameterized probe),
 * never a scan of the client's whole ledger, whatever the statistics say. When the batch
 * ($4) exists, the answer is its replay or 409 and never reads the mutation ledger, so the
 * probe returns nothing rather than read (and detoast) every stored outcome of a replay.
 */
static const char mutations_sql[] =
        "SELECT m.mutation_id, m.batch_id, m.fp_algorithm, m.fp_version, m.fp_domain,"
        "       encode(m.fingerprint, 'hex'), convert_from(m.outcome, 'UTF8'),"
        "       m.code IS NOT DISTINCT FROM 'atomic_batch_rejected'"
        "  FROM unnest($3::uuid[]) AS q(id)"
        "  CROSS JOIN LATERAL (SELECT * FROM synchro.mutations l"
        "        WHERE l.user_id = $1 AND l.client_id = $2::uuid AND l.mutation_id = q.id"
        "        LIMIT 1) m"
        " WHERE NOT EXISTS (SELECT 1 FROM synchro.batches b"
        "                    WHERE b.user_id = $1 AND b.client_id = $2::uuid"
        "                      AND b.batch_id = $4::uuid)";
static const char manifests_sql[] = "SELECT version, hash, manifest FROM synchro.schema_versions"
                                    " WHERE version = ANY ($1::bigint[])";
static const char synced_sql[] =
        "SELECT table_id FROM synchro.synced_tables WHERE table_id = ANY ($1::text[])";
/*
 * The transaction's settings, and generic plans for the lookup under the lock (until
 * generic_off): the mutation ledger probe takes an array of ids, whose generic plan the
 * planner prices for more ids than a small push has, so it planned the probe again at
 * every call (~140 us of a 1-mutation push, statement log). Those statements are index
 * probes whatever the parameters. The source writes after them, whose triggers are the
 * application's too, keep the session's own plan_cache_mode.
 */
static const char settings_sql[] =
        "SELECT pg_catalog.set_config('lock_timeout', $1, true),"
        "       pg_catalog.set_config('synchro.client_id', $2, true),"
        "       pg_catalog.set_config('synchro.user_id', $3, true),"
        "       pg_catalog.set_config('synchro.no_resurrection', 'on', true),"
        "       pg_catalog.set_config('plan_cache_mode', 'force_generic_plan', true)";
static const char generic_off[] = "SET LOCAL plan_cache_mode TO DEFAULT";
static const char generic_on[] = "SET LOCAL plan_cache_mode = force_generic_plan";
/*
 * The batch ledger row, written complete with its response just before the mutation
 * rows, in the first execution's one transaction. Its identity is claimed by the
 * client row lock the transaction took first: every first execution of a client holds
 * it, and the lookup statements after it see any batch committed while it waited. So
 * no row is ever visible in a state but complete, and a separate claim and UPDATE of
 * the tens of kilobytes of response (two row versions, the update trigger) are saved.
 */
static const char batch_row_sql[] =
        "INSERT INTO synchro.batches (user_id, client_id, batch_id, protocol_version,"
        "       client_generation, schema_version, schema_hash, fp_algorithm, fp_version,"
        "       fp_domain, fingerprint, atomic, state, http_status, response, completed_at)"
        " VALUES ($1, $2::uuid, $3::uuid, " PROTOCOL_VERSION ", $4::bigint, $5::bigint, $6, $7,"
        "         $8::int, $9, decode($10, 'hex'), $11::bool, 'complete', 200,"
        "         convert_to($12, 'UTF8'), clock_timestamp())";
static const char ledger_sql[] =
        "INSERT INTO synchro.mutations (user_id, client_id, mutation_id, fp_algorithm, fp_version,"
        "       fp_domain, fingerprint, batch_id, ordinal, authored_schema_version,"
        "       authored_schema_hash, submitted_schema_version, submitted_schema_hash, table_id,"
        "       pk, operation, status, code, outcome, outcome_schema_version, outcome_schema_hash)"
        " SELECT $1, $2::uuid, u.mutation_id, $3, $4::int, $5, u.fp, $6::uuid,"
        "        u.ordinal, u.av, u.ah, $7::bigint, $8, u.table_id, u.pk, u.op, u.status, u.code,"
        "        u.outcome, u.ov, u.oh"
        "   FROM unnest($9::uuid[], $10::bytea[], $11::int[], $12::bigint[], $13::text[],"
        "               $14::text[], $15::text[], $16::text[], $17::text[], $18::text[],"
        "               $19::bytea[], $20::bigint[], $21::text[])"
        "        AS u(mutation_id, fp, ordinal, av, ah, table_id, pk, op, status, code, outcome,"
        "             ov, oh)";
static const char epoch_sql[] =
        "UPDATE synchro.clients SET accepted_write_epoch = accepted_write_epoch + 1"
        " WHERE client_id = $1::uuid";

static const char msg_version_conflict[] = "base_version is not the current version of the row";
static const char msg_exists[] = "the row already exists";
static const char msg_deleted[] = "the row is deleted";
static const char msg_not_found[] = "the row does not exist";
static const char msg_policy[] = "the write policy does not allow this mutation";
static const char msg_table_gone[] = "the table is not in the current schema";
static const char msg_incompatible[] =
        "authored fields cannot be represented by the current schema";
static const char msg_not_synced[] = "the table is not synced";
static const char msg_constraint[] = "the database rejected the values (constraint or data check)";

/* ---- answers ---- */

static void answer_error(ctx *x, sy_errcode code, const char *fmt, ...) SY_PRINTF(3, 4);

static void answer_error(ctx *x, sy_errcode code, const char *fmt, ...)
{
	va_list ap;
	x->out->error = code;
	x->out->http_status = sy_errcode_http_status(code);
	x->out->replay = false;
	sy_buf_reset(&x->out->body);
	va_start(ap, fmt);
	vsnprintf(x->out->message, sizeof x->out->message, fmt, ap);
	va_end(ap);
}

/*
 * An operational failure: the whole request answers 503 and nothing commits. what
 * names the step; the diagnostic carries the SQLSTATE, never a server message (which
 * can quote values).
 */
static xstatus op_fail(ctx *x, const char *what)
{
	if (x->pp.lost || PQstatus(x->c) == CONNECTION_BAD)
		x->st = SY_STORE_CONNECTION;
	else if (x->pp.nomem)
		x->st = SY_STORE_NOMEM;
	else if (x->st == SY_STORE_OK)
		x->st = SY_STORE_FAILED;
	if (x->sqlstate[0] == '\0')
		memcpy(x->sqlstate, x->pp.sqlstate, sizeof x->sqlstate);
	if (x->st == SY_STORE_CONNECTION)
		sy_store_fail(x->err, x->st, "push: %s: connection to the server lost", what);
	else if (x->st == SY_STORE_NOMEM)
		sy_store_fail(x->err, x->st, "push: %s: out of memory", what);
	else if (x->sqlstate[0] != '\0')
		sy_store_fail(x->err, x->st, "push: %s: SQLSTATE %s", what, x->sqlstate);
	else
		sy_store_fail(x->err, x->st, "push: %s", what);
	answer_error(x, SY_ERR_TEMPORARY_UNAVAILABLE, "request could not be committed");
	return X_FAIL;
}

static xstatus nomem(ctx *x, const char *what)
{
	x->pp.nomem = true;
	x->st = SY_STORE_NOMEM;
	return op_fail(x, what);
}

/* ---- lookup ---- */

static int cmp_ids(const void *a, const void *b, void *arg)
{
	const sy_push_request *req = arg;
	return strcmp(req->mutations[*(const size_t *)a].mutation_id,
	              req->mutations[*(const size_t *)b].mutation_id);
}

/* Insertion-free sort: qsort_r is not portable, and requests hold at most 1000 ids. */
static void sort_ids(size_t *v, size_t n, const sy_push_request *req)
{
	for (size_t i = 1; i < n; i++) {
		size_t key = v[i], j = i;
		/* binary search for the insertion point keeps this O(n log n) comparisons */
		size_t lo = 0, hi = i;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (cmp_ids(&v[mid], &key, (void *)req) <= 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (j = i; j > lo; j--)
			v[j] = v[j - 1];
		v[lo] = key;
	}
}

static size_t find_id(const ctx *x, const char *id)
{
	size_t lo = 0, hi = x->req->mutation_count;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(x->req->mutations[x->by_id[mid]].mutation_id, id);
		if (c == 0)
			return x->by_id[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return SIZE_MAX;
}

static void lookup_clear(lookup *lk)
{
	sy_free(lk->response);
	for (size_t i = 0; i < lk->nled; i++)
		sy_free(lk->led[i].outcome);
	sy_free(lk->led);
	memset(lk, 0, sizeof *lk);
}

/*
 * Column values in either result format (PQfformat): binary results (pipe_query_bin) skip
 * the server's text output and the parsing here, and bytea arrives as its octets.
 */
static bool col_bool(const PGresult *r, int row, int col)
{
	const char *v = PQgetvalue(r, row, col);
	return PQfformat(r, col) == 1 ? v[0] != 0 : strcmp(v, "t") == 0;
}

/* An integer column (int2, int4 or int8). */
static long long col_int(const PGresult *r, int row, int col)
{
	if (PQfformat(r, col) == 0)
		return atoll(PQgetvalue(r, row, col));
	const unsigned char *v = (const unsigned char *)PQgetvalue(r, row, col);
	int len = PQgetlength(r, row, col);
	if (len < 1 || len > 8)
		return 0;
	/* big-endian two's complement: the octets, their sign extended from the first */
	uint64_t u = sy_be_get(v, (size_t)len);
	if (len < 8 && (v[0] & 0x80) != 0)
		u |= UINT64_MAX << (8 * len);
	return (long long)(int64_t)u;
}

/* A SHA-256 digest: bytea octets (binary) or their hex (text, encode(..., 'hex')). */
static bool col_digest(const PGresult *r, int row, int col, uint8_t digest[SY_FP_DIGEST_LEN])
{
	const char *v = PQgetvalue(r, row, col);
	size_t len = (size_t)PQgetlength(r, row, col);
	if (PQfformat(r, col) == 0)
		return sy_fp_from_hex(v, len, digest);
	if (len != SY_FP_DIGEST_LEN)
		return false;
	memcpy(digest, v, len);
	return true;
}

/* Whether the stored fingerprint at columns col.. (algorithm, version, domain, digest)
 * is fp. */
static bool fp_stored_equal(const sy_fingerprint *fp, const PGresult *r, int row, int col)
{
	uint8_t digest[SY_FP_DIGEST_LEN];
	if (!col_digest(r, row, col + 3, digest))
		return false;
	return sy_fp_matches(fp, PQgetvalue(r, row, col), (int)col_int(r, row, col + 1),
	                     PQgetvalue(r, row, col + 2), digest, sizeof digest);
}

static size_t queue_probe(ctx *x)
{
	const char *pm[] = {x->user, x->req->client_id, x->ids, x->req->batch_id};
	return pipe_query(&x->pp, mutations_sql, 4, pm, PGRES_TUPLES_OK);
}

/*
 * Queues the lookup: idx[0..2] receive the results holding the client, the latest
 * schema and the batch (one statement before the transaction, three inside it, where the
 * client row is locked), idx[3] the mutation ledger rows (inside the transaction only).
 * Before the transaction the mutation ledger is not read: an exact replay needs only
 * head_sql, and a first execution reads the ledger again under the client's lock anyway
 * (probe() reads it first when a gate after the ledger's would refuse the request).
 */
static void queue_lookup(ctx *x, bool locked, size_t idx[5])
{
	const sy_push_request *req = x->req;
	const char *pc[] = {req->client_id};
	const char *pb[] = {x->user, req->client_id, req->batch_id};
	if (locked) {
		idx[0] = pipe_query(&x->pp, client_lock_sql, 1, pc, PGRES_TUPLES_OK);
		idx[1] = pipe_query(&x->pp, schema_sql, 0, NULL, PGRES_TUPLES_OK);
		idx[2] = pipe_query_bin(&x->pp, batch_sql, 3, pb, PGRES_TUPLES_OK);
		idx[3] = queue_probe(x);
		idx[4] = pipe_query(&x->pp, retired_sql, 1, pc, PGRES_TUPLES_OK);
	} else {
		char known[24];
		const man *m = x->p->latest > 0 ? man_find(x->p, x->p->latest) : NULL;
		x->head_known = m != NULL && m->hash[0] != '\0' ? m->version : 0;
		snprintf(known, sizeof known, "%lld", x->head_known);
		const char *ph[] = {req->client_id, x->user, req->batch_id, known};
		idx[0] = idx[1] = idx[2] = pipe_query_bin(&x->pp, head_sql, 4, ph, PGRES_TUPLES_OK);
		idx[3] = idx[4] = SIZE_MAX;
	}
}

/* Whether result r has a row whose column col is not NULL. */
static bool present(const PGresult *r, int col)
{
	return PQntuples(r) == 1 && !PQgetisnull(r, 0, col);
}

static bool read_ledger(ctx *x, const PGresult *rm);

static bool read_lookup(ctx *x, bool locked, const size_t idx[5])
{
	lookup *lk = &x->lk;
	lookup_clear(lk);
	const PGresult *rc = res_of(&x->pp, idx[0]), *rs = res_of(&x->pp, idx[1]),
	               *rb = res_of(&x->pp, idx[2]);
	const PGresult *rm = locked ? res_of(&x->pp, idx[3]) : NULL;
	/* columns of the batch part in its result */
	int bc = locked ? 0 : 4;
	if (present(rc, 0)) {
		lk->client_found = true;
		lk->bound = strcmp(PQgetvalue(rc, 0, 0), x->user) == 0;
		lk->generation = col_int(rc, 0, 1);
		if (locked)
			sy_store_format_time(PQgetvalue(rc, 0, 2), lk->now);
		else
			lk->retired = col_bool(rc, 0, 2);
	}
	/* under the lock, retirement has a statement of its own (retired_sql) */
	const PGresult *rr = locked ? res_of(&x->pp, idx[4]) : NULL;
	if (rr != NULL && present(rr, 0))
		lk->retired = col_bool(rr, 0, 0);
	if (locked) {
		if (present(rs, 0))
			schema_found(lk, atoll(PQgetvalue(rs, 0, 0)), PQgetvalue(rs, 0, 1));
	} else if (PQntuples(rs) == 1 && !col_bool(rs, 0, 3)) {
		/* nothing newer than the version queue_lookup passed: it is the latest (or
		 * none is published when it passed 0) */
		const man *m = x->head_known > 0 ? man_find(x->p, x->head_known) : NULL;
		if (m != NULL)
			schema_found(lk, m->version, m->hash);
	} else {
		lk->schema_stale = true;
	}
	if (present(rb, bc)) {
		lk->batch_found = true;
		lk->batch_complete = strcmp(PQgetvalue(rb, 0, bc), "complete") == 0;
		lk->batch_fp_equal = fp_stored_equal(&x->bfp, rb, 0, bc + 1);
		lk->http_status = (int)col_int(rb, 0, bc + 5);
		if (!PQgetisnull(rb, 0, bc + 6)) {
			lk->response_len = (size_t)PQgetlength(rb, 0, bc + 6);
			lk->response = sy_strndup(PQgetvalue(rb, 0, bc + 6), lk->response_len);
			if (lk->response == NULL)
				return false;
		}
	}
	return !locked || read_ledger(x, rm);
}

/* The mutation ledger rows of the request's ids (from mutations_sql) into x->lk. */
static bool read_ledger(ctx *x, const PGresult *rm)
{
	lookup *lk = &x->lk;
	int n = PQntuples(rm);
	lk->probed = true;
	if (n > 0) {
		lk->led = sy_calloc((size_t)n, sizeof *lk->led);
		if (lk->led == NULL)
			return false;
	}
	for (int i = 0; i < n; i++) {
		size_t k = find_id(x, PQgetvalue(rm, i, 0));
		if (k == SIZE_MAX)
			continue;
		ledgered *l = &lk->led[lk->nled++];
		l->index = k;
		l->same_batch = strcmp(PQgetvalue(rm, i, 1), x->req->batch_id) == 0;
		l->fp_equal = fp_stored_equal(&x->mfp[k], rm, i, 2);
		l->atomic_rejected = strcmp(PQgetvalue(rm, i, 7), "t") == 0;
		l->outcome_len = (size_t)PQgetlength(rm, i, 6);
		l->outcome = sy_strndup(PQgetvalue(rm, i, 6), l->outcome_len);
		if (l->outcome == NULL)
			return false;
	}
	return true;
}

/*
 * What reading and writing the mutation ledger needs: the mutation fingerprints, the
 * ids sorted and as a uuid[] literal. An exact replay needs none of them, so they are
 * made only before the ledger is first read.
 */
static xstatus ledger_inputs(ctx *x)
{
	const sy_push_request *req = x->req;
	size_t n = req->mutation_count;
	sy_error fe = {0};
	if (x->ledger_ready)
		return X_OK;
	x->mfp = sy_calloc(n, sizeof *x->mfp);
	x->by_id = sy_calloc(n, sizeof *x->by_id);
	if (x->mfp == NULL || x->by_id == NULL)
		return nomem(x, "request");
	/* The user was checked by the batch fingerprint: only memory can fail here. */
	if (!sy_fp_mutations(req, x->user, strlen(x->user), x->mfp, &fe))
		return nomem(x, "fingerprints");
	for (size_t i = 0; i < n; i++)
		x->by_id[i] = i;
	sort_ids(x->by_id, n, req);
	sy_buf ids = SY_BUF_INIT;
	sy_buf_putc(&ids, '{');
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			sy_buf_putc(&ids, ',');
		sy_buf_puts(&ids, req->mutations[i].mutation_id);
	}
	sy_buf_putc(&ids, '}');
	if (ids.failed) {
		sy_buf_free(&ids);
		return nomem(x, "request");
	}
	x->ids = ids.data;
	x->ledger_ready = true;
	return X_OK;
}

/* Reads the mutation ledger after a lookup that did not (one round trip). */
static xstatus probe(ctx *x)
{
	xstatus s = ledger_inputs(x);
	if (s != X_OK)
		return s;
	pipe_reset(&x->pp);
	size_t idx = queue_probe(x);
	if (!pipe_run(&x->pp))
		return op_fail(x, "mutation ledger lookup");
	if (!read_ledger(x, res_of(&x->pp, idx)))
		return nomem(x, "mutation ledger lookup");
	return X_OK;
}

/*
 * The gates after the structural ones, in the ADR's order. X_OK: first execution may
 * proceed; X_DONE: *x->out holds the answer (an error or an exact replay); X_PROBE: the
 * mutation ledger was not read and a later gate refuses the request, so the ledger's
 * answer (which precedes it) must be known first. X_OK without the ledger read is only
 * a go-ahead to the transaction, whose lookup reads it and decides again.
 */
static xstatus decide(ctx *x)
{
	const lookup *lk = &x->lk;
	const sy_push_request *req = x->req;
	if (!lk->client_found || !lk->bound) {
		answer_error(x, SY_ERR_AUTH_REQUIRED, "the client is not registered to this user");
		return X_DONE;
	}
	if (lk->retired) {
		answer_error(x, SY_ERR_CLIENT_RETIRED, "the client is retired");
		return X_DONE;
	}
	/* ADR "Exact replay": before every mutable check. */
	if (lk->batch_found) {
		if (!lk->batch_fp_equal) {
			answer_error(x, SY_ERR_IDEMPOTENCY_CONFLICT,
			             "batch_id was used for a different request");
			return X_DONE;
		}
		if (!lk->batch_complete || lk->response == NULL) {
			x->st = SY_STORE_FAILED;
			return op_fail(x, "a visible batch row is not complete");
		}
		x->out->error = SY_ERR_NONE;
		x->out->http_status = lk->http_status;
		x->out->replay = true;
		sy_buf_reset(&x->out->body);
		if (!sy_buf_append(&x->out->body, lk->response, lk->response_len))
			return nomem(x, "replay");
		return X_DONE;
	}
	if (!lk->probed) {
		bool refused = (long long)req->client_generation != lk->generation ||
		               req->schema.version != (uint64_t)x->cur->version ||
		               strcmp(req->schema.hash, x->cur->hash) != 0;
		return refused ? X_PROBE : X_OK;
	}
	for (size_t i = 0; i < lk->nled; i++) {
		if (!lk->led[i].fp_equal) {
			answer_error(x, SY_ERR_IDEMPOTENCY_CONFLICT,
			             "mutations[%zu].mutation_id was used for a different mutation",
			             lk->led[i].index);
			return X_DONE;
		}
	}
	if (req->atomic && lk->nled > 0) {
		answer_error(x, SY_ERR_INVALID_REQUEST,
		             "mutations[%zu].mutation_id: an atomic request cannot carry a mutation"
		             " recorded by another batch",
		             lk->led[0].index);
		return X_DONE;
	}
	/*
	 * The symmetric rule: a non-atomic response never carries atomic_batch_rejected
	 * (ADR), so a mutation rejected with its atomic group cannot be replayed into one;
	 * its intent needs a new mutation_id.
	 */
	for (size_t i = 0; !req->atomic && i < lk->nled; i++) {
		if (lk->led[i].atomic_rejected) {
			answer_error(
			        x, SY_ERR_INVALID_REQUEST,
			        "mutations[%zu].mutation_id: rejected with its atomic batch; a new"
			        " attempt needs a new mutation_id",
			        lk->led[i].index);
			return X_DONE;
		}
	}
	if ((long long)req->client_generation != lk->generation) {
		answer_error(x, SY_ERR_CLIENT_GENERATION_EXPIRED,
		             "client_generation is not the current generation; connect again");
		return X_DONE;
	}
	if (req->schema.version != (uint64_t)x->cur->version ||
	    strcmp(req->schema.hash, x->cur->hash) != 0) {
		x->out->current.version = (uint64_t)x->cur->version;
		snprintf(x->out->current.hash, sizeof x->out->current.hash, "%s", x->cur->hash);
		x->out->received = req->schema;
		answer_error(x, SY_ERR_SCHEMA_MISMATCH,
		             "the request schema is not the current schema");
		return X_DONE;
	}
	return X_OK;
}

/* ---- schemas: the current one and the authored ones ---- */

static char *arena_dup(sy_json_doc *doc, const char *s, size_t len)
{
	char *d = sy_json_doc_alloc(doc, len + 1);
	if (d != NULL) {
		memcpy(d, s, len);
		d[len] = '\0';
	}
	return d;
}

static const char *arena_printf(sy_json_doc *doc, const char *fmt, ...) SY_PRINTF(2, 3);

static const char *arena_printf(sy_json_doc *doc, const char *fmt, ...)
{
	char tmp[SY_ERROR_MESSAGE_MAX];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	return arena_dup(doc, tmp, strlen(tmp));
}

/* Caches the manifest of row i of r (version, hash, manifest). */
static xstatus keep_manifest(ctx *x, const PGresult *r, int i)
{
	sy_error e = {0};
	const char *hash = PQgetvalue(r, i, 1);
	man *m = man_add(x->p, atoll(PQgetvalue(r, i, 0)), hash, PQgetvalue(r, i, 2),
	                 (size_t)PQgetlength(r, i, 2), &e);
	if (m == NULL && e.code == SY_ERR_NOMEM)
		return nomem(x, "schema lookup");
	/* A stored manifest that does not reproduce its hash is never used. */
	if (m != NULL && strcmp(m->m->hash, hash) != 0)
		m->hash[0] = '\0';
	return X_OK;
}

/* Reads the stored manifests of versions[0..n) into the cache (one round trip). */
static xstatus fetch_manifests(ctx *x, const long long *versions, size_t n)
{
	sy_buf lit = SY_BUF_INIT;
	sy_buf_putc(&lit, '{');
	for (size_t i = 0; i < n; i++)
		sy_buf_printf(&lit, "%s%lld", i ? "," : "", versions[i]);
	sy_buf_putc(&lit, '}');
	if (lit.failed) {
		sy_buf_free(&lit);
		return nomem(x, "schema lookup");
	}
	pipe_reset(&x->pp);
	const char *pv[] = {lit.data};
	size_t idx = pipe_query(&x->pp, manifests_sql, 1, pv, PGRES_TUPLES_OK);
	bool ok = pipe_run(&x->pp);
	sy_buf_free(&lit);
	if (!ok)
		return op_fail(x, "schema lookup");
	const PGresult *r = res_of(&x->pp, idx);
	for (int i = 0; i < PQntuples(r); i++)
		if (keep_manifest(x, r, i) != X_OK)
			return X_FAIL;
	return X_OK;
}

/*
 * Reads the latest published version into x->lk, with its manifest into the cache, when
 * head_sql found one newer than this process knew (one round trip).
 */
static xstatus latest_schema(ctx *x)
{
	pipe_reset(&x->pp);
	size_t idx = pipe_query(&x->pp, latest_sql, 0, NULL, PGRES_TUPLES_OK);
	if (!pipe_run(&x->pp))
		return op_fail(x, "schema lookup");
	const PGresult *r = res_of(&x->pp, idx);
	if (!present(r, 0))
		return X_OK;
	schema_found(&x->lk, atoll(PQgetvalue(r, 0, 0)), PQgetvalue(r, 0, 1));
	return man_find(x->p, x->lk.schema_version) != NULL ? X_OK : keep_manifest(x, r, 0);
}

/* Makes x->cur the latest published schema (read again only when the version moved). */
static xstatus current_schema(ctx *x)
{
	const lookup *lk = &x->lk;
	x->cur = NULL;
	if (!lk->schema_found)
		return X_OK;
	man *e = man_find(x->p, lk->schema_version);
	if (e == NULL) {
		xstatus s = fetch_manifests(x, &lk->schema_version, 1);
		if (s != X_OK)
			return s;
		e = man_find(x->p, lk->schema_version);
	}
	if (e == NULL || e->hash[0] == '\0' || strcmp(e->hash, lk->schema_hash) != 0) {
		x->st = SY_STORE_FAILED;
		return op_fail(x, "the current schema manifest cannot be read");
	}
	sy_error e2 = {0};
	if (!man_tables(x->c, e, &e2)) {
		if (e2.code == SY_ERR_NOMEM)
			return nomem(x, "schema");
		x->st = SY_STORE_FAILED;
		return op_fail(x, "the current schema names an unusable identifier");
	}
	x->p->latest = e->version;
	x->cur = e;
	return X_OK;
}

static bool table_has_field(const sy_table *t, const char *id, size_t len)
{
	if (t == NULL)
		return false;
	if (strlen(t->pk.field_id) == len && memcmp(t->pk.field_id, id, len) == 0)
		return true;
	return sy_table_field(t, id, len) != NULL;
}

static void set_terminal(ctx *x, size_t k, sy_code code, const char *message)
{
	res *rr = &x->res[k];
	sy_outcome_init(&rr->o, &x->req->mutations[k], &x->req->schema);
	rr->o.status = SY_STATUS_REJECTED_TERMINAL;
	rr->o.code = code;
	rr->o.message = message;
	if (code == SY_CODE_SCHEMA_INCOMPATIBLE) {
		rr->o.current_schema.version = (uint64_t)x->cur->version;
		snprintf(rr->o.current_schema.hash, sizeof rr->o.current_schema.hash, "%s",
		         x->cur->hash);
		rr->o.incompatible_field_ids = x->pre[k].incompat;
		rr->o.incompatible_count = x->pre[k].nincompat;
	}
	rr->decided = true;
}

/*
 * The rules of one mutation that need no row (ADR terminal order: schema_incompatible,
 * table_not_synced, then policy none; validation is recorded for after the owner policy).
 * authored: the manifest of the mutation's authored schema, or NULL when unavailable.
 */
static xstatus precheck(ctx *x, size_t k, const sy_manifest *authored, bool ever_synced)
{
	const sy_mutation *m = &x->req->mutations[k];
	pre *pr = &x->pre[k];
	sy_json_doc *doc = x->doc;
	size_t nc = m->column_count;
	const sy_table *t = sy_manifest_table(x->cur->m, m->table_id, m->table_len);
	const char **ids = NULL;
	size_t *lens = NULL, *idx = NULL, nidx = 0;
	sy_buf val = SY_BUF_INIT;
	xstatus ret = X_OK;

	memset(pr, 0, sizeof *pr);
	if (nc > 0) {
		ids = sy_json_doc_alloc(doc, nc * sizeof *ids);
		lens = sy_json_doc_alloc(doc, nc * sizeof *lens);
		pr->vals = sy_json_doc_alloc(doc, nc * sizeof *pr->vals);
		pr->fields = sy_json_doc_alloc(doc, nc * sizeof *pr->fields);
		if (ids == NULL || lens == NULL || pr->vals == NULL || pr->fields == NULL)
			return nomem(x, "precheck");
		for (size_t i = 0; i < nc; i++) {
			ids[i] = m->columns[i].field_id;
			lens[i] = m->columns[i].field_len;
		}
	}
	if (t == NULL && !ever_synced) {
		pr->terminal = SY_CODE_TABLE_NOT_SYNCED;
		pr->message = msg_not_synced;
		return X_OK;
	}
	sy_error e = {0};
	if (!sy_manifest_incompatible_indexes(authored, x->cur->m, m->table_id, m->table_len, ids,
	                                      lens, nc, &idx, &nidx, &e))
		return nomem(x, "precheck");
	/*
	 * A field that neither the current nor the available authored table ever had is
	 * not retained intent the schema lost: it is an unknown field (validation_failed).
	 */
	const sy_table *at =
	        authored ? sy_manifest_table(authored, m->table_id, m->table_len) : NULL;
	size_t kept = 0;
	for (size_t i = 0; i < nidx; i++) {
		size_t j = idx[i];
		if (t != NULL && at != NULL && !table_has_field(t, ids[j], lens[j]) &&
		    !table_has_field(at, ids[j], lens[j]))
			continue;
		idx[kept++] = j;
	}
	if (t == NULL || kept > 0) {
		pr->terminal = SY_CODE_SCHEMA_INCOMPATIBLE;
		pr->message = t == NULL ? msg_table_gone : msg_incompatible;
		if (kept > 0) {
			pr->incompat = sy_json_doc_alloc(doc, kept * sizeof *pr->incompat);
			if (pr->incompat == NULL) {
				ret = nomem(x, "precheck");
				goto done;
			}
			for (size_t i = 0; i < kept; i++)
				pr->incompat[i] = ids[idx[i]];
		}
		pr->nincompat = kept;
		goto done;
	}
	pr->ti = man_tinfo(x->cur, t);
	if (t->write == SY_POLICY_NONE) {
		pr->terminal = SY_CODE_POLICY_REJECTED;
		pr->message = msg_policy;
		goto done;
	}
	if (!sy_wire_to_pg_text(t->pk.type, m->pk_value, &val)) {
		/* sy_push_check_schema() accepted the key: only memory can fail here */
		ret = nomem(x, "precheck");
		goto done;
	}
	pr->pk_text = arena_dup(doc, val.data, val.len);
	if (pr->pk_text == NULL) {
		ret = nomem(x, "precheck");
		goto done;
	}
	for (size_t i = 0; i < nc && !pr->invalid; i++) {
		const sy_json *v = m->columns[i].value;
		const sy_field *f = sy_table_field(t, ids[i], lens[i]);
		pr->fields[i] = f;
		pr->vals[i] = NULL;
		if (f == NULL || !sy_field_writable(t, f)) {
			pr->invalid = true;
			pr->message = arena_printf(doc,
			                           f == NULL && !table_has_field(t, ids[i], lens[i])
			                                   ? "unknown field \"%.64s\""
			                                   : "field \"%.64s\" is not writable",
			                           ids[i]);
		} else if (v->type == SY_JSON_NULL) {
			if (!f->nullable) {
				pr->invalid = true;
				pr->message =
				        arena_printf(doc, "field \"%.64s\" cannot be null", ids[i]);
			}
		} else {
			const char *why = NULL;
			sy_wire_status ws = sy_wire_check(f->type, v, &why, NULL);
			if (ws == SY_WIRE_NOMEM) {
				ret = nomem(x, "precheck");
				goto done;
			}
			if (ws != SY_WIRE_OK) {
				pr->invalid = true;
				pr->message = arena_printf(doc, "field \"%.64s\": %s", ids[i],
				                           why ? why : "invalid value");
			} else {
				sy_buf_reset(&val);
				if (!sy_wire_to_pg_text(f->type, v, &val) ||
				    (pr->vals[i] = arena_dup(doc, val.data, val.len)) == NULL) {
					ret = nomem(x, "precheck");
					goto done;
				}
			}
		}
		if (pr->invalid && pr->message == NULL) {
			ret = nomem(x, "precheck");
			goto done;
		}
	}
done:
	sy_free(idx);
	sy_buf_free(&val);
	return ret;
}

/* Authored manifests and table history the prechecks need (one round trip, when any). */
static xstatus prepare(ctx *x)
{
	const sy_push_request *req = x->req;
	size_t n = req->mutation_count;
	long long *want = NULL;
	size_t nwant = 0;
	sy_buf tables = SY_BUF_INIT;
	const sy_manifest **authored = NULL;
	xstatus ret = X_OK;
	size_t ntables = 0;

	x->pre = sy_calloc(n, sizeof *x->pre);
	want = sy_calloc(n, sizeof *want);
	authored = sy_calloc(n, sizeof *authored);
	if (x->pre == NULL || want == NULL || authored == NULL) {
		ret = nomem(x, "prepare");
		goto done;
	}
	sy_buf_putc(&tables, '{');
	for (size_t k = 0; k < n; k++) {
		const sy_mutation *m = &req->mutations[k];
		if (sy_manifest_table(x->cur->m, m->table_id, m->table_len) == NULL) {
			array_elem(&tables, m->table_id, m->table_len);
			ntables++;
		}
		const sy_schema_ref *a = &m->authored_schema;
		if (a->version == (uint64_t)x->cur->version || a->version > (uint64_t)INT64_MAX ||
		    man_find(x->p, (long long)a->version) != NULL)
			continue;
		bool seen = false;
		for (size_t i = 0; i < nwant && !seen; i++)
			seen = want[i] == (long long)a->version;
		if (!seen)
			want[nwant++] = (long long)a->version;
	}
	sy_buf_putc(&tables, '}');
	if (tables.failed) {
		ret = nomem(x, "prepare");
		goto done;
	}
	if (nwant > 0 && (ret = fetch_manifests(x, want, nwant)) != X_OK)
		goto done;
	const PGresult *synced = NULL;
	if (ntables > 0) {
		pipe_reset(&x->pp);
		const char *pt[] = {tables.data};
		size_t idx = pipe_query(&x->pp, synced_sql, 1, pt, PGRES_TUPLES_OK);
		if (!pipe_run(&x->pp)) {
			ret = op_fail(x, "table history lookup");
			goto done;
		}
		synced = res_of(&x->pp, idx);
	}
	for (size_t k = 0; k < n; k++) {
		const sy_mutation *m = &req->mutations[k];
		const sy_schema_ref *a = &m->authored_schema;
		const sy_manifest *am = NULL;
		if (a->version == (uint64_t)x->cur->version) {
			if (strcmp(a->hash, x->cur->hash) == 0)
				am = x->cur->m;
		} else if (a->version <= (uint64_t)INT64_MAX) {
			const man *e = man_find(x->p, (long long)a->version);
			if (e != NULL && strcmp(e->hash, a->hash) == 0)
				am = e->m;
		}
		bool ever = false;
		for (int i = 0; synced != NULL && i < PQntuples(synced) && !ever; i++)
			ever = (size_t)PQgetlength(synced, i, 0) == m->table_len &&
			       memcmp(PQgetvalue(synced, i, 0), m->table_id, m->table_len) == 0;
		if ((ret = precheck(x, k, am, ever)) != X_OK)
			goto done;
	}
	x->prepared = true;
done:
	sy_free(want);
	sy_free(authored);
	sy_buf_free(&tables);
	return ret;
}

/* ---- row state and outcomes ---- */

enum { RS_OK, RS_RETRY, RS_BROKEN };

/* From a row lock (fields from column 1) and a fence lock. */
static int lock_state(const PGresult *row, const PGresult *fence, rowst *rs)
{
	memset(rs, 0, sizeof *rs);
	rs->has_row = PQntuples(row) == 1;
	rs->r = row;
	rs->off = 1;
	if (PQntuples(fence) == 0) {
		rs->state = SY_ROW_ABSENT;
		/* A synced row without a fence: written with the trigger bypassed. */
		return rs->has_row ? RS_BROKEN : RS_OK;
	}
	rs->version = PQgetvalue(fence, 0, 1);
	rs->state = strcmp(PQgetvalue(fence, 0, 0), "deleted") == 0 ? SY_ROW_DELETED : SY_ROW_LIVE;
	/* A live fence and no row: an insert committed between the two locks. */
	if (rs->state == SY_ROW_LIVE && !rs->has_row)
		return RS_RETRY;
	return RS_OK;
}

/*
 * From row i of a read (fence state and version, row presence, fields from column 3);
 * a read of several identities has one row each, in the order they were named.
 */
static int read_state_at(const PGresult *r, int i, rowst *rs)
{
	memset(rs, 0, sizeof *rs);
	if (i >= PQntuples(r))
		return RS_BROKEN;
	rs->r = r;
	rs->row = i;
	rs->off = 3;
	rs->has_row = strcmp(PQgetvalue(r, i, 2), "t") == 0;
	if (PQgetisnull(r, i, 0)) {
		rs->state = SY_ROW_ABSENT;
		return rs->has_row ? RS_BROKEN : RS_OK;
	}
	rs->version = PQgetvalue(r, i, 1);
	rs->state = strcmp(PQgetvalue(r, i, 0), "deleted") == 0 ? SY_ROW_DELETED : SY_ROW_LIVE;
	return rs->state == SY_ROW_LIVE && !rs->has_row ? RS_BROKEN : RS_OK;
}

/* From a read of one identity. */
static int read_state(const PGresult *r, rowst *rs)
{
	if (PQntuples(r) != 1) {
		memset(rs, 0, sizeof *rs);
		return RS_BROKEN;
	}
	return read_state_at(r, 0, rs);
}

/* server_version and server_row (every non-pk field as its canonical wire value). */
static xstatus fill_row(ctx *x, size_t k, const rowst *rs)
{
	sy_outcome *o = &x->res[k].o;
	const tinfo *ti = x->pre[k].ti;
	o->server_version = NULL;
	o->server_row = NULL;
	o->row_checksum = NULL;
	if (rs->version != NULL &&
	    (o->server_version = arena_dup(x->doc, rs->version, strlen(rs->version))) == NULL)
		return nomem(x, "outcome");
	if (!rs->has_row)
		return X_OK;
	sy_json *row = sy_json_new_object(x->doc);
	if (row == NULL)
		return nomem(x, "outcome");
	for (size_t i = 0; i < ti->t->field_count; i++) {
		const sy_field *f = &ti->t->fields[i];
		int col = rs->off + (int)i;
		sy_json *v = NULL;
		if (PQgetisnull(rs->r, rs->row, col)) {
			v = sy_json_new_null(x->doc);
		} else {
			sy_wire_status ws = sy_wire_decode_pg_text(
			        x->doc, f->type, PQgetvalue(rs->r, rs->row, col),
			        (size_t)PQgetlength(rs->r, rs->row, col), &v);
			if (ws == SY_WIRE_INVALID) {
				x->st = SY_STORE_FAILED;
				return op_fail(x, "a stored value has no canonical wire form");
			}
		}
		if (v == NULL || !sy_json_object_put(x->doc, row, f->field_id, v))
			return nomem(x, "outcome");
	}
	o->server_row = row;
	return X_OK;
}

static const char *conflict_message(sy_code code)
{
	switch (code) {
	case SY_CODE_VERSION_CONFLICT: return msg_version_conflict;
	case SY_CODE_ROW_ALREADY_EXISTS: return msg_exists;
	case SY_CODE_ROW_DELETED: return msg_deleted;
	default: return msg_not_found;
	}
}

/*
 * The classification that needs the row, in the ADR order after the pure rules: the
 * owner policy (judged on the current row, which a refusal never shows), validation,
 * then the matrix. *apply is true when the mutation may write; otherwise the outcome
 * is set.
 */
static xstatus classify(ctx *x, size_t k, const rowst *rs, bool *apply)
{
	const sy_mutation *m = &x->req->mutations[k];
	const pre *pr = &x->pre[k];
	const sy_table *t = pr->ti->t;
	res *rr = &x->res[k];
	*apply = false;
	sy_outcome_init(&rr->o, m, &x->req->schema);
	rr->decided = true;
	/*
	 * Owner policy, and rows outside the caller's read scope: an outcome (a conflict or
	 * an applied write) would show the row, so a write to it is refused as well.
	 */
	bool scoped = t->write == SY_POLICY_OWNER || t->read == SY_POLICY_OWNER;
	if (scoped && rs->has_row && pr->ti->owner >= 0) {
		int col = rs->off + pr->ti->owner;
		if (PQgetisnull(rs->r, rs->row, col) ||
		    strcmp(PQgetvalue(rs->r, rs->row, col), x->user) != 0) {
			set_terminal(x, k, SY_CODE_POLICY_REJECTED, msg_policy);
			return X_OK;
		}
	}
	if (pr->invalid) {
		set_terminal(x, k, SY_CODE_VALIDATION_FAILED, pr->message);
		return X_OK;
	}
	bool eq = m->base_version != NULL && rs->version != NULL &&
	          strlen(rs->version) == m->base_len &&
	          memcmp(rs->version, m->base_version, m->base_len) == 0;
	sy_matrix_result mr = sy_matrix_classify(m->op, rs->state, eq);
	if (mr.status == SY_STATUS_APPLIED) {
		*apply = true;
		rr->decided = false;
		return X_OK;
	}
	rr->o.status = mr.status;
	rr->o.code = mr.code;
	rr->o.message = conflict_message(mr.code);
	return fill_row(x, k, rs);
}

/* The applied outcome from the read after the unit (row i of it). */
static xstatus applied_from(ctx *x, size_t k, const PGresult *r, int i)
{
	rowst rs;
	if (read_state_at(r, i, &rs) != RS_OK || rs.version == NULL) {
		x->st = SY_STORE_FAILED;
		return op_fail(x, "an applied row has no fence");
	}
	res *rr = &x->res[k];
	sy_outcome_init(&rr->o, &x->req->mutations[k], &x->req->schema);
	rr->decided = true;
	x->applied++;
	return fill_row(x, k, &rs);
}

/* Whether a failure at a unit's DML or end check is the mutation's own (ADR: 22xxx, 23xxx). */
static bool unit_error(const char *sqlstate)
{
	return sqlstate_class(sqlstate, "22") || sqlstate_class(sqlstate, "23") ||
	       strcmp(sqlstate, "SY006") == 0;
}

/*
 * After the DML of an insert failed with a unique violation or the no-resurrection
 * refusal, the identity exists: classified again from the committed state (policy,
 * then the matrix), never applied a second time.
 */
static xstatus reclassify(ctx *x, size_t k, const char *sqlstate, const PGresult *read)
{
	const sy_mutation *m = &x->req->mutations[k];
	if (m->op == SY_OP_INSERT &&
	    (strcmp(sqlstate, "23505") == 0 || strcmp(sqlstate, "SY006") == 0)) {
		rowst rs;
		bool apply;
		if (read_state(read, &rs) != RS_OK) {
			x->st = SY_STORE_FAILED;
			return op_fail(x, "row and fence disagree");
		}
		if (rs.state != SY_ROW_ABSENT) {
			xstatus s = classify(x, k, &rs, &apply);
			if (s != X_OK || !apply)
				return s;
		}
	}
	set_terminal(x, k, SY_CODE_VALIDATION_FAILED, msg_constraint);
	return X_OK;
}

/* ---- statements of one mutation ---- */

static void queue_lock(ctx *x, size_t k, size_t *row, size_t *fence)
{
	const pre *pr = &x->pre[k];
	const char *p1[] = {pr->pk_text};
	const char *p2[] = {pr->ti->t->table_id, pr->pk_text};
	*row = pipe_query(&x->pp, pr->ti->lock_sql, 1, p1, PGRES_TUPLES_OK);
	*fence = pipe_query(&x->pp, fence_sql, 2, p2, PGRES_TUPLES_OK);
}

static size_t queue_read(ctx *x, size_t k)
{
	const pre *pr = &x->pre[k];
	const char *p[] = {pr->ti->t->table_id, pr->pk_text};
	return pipe_query(&x->pp, pr->ti->read_sql, 2, p, PGRES_TUPLES_OK);
}

/* sep "$n::type": a statement text per mutation, without two vsnprintf passes per piece */
static void put_param(sy_buf *b, const char *sep, int n, const char *type)
{
	char d[DECIMAL_MAX];
	size_t len;
	const char *digits = decimal(d, (unsigned long long)n, &len);
	sy_buf_puts(b, sep);
	sy_buf_putc(b, '$');
	sy_buf_append(b, digits, len);
	sy_buf_puts(b, "::");
	sy_buf_puts(b, type);
}

static void put_names(sy_buf *b, const char *a, const char *c)
{
	sy_buf_puts(b, a);
	sy_buf_puts(b, c);
}

/* The source write: values as text parameters cast to the column's type. */
static bool queue_dml(ctx *x, size_t k, size_t *idx)
{
	const sy_mutation *m = &x->req->mutations[k];
	const pre *pr = &x->pre[k];
	const tinfo *ti = pr->ti;
	const sy_table *t = ti->t;
	const char *params[SY_PUSH_MAX_COLUMNS + 3];
	int np = 0;
	sy_buf sql = SY_BUF_INIT;
	const char *pkt = pg_type(t->pk.type);

	params[np++] = m->mutation_id;
	params[np++] = pr->pk_text;
	switch (m->op) {
	case SY_OP_INSERT:
		put_names(&sql, "INSERT INTO ", ti->rel);
		put_names(&sql, " (", ti->pk);
		for (size_t i = 0; i < m->column_count; i++)
			put_names(&sql, ", ", ti->cols[pr->fields[i] - t->fields]);
		/* PROTOCOL §4: the server sets the owner field to the caller on insert. */
		if (ti->owner >= 0)
			put_names(&sql, ", ", ti->cols[ti->owner]);
		put_param(&sql, ") SELECT ", 2, pkt);
		for (size_t i = 0; i < m->column_count; i++) {
			params[np] = pr->vals[i];
			np++;
			put_param(&sql, ", ", np, pg_type(pr->fields[i]->type));
		}
		if (ti->owner >= 0) {
			params[np++] = x->user;
			put_param(&sql, ", ", np, pg_type(t->fields[ti->owner].type));
		}
		put_names(&sql, " FROM ", with_mutation);
		break;
	case SY_OP_UPDATE:
		put_names(&sql, "UPDATE ", ti->rel);
		sy_buf_puts(&sql, " SET ");
		for (size_t i = 0; i < m->column_count; i++) {
			params[np] = pr->vals[i];
			np++;
			put_names(&sql, i ? ", " : "", ti->cols[pr->fields[i] - t->fields]);
			put_param(&sql, " = ", np, pg_type(pr->fields[i]->type));
		}
		put_names(&sql, " FROM ", with_mutation);
		put_names(&sql, " WHERE ", ti->pk);
		put_param(&sql, " = ", 2, pkt);
		break;
	case SY_OP_DELETE: sy_buf_puts(&sql, ti->delete_sql); break;
	}
	if (sql.failed) {
		sy_buf_free(&sql);
		x->pp.broken = x->pp.nomem = true;
		return false;
	}
	*idx = pipe_query(&x->pp, sql.data, np, params, PGRES_COMMAND_OK);
	sy_buf_free(&sql);
	return true;
}

/* Update and delete run under the row lock: anything but one row is a broken invariant. */
static bool dml_rows_ok(const pq_pipe *pp, size_t idx)
{
	const char *n = PQcmdTuples(res_of(pp, idx));
	return strcmp(n, "1") == 0;
}

static PGresult *take(pq_pipe *pp, size_t idx)
{
	PGresult *r = pp->steps[idx].res;
	pp->steps[idx].res = NULL;
	return r;
}

/* Whether mutation k needs the database: not replayed, and not decided by pure rules. */
static bool needs_db(ctx *x, size_t k)
{
	const pre *pr = &x->pre[k];
	if (x->res[k].stored != NULL)
		return false;
	if (pr->terminal != SY_CODE_NONE)
		return false;
	return !pr->invalid || pr->ti->t->write == SY_POLICY_OWNER ||
	       pr->ti->t->read == SY_POLICY_OWNER;
}

/* The next mutation from k on that needs the database; pure outcomes are set on the way. */
static size_t next_db(ctx *x, size_t k)
{
	for (; k < x->req->mutation_count; k++) {
		if (needs_db(x, k))
			return k;
		if (x->res[k].stored != NULL)
			continue;
		const pre *pr = &x->pre[k];
		if (pr->terminal != SY_CODE_NONE)
			set_terminal(x, k, pr->terminal, pr->message);
		else
			set_terminal(x, k, SY_CODE_VALIDATION_FAILED, pr->message);
	}
	return k;
}

/* Locks row and fence of k (lrow/lfence hold earlier results, taken over) and classifies. */
static xstatus lock_and_classify(ctx *x, size_t k, PGresult **lrow, PGresult **lfence, bool *apply)
{
	for (int tries = 0;; tries++) {
		if (*lrow == NULL || *lfence == NULL) {
			PQclear(*lrow);
			PQclear(*lfence);
			*lrow = *lfence = NULL;
			size_t ri, fi;
			pipe_reset(&x->pp);
			queue_lock(x, k, &ri, &fi);
			if (!pipe_run(&x->pp))
				return op_fail(x, "row lock");
			*lrow = take(&x->pp, ri);
			*lfence = take(&x->pp, fi);
		}
		rowst rs;
		int s = lock_state(*lrow, *lfence, &rs);
		if (s == RS_OK) {
			xstatus r = classify(x, k, &rs, apply);
			return r;
		}
		if (s == RS_BROKEN || tries + 1 >= LOCK_TRIES) {
			x->st = SY_STORE_FAILED;
			return op_fail(
			        x, "row and fence disagree (a write bypassed the fence trigger)");
		}
		PQclear(*lrow);
		PQclear(*lfence);
		*lrow = *lfence = NULL;
	}
}

/*
 * An insert needs no lock before its write: the INSERT itself reserves the absent
 * identity (the source's unique key, and the fence trigger's SY006 over a deleted
 * identity), and a refusal is classified afterwards from the state that refused it.
 * Update and delete compare a base version, so they lock first.
 */
static bool chainable(ctx *x, size_t k)
{
	return x->req->mutations[k].op == SY_OP_INSERT && !x->pre[k].invalid;
}

/* Most units sent in one round trip. */
#define CHAIN_MAX 256

/* The statements of one non-atomic unit; the indexes of its write, end check and read. */
static bool queue_unit(ctx *x, size_t k, size_t *dml, size_t *imm, size_t *rd)
{
	pipe_command(&x->pp, "SAVEPOINT sy_unit");
	pipe_command(&x->pp, "SET CONSTRAINTS ALL DEFERRED");
	if (!queue_dml(x, k, dml))
		return false;
	*imm = pipe_command(&x->pp, "SET CONSTRAINTS ALL IMMEDIATE");
	*rd = queue_read(x, k);
	pipe_command(&x->pp, "RELEASE SAVEPOINT sy_unit");
	return true;
}

/*
 * A run of inserts as one subtransaction with every constraint checked at the end of
 * each statement: for a unit whose only write is one INSERT that is the unit's own end
 * check, so outcomes are those of one savepoint per unit, at a fraction of the
 * statements. A failing insert rolls the whole run back; run_units does the run again
 * without it and settles it from the state read right after the inserts before it.
 */
static bool queue_run(ctx *x, const size_t *chain, size_t len, size_t *dml, size_t *rd, int *rrow)
{
	pipe_command(&x->pp, "SAVEPOINT sy_run");
	pipe_command(&x->pp, "SET CONSTRAINTS ALL IMMEDIATE");
	for (size_t i = 0; i < len; i++)
		if (!queue_dml(x, chain[i], &dml[i]))
			return false;
	/*
	 * The rows read again, after the run's subtransaction (so that the plan mode set
	 * around them is never undone by a rollback to it): one statement per table, one
	 * row per identity, with generic plans (see settings_sql: planned at every call
	 * otherwise, ~120 us of a 1-mutation push).
	 */
	pipe_command(&x->pp, "RELEASE SAVEPOINT sy_run");
	pipe_command(&x->pp, generic_on);
	bool done[CHAIN_MAX] = {false};
	sy_buf pks = SY_BUF_INIT;
	for (size_t i = 0; i < len; i++) {
		if (done[i])
			continue;
		const tinfo *ti = x->pre[chain[i]].ti;
		int row = 0;
		sy_buf_reset(&pks);
		sy_buf_putc(&pks, '{');
		for (size_t j = i; j < len; j++) {
			const pre *pr = &x->pre[chain[j]];
			if (done[j] || pr->ti != ti)
				continue;
			array_elem(&pks, pr->pk_text, strlen(pr->pk_text));
			done[j] = true;
			rrow[j] = row++;
		}
		sy_buf_putc(&pks, '}');
		if (pks.failed) {
			sy_buf_free(&pks);
			x->pp.broken = x->pp.nomem = true;
			return false;
		}
		const char *p[] = {ti->t->table_id, pks.data};
		size_t idx = pipe_query(&x->pp, ti->reads_sql, 2, p, PGRES_TUPLES_OK);
		for (size_t j = i; j < len; j++)
			if (x->pre[chain[j]].ti == ti)
				rd[j] = idx;
	}
	sy_buf_free(&pks);
	pipe_command(&x->pp, generic_off);
	return true;
}

/*
 * A unit whose write or end check failed: rolled back to its savepoint and classified
 * (a conflict or a refusal from the committed state, else validation_failed).
 */
static xstatus unit_failed(ctx *x, size_t k, bool at_end)
{
	char state[6];
	memcpy(state, x->pp.sqlstate, sizeof state);
	if (at_end)
		memcpy(state, "23000", sizeof state); /* the end check: never a conflict */
	pipe_reset(&x->pp);
	pipe_command(&x->pp, "ROLLBACK TO SAVEPOINT sy_unit");
	pipe_command(&x->pp, "RELEASE SAVEPOINT sy_unit");
	size_t rd = queue_read(x, k);
	if (!pipe_run(&x->pp))
		return op_fail(x, "unit rollback");
	return reclassify(x, k, state, res_of(&x->pp, rd));
}

/*
 * A non-atomic request: one push unit per mutation (ADR "Push unit constraint
 * checks"): SAVEPOINT, constraints deferred, the locked compare-and-swap, the write,
 * constraints immediate, the row read again, RELEASE. An update or delete costs one
 * round trip (the next mutation's locks ride along with its unit). Consecutive inserts
 * share one as a run (queue_run); an insert that fails its run is settled from the
 * state that refused it, read after the run was rolled back and done again without it.
 */
static xstatus run_units(ctx *x)
{
	size_t n = x->req->mutation_count;
	PGresult *lrow = NULL, *lfence = NULL;
	xstatus ret = X_OK;
	size_t chain[CHAIN_MAX], dml[CHAIN_MAX], rd[CHAIN_MAX];
	int rrow[CHAIN_MAX];
	size_t refused = n;    /* the insert that failed its run, settled after the rollback */
	char refused_state[6]; /* ... with the SQLSTATE of its failure */
	bool undo_run = false; /* the failed run's rollback, sent with the next statements */
	size_t k = next_db(x, 0);
	while (k < n) {
		size_t len = 0, next = k, nr = 0, nf = 0, settle_rd = 0, imm = 0;
		bool run = false, settle = false;
		if (lrow == NULL && chainable(x, k)) {
			/* a run of inserts, in request order (pure outcomes between them are set)
			 */
			while (next < n && len < CHAIN_MAX && chainable(x, next) &&
			       next != refused) {
				chain[len++] = next;
				next = next_db(x, next + 1);
			}
			run = true;
			settle = refused < n && next == refused;
			if (settle)
				next = next_db(x, refused + 1);
		} else {
			bool apply;
			ret = lock_and_classify(x, k, &lrow, &lfence, &apply);
			PQclear(lrow);
			PQclear(lfence);
			lrow = lfence = NULL;
			if (ret != X_OK)
				goto done;
			next = next_db(x, k + 1);
			if (!apply) {
				k = next;
				continue;
			}
			chain[len++] = k;
		}
		pipe_reset(&x->pp);
		if (undo_run) {
			pipe_command(&x->pp, "ROLLBACK TO SAVEPOINT sy_run");
			pipe_command(&x->pp, "RELEASE SAVEPOINT sy_run");
			undo_run = false;
		}
		if (run && len > 0 && !queue_run(x, chain, len, dml, rd, rrow)) {
			ret = nomem(x, "run");
			goto done;
		}
		if (!run && !queue_unit(x, chain[0], &dml[0], &imm, &rd[0])) {
			ret = nomem(x, "unit");
			goto done;
		}
		/* the refused insert: what refused it, read after the rollback (and its run) */
		if (settle)
			settle_rd = queue_read(x, refused);
		bool carry = next < n && !chainable(x, next);
		if (carry)
			queue_lock(x, next, &nr, &nf);
		bool ok = pipe_run(&x->pp);
		if (run && !ok) {
			size_t at = len;
			for (size_t i = 0; i < len && at == len; i++)
				if (x->pp.failed == dml[i])
					at = i;
			if (at == len || x->pp.lost || x->pp.broken ||
			    !unit_error(x->pp.sqlstate)) {
				ret = op_fail(x, "run");
				goto done;
			}
			/* again without it; then settled as its own unit would have failed */
			undo_run = true;
			refused = chain[at];
			memcpy(refused_state, x->pp.sqlstate, sizeof refused_state);
			k = chain[0];
			continue;
		}
		if (run) {
			for (size_t i = 0; i < len; i++)
				if ((ret = applied_from(x, chain[i], res_of(&x->pp, rd[i]),
				                        rrow[i])) != X_OK)
					goto done;
			if (settle) {
				ret = reclassify(x, refused, refused_state,
				                 res_of(&x->pp, settle_rd));
				if (ret != X_OK)
					goto done;
				refused = n;
			}
		} else if (ok || x->pp.failed > rd[0]) {
			if (x->req->mutations[chain[0]].op != SY_OP_INSERT &&
			    !dml_rows_ok(&x->pp, dml[0])) {
				x->st = SY_STORE_FAILED;
				ret = op_fail(x, "a locked row did not take the write");
				goto done;
			}
			if ((ret = applied_from(x, chain[0], res_of(&x->pp, rd[0]), 0)) != X_OK)
				goto done;
		} else if (!x->pp.lost && !x->pp.broken &&
		           (x->pp.failed == dml[0] || x->pp.failed == imm) &&
		           unit_error(x->pp.sqlstate)) {
			if ((ret = unit_failed(x, chain[0], x->pp.failed == imm)) != X_OK)
				goto done;
			k = next;
			continue;
		} else {
			ret = op_fail(x, "unit");
			goto done;
		}
		if (!ok) {
			ret = op_fail(x, "unit");
			goto done;
		}
		if (carry) {
			lrow = take(&x->pp, nr);
			lfence = take(&x->pp, nf);
		}
		k = next;
	}
done:
	PQclear(lrow);
	PQclear(lfence);
	return ret;
}

/*
 * An atomic request (ADR "Atomic mutation groups"): one subtransaction with every
 * deferrable constraint deferred; mutations in order, stopping at the first that does
 * not apply; the deferred check at the group end; on failure the rollback and the
 * failed-group response, a conflict rebuilt from the row read after the rollback.
 */
static xstatus run_group(ctx *x)
{
	size_t n = x->req->mutation_count;
	PGresult *lrow = NULL, *lfence = NULL;
	xstatus ret = X_OK;
	size_t failing = n;
	bool reread = false;    /* a conflict: rebuilt from the committed state */
	char dml_state[6] = ""; /* a failed write: classified after the rollback */
	size_t *reads = NULL, *dml = NULL;

	reads = sy_calloc(n, sizeof *reads);
	dml = sy_calloc(n, sizeof *dml);
	if (reads == NULL || dml == NULL) {
		ret = nomem(x, "group");
		goto done;
	}
	pipe_reset(&x->pp);
	pipe_command(&x->pp, "SAVEPOINT sy_group");
	pipe_command(&x->pp, "SET CONSTRAINTS ALL DEFERRED");
	bool started = false;
	size_t k = 0;
	while (k < n && failing == n) {
		size_t len = 0, nr = 0, nf = 0;
		if (!needs_db(x, k)) {
			next_db(x, k); /* sets k's outcome */
			failing = k;
			break;
		}
		if (lrow == NULL && chainable(x, k)) {
			while (k + len < n && needs_db(x, k + len) && chainable(x, k + len))
				len++;
		} else {
			bool apply;
			if (!started && lrow == NULL) {
				/* the group start rides with the first locks */
				queue_lock(x, k, &nr, &nf);
				if (!pipe_run(&x->pp)) {
					ret = op_fail(x, "group start");
					goto done;
				}
				lrow = take(&x->pp, nr);
				lfence = take(&x->pp, nf);
				started = true;
			}
			ret = lock_and_classify(x, k, &lrow, &lfence, &apply);
			PQclear(lrow);
			PQclear(lfence);
			lrow = lfence = NULL;
			if (ret != X_OK)
				goto done;
			if (!apply) {
				failing = k;
				reread = x->res[k].o.status == SY_STATUS_CONFLICT;
				break;
			}
			len = 1;
		}
		if (started)
			pipe_reset(&x->pp);
		started = true;
		for (size_t i = k; i < k + len; i++) {
			if (!queue_dml(x, i, &dml[i])) {
				ret = nomem(x, "group");
				goto done;
			}
		}
		size_t end = k + len, imm = 0;
		bool last = end == n, carry = !last && needs_db(x, end) && !chainable(x, end);
		if (carry)
			queue_lock(x, end, &nr, &nf);
		if (last) {
			imm = pipe_command(&x->pp, "SET CONSTRAINTS ALL IMMEDIATE");
			for (size_t j = 0; j < n; j++)
				reads[j] = queue_read(x, j);
			pipe_command(&x->pp, "RELEASE SAVEPOINT sy_group");
		}
		if (pipe_run(&x->pp)) {
			for (size_t i = k; i < end; i++) {
				if (x->req->mutations[i].op != SY_OP_INSERT &&
				    !dml_rows_ok(&x->pp, dml[i])) {
					x->st = SY_STORE_FAILED;
					ret = op_fail(x, "a locked row did not take the write");
					goto done;
				}
			}
			if (carry) {
				lrow = take(&x->pp, nr);
				lfence = take(&x->pp, nf);
			}
			if (last) {
				/* ADR: each accepted outcome reports the row after the group's
				 * check. */
				for (size_t j = 0; j < n; j++)
					if ((ret = applied_from(x, j, res_of(&x->pp, reads[j]),
					                        0)) != X_OK)
						goto done;
			}
			k = end;
			continue;
		}
		size_t f = x->pp.failed;
		bool own = !x->pp.lost && !x->pp.broken && unit_error(x->pp.sqlstate);
		size_t at = n;
		for (size_t i = k; i < end && at == n; i++)
			if (f == dml[i])
				at = i;
		if (own && at < n) {
			failing = at;
			memcpy(dml_state, x->pp.sqlstate, sizeof dml_state);
		} else if (own && last && f == imm) {
			/* ADR: a failed check at the group end is the last mutation's. */
			failing = n - 1;
			set_terminal(x, failing, SY_CODE_VALIDATION_FAILED, msg_constraint);
		} else {
			ret = op_fail(x, "group");
			goto done;
		}
	}
	if (failing < n) {
		size_t rd = 0;
		bool need_read = reread || dml_state[0] != '\0';
		/* unless the group start is still queued (a first mutation decided without rows) */
		if (started)
			pipe_reset(&x->pp);
		pipe_command(&x->pp, "ROLLBACK TO SAVEPOINT sy_group");
		pipe_command(&x->pp, "RELEASE SAVEPOINT sy_group");
		if (need_read)
			rd = queue_read(x, failing);
		if (!pipe_run(&x->pp)) {
			ret = op_fail(x, "group rollback");
			goto done;
		}
		if (reread) {
			rowst rs;
			if (read_state(res_of(&x->pp, rd), &rs) != RS_OK) {
				x->st = SY_STORE_FAILED;
				ret = op_fail(x, "row and fence disagree");
				goto done;
			}
			if ((ret = fill_row(x, failing, &rs)) != X_OK)
				goto done;
		} else if (dml_state[0] != '\0') {
			if ((ret = reclassify(x, failing, dml_state, res_of(&x->pp, rd))) != X_OK)
				goto done;
		}
		sy_outcome *group = sy_calloc(n, sizeof *group);
		if (group == NULL) {
			ret = nomem(x, "group");
			goto done;
		}
		bool ok = sy_outcome_atomic_failed_group(x->req, failing, &x->res[failing].o, group,
		                                         x->err);
		for (size_t j = 0; ok && j < n; j++) {
			x->res[j].o = group[j];
			x->res[j].decided = true;
		}
		sy_free(group);
		x->applied = 0;
		if (!ok) {
			x->st = SY_STORE_FAILED;
			ret = op_fail(x, "atomic failed group");
			goto done;
		}
	}
done:
	PQclear(lrow);
	PQclear(lfence);
	sy_free(reads);
	sy_free(dml);
	return ret;
}

/* ---- completing the first execution ---- */

/*
 * The mutation ledger's columns as arrays in PostgreSQL's binary format (array_recv):
 * no literal to escape or parse, and the fingerprints and outcomes go as the bytes they
 * are stored as (no hex, no text conversion).
 */
enum { OID_BYTEA = 17, OID_INT8 = 20, OID_INT4 = 23, OID_TEXT = 25, OID_UUID = 2950 };

typedef struct {
	sy_buf b;
	uint32_t n;
	bool nulls;
} bin_array;

enum { LEDGER_ARRAYS = 13 };

typedef struct {
	bin_array a[LEDGER_ARRAYS];
} ledger_arrays;

/* The element types of ledger_sql's $9..$21, in order. */
static const uint32_t ledger_oids[LEDGER_ARRAYS] = {
        OID_UUID, OID_BYTEA, OID_INT4, OID_INT8,  OID_TEXT, OID_TEXT, OID_TEXT,
        OID_TEXT, OID_TEXT,  OID_TEXT, OID_BYTEA, OID_INT8, OID_TEXT};
enum {
	L_IDS,
	L_FPS,
	L_ORDS,
	L_AVS,
	L_AHS,
	L_TABLES,
	L_PKS,
	L_OPS,
	L_STATUSES,
	L_CODES,
	L_OUTCOMES,
	L_OVS,
	L_OHS
};

static void put_u32(sy_buf *b, uint32_t v)
{
	unsigned char o[4];
	sy_be_put(o, v, sizeof o);
	sy_buf_append(b, o, sizeof o);
}

static void set_u32(sy_buf *b, size_t at, uint32_t v)
{
	if (!b->failed)
		sy_be_put((unsigned char *)b->data + at, v, 4);
}

/* Header: one dimension, the null flag and the length (set by bin_close), lower bound 1. */
static void bin_open(bin_array *a, uint32_t oid)
{
	sy_buf_init(&a->b);
	a->n = 0;
	a->nulls = false;
	put_u32(&a->b, 1);
	put_u32(&a->b, 0);
	put_u32(&a->b, oid);
	put_u32(&a->b, 0);
	put_u32(&a->b, 1);
}

/* An element of len octets; NULL when p is. */
static void bin_elem(bin_array *a, const void *p, size_t len)
{
	a->n++;
	if (p == NULL) {
		a->nulls = true;
		put_u32(&a->b, UINT32_MAX);
		return;
	}
	if (len > INT32_MAX) {
		a->b.failed = true;
		return;
	}
	put_u32(&a->b, (uint32_t)len);
	sy_buf_append(&a->b, p, len);
}

static void bin_str(bin_array *a, const char *s)
{
	bin_elem(a, s, s != NULL ? strlen(s) : 0);
}

static void bin_int(bin_array *a, uint64_t v, size_t octets)
{
	unsigned char o[8];
	sy_be_put(o, v, octets);
	bin_elem(a, o, octets);
}

/* A UUID as its 16 octets (the request's ids are canonical; anything else fails the array). */
static void bin_uuid(bin_array *a, const char *uuid)
{
	uint8_t o[16];
	if (!sy_uuid_octets(uuid, strlen(uuid), o)) {
		a->b.failed = true;
		return;
	}
	bin_elem(a, o, sizeof o);
}

static bool bin_close(bin_array *a)
{
	set_u32(&a->b, 4, a->nulls ? 1 : 0);
	set_u32(&a->b, 12, a->n);
	return !a->b.failed;
}

static void ledger_open(ledger_arrays *l)
{
	for (size_t i = 0; i < LEDGER_ARRAYS; i++)
		bin_open(&l->a[i], ledger_oids[i]);
}

static bool ledger_close(ledger_arrays *l)
{
	bool ok = true;
	for (size_t i = 0; i < LEDGER_ARRAYS; i++)
		ok = bin_close(&l->a[i]) && ok;
	return ok;
}

static void ledger_free(ledger_arrays *l)
{
	for (size_t i = 0; i < LEDGER_ARRAYS; i++)
		sy_buf_free(&l->a[i].b);
}

/*
 * The canonical 200 body (validated as the ADR requires of every response), the
 * mutation ledger rows of the new outcomes (one statement), the accepted-write epoch,
 * the batch completed with its exact bytes, and COMMIT: one round trip.
 */
static xstatus finish(ctx *x)
{
	const sy_push_request *req = x->req;
	size_t n = req->mutation_count;
	xstatus ret = X_OK;
	sy_outcome_response *resp = NULL;
	ledger_arrays l;
	sy_buf tmp = SY_BUF_INIT;
	size_t fresh = 0;

	ledger_open(&l);
	sy_buf_reset(&x->out->body);
	resp = sy_outcome_response_new(req->batch_id, x->server_time, x->err);
	if (resp == NULL) {
		ret = x->err->code == SY_ERR_NOMEM ? nomem(x, "response") : op_fail(x, "response");
		goto done;
	}
	for (size_t k = 0; k < n; k++) {
		res *rr = &x->res[k];
		bool ok;
		if (!rr->decided && rr->stored == NULL) {
			x->st = SY_STORE_FAILED;
			ret = op_fail(x, "a mutation has no outcome");
			goto done;
		}
		if (rr->stored != NULL) {
			ok = sy_outcome_response_add_json(resp, rr->stored, x->err);
		} else {
			sy_buf_reset(&tmp);
			ok = sy_outcome_response_add_write(resp, &rr->o, &tmp, x->err);
		}
		if (!ok) {
			ret = x->err->code == SY_ERR_NOMEM
			              ? nomem(x, "response")
			              : op_fail(x, "an outcome breaks the contract");
			goto done;
		}
		if (rr->stored != NULL)
			continue;
		const sy_mutation *m = &req->mutations[k];
		const sy_outcome *o = &rr->o;
		bin_uuid(&l.a[L_IDS], m->mutation_id);
		bin_elem(&l.a[L_FPS], x->mfp[k].digest, sizeof x->mfp[k].digest);
		bin_int(&l.a[L_ORDS], m->ordinal, 4);
		bin_int(&l.a[L_AVS], m->authored_schema.version, 8);
		bin_str(&l.a[L_AHS], m->authored_schema.hash);
		bin_elem(&l.a[L_TABLES], m->table_id, m->table_len);
		bin_elem(&l.a[L_PKS], m->pk_canonical, m->pk_canonical_len);
		bin_str(&l.a[L_OPS], sy_op_name(m->op));
		bin_str(&l.a[L_STATUSES], sy_status_name(o->status));
		bin_str(&l.a[L_CODES], sy_code_name(o->code));
		bin_elem(&l.a[L_OUTCOMES], tmp.data, tmp.len);
		bin_int(&l.a[L_OVS], o->outcome_schema.version, 8);
		bin_str(&l.a[L_OHS], o->outcome_schema.hash);
		fresh++;
	}
	if (!sy_outcome_response_write(resp, &x->out->body, x->err)) {
		ret = nomem(x, "response");
		goto done;
	}
	/* Every response passes the validator before it is stored; a failure is a bug,
	 * answered 503. */
	if (!sy_outcome_response_check(resp, req, x->err)) {
		if (x->err->code == SY_ERR_NOMEM) {
			ret = nomem(x, "response");
			goto done;
		}
		char why[SY_ERROR_MESSAGE_MAX];
		snprintf(why, sizeof why, "response failed validation: %.200s", x->err->message);
		x->st = SY_STORE_FAILED;
		ret = op_fail(x, why);
		goto done;
	}
	if (!ledger_close(&l)) {
		ret = nomem(x, "ledger");
		goto done;
	}

	char fpv[16], sv[24], gen[24], bfpv[16];
	snprintf(fpv, sizeof fpv, "%d", x->mfp[0].version);
	snprintf(sv, sizeof sv, "%llu", (unsigned long long)req->schema.version);
	snprintf(gen, sizeof gen, "%llu", (unsigned long long)req->client_generation);
	snprintf(bfpv, sizeof bfpv, "%d", x->bfp.version);
	pipe_reset(&x->pp);
	/* the batch row first: the mutation rows name it (migration 11) */
	const char *pb[] = {x->user,
	                    req->client_id,
	                    req->batch_id,
	                    gen,
	                    sv,
	                    req->schema.hash,
	                    x->bfp.algorithm,
	                    bfpv,
	                    x->bfp.domain,
	                    x->bfp_hex,
	                    req->atomic ? "true" : "false",
	                    x->out->body.data};
	size_t done_idx = pipe_query(&x->pp, batch_row_sql, 12, pb, PGRES_COMMAND_OK);
	if (fresh > 0) {
		const char *pl[8 + LEDGER_ARRAYS] = {
		        x->user, req->client_id,        SY_FP_ALGORITHM,
		        fpv,     SY_FP_MUTATION_DOMAIN, req->batch_id,
		        sv,      req->schema.hash};
		int len[8 + LEDGER_ARRAYS] = {0}, fmt[8 + LEDGER_ARRAYS] = {0};
		for (size_t i = 0; i < LEDGER_ARRAYS; i++) {
			pl[8 + i] = l.a[i].b.data;
			len[8 + i] = (int)l.a[i].b.len;
			fmt[8 + i] = 1;
		}
		pipe_query_fmt(&x->pp, ledger_sql, 8 + LEDGER_ARRAYS, pl, len, fmt, 0,
		               PGRES_COMMAND_OK);
	}
	if (x->applied > 0) {
		const char *pe[] = {req->client_id};
		pipe_query(&x->pp, epoch_sql, 1, pe, PGRES_COMMAND_OK);
	}
	size_t commit = pipe_command(&x->pp, "COMMIT");
	if (!pipe_run(&x->pp)) {
		ret = op_fail(x, "commit");
		goto done;
	}
	if (strcmp(PQcmdTuples(res_of(&x->pp, done_idx)), "1") != 0 ||
	    strcmp(PQcmdStatus(res_of(&x->pp, commit)), "COMMIT") != 0) {
		x->st = SY_STORE_FAILED;
		ret = op_fail(x, "the batch row was not written");
		goto done;
	}
	x->out->error = SY_ERR_NONE;
	x->out->http_status = 200;
	x->out->replay = false;
	x->out->applied = x->applied;
done:
	sy_outcome_response_free(resp);
	sy_buf_free(&tmp);
	ledger_free(&l);
	return ret;
}

static void rollback(ctx *x)
{
	if (PQstatus(x->c) != CONNECTION_OK)
		return;
	pipe_reset(&x->pp);
	pipe_command(&x->pp, "ROLLBACK");
	if (!pipe_run(&x->pp) && x->pp.lost)
		x->st = SY_STORE_CONNECTION;
	pipe_reset(&x->pp);
}

/* Stored outcomes of mutations ledgered by other batches (ADR cross-batch replay). */
static xstatus take_stored(ctx *x)
{
	for (size_t i = 0; i < x->lk.nled; i++) {
		const ledgered *l = &x->lk.led[i];
		sy_error e = {0};
		sy_json_doc *d = sy_json_parse(l->outcome, l->outcome_len, &e);
		if (d == NULL) {
			if (e.code == SY_ERR_NOMEM)
				return nomem(x, "stored outcome");
			x->st = SY_STORE_FAILED;
			return op_fail(x, "a stored outcome does not parse");
		}
		x->res[l->index].stored = sy_json_copy(x->doc, sy_json_doc_root(d));
		sy_json_doc_free(d);
		if (x->res[l->index].stored == NULL)
			return nomem(x, "stored outcome");
	}
	return X_OK;
}

/* One first-execution transaction. */
static xstatus execute(ctx *x)
{
	const sy_push_request *req = x->req;
	size_t n = req->mutation_count;
	char timeout[24];
	xstatus s;

	memset(x->res, 0, n * sizeof *x->res);
	x->applied = 0;
	x->out->attempts++;
	snprintf(timeout, sizeof timeout, "%dms",
	         x->prm->lock_timeout_ms > 0 ? x->prm->lock_timeout_ms : 0);

	size_t idx[5];
	pipe_reset(&x->pp);
	pipe_command(&x->pp, "BEGIN ISOLATION LEVEL READ COMMITTED");
	const char *ps[] = {timeout, req->client_id, x->user};
	pipe_query(&x->pp, settings_sql, 3, ps, PGRES_TUPLES_OK);
	queue_lookup(x, true, idx);
	pipe_command(&x->pp, generic_off);
	if (!pipe_run(&x->pp)) {
		s = op_fail(x, "transaction start");
		goto fail;
	}
	if (!read_lookup(x, true, idx)) {
		s = nomem(x, "lookup");
		goto fail;
	}
	snprintf(x->server_time, sizeof x->server_time, "%s", x->lk.now);
	if (!x->lk.schema_found || x->lk.schema_version != x->cur->version) {
		rollback(x);
		return X_RESTART;
	}
	s = decide(x);
	if (s != X_OK) {
		rollback(x);
		return s;
	}
	if (!sy_server_time_valid(x->server_time, strlen(x->server_time))) {
		x->st = SY_STORE_FAILED;
		s = op_fail(x, "server time out of range");
		goto fail;
	}
	if ((s = take_stored(x)) != X_OK)
		goto fail;
	s = req->atomic ? run_group(x) : run_units(x);
	if (s != X_OK)
		goto fail;
	s = finish(x);
	if (s != X_OK)
		goto fail;
	return X_OK;
fail:
	rollback(x);
	return s;
}

static bool retryable(const char *sqlstate)
{
	return strcmp(sqlstate, "40P01") == 0 || strcmp(sqlstate, "40001") == 0;
}

/*
 * A prepared statement the session no longer has (26000: DISCARD ALL, a pooler) or whose
 * plan no longer fits its tables (0A000 after DDL): every statement is prepared again,
 * under new names.
 */
static bool stale_statements(const char *sqlstate)
{
	return strcmp(sqlstate, "26000") == 0 || strcmp(sqlstate, "0A000") == 0;
}

sy_store_status sy_store_push_handle(sy_store_push *p, PGconn *c, const sy_store_push_params *prm,
                                     sy_store_push_answer *out, sy_error *err)
{
	ctx x;
	const sy_push_request *req = prm->req;
	size_t n = req->mutation_count;
	sy_error e = {0};
	bool admitted = false;

	memset(&x, 0, sizeof x);
	x.p = p;
	x.c = c;
	x.prm = prm;
	x.req = req;
	x.user = prm->user;
	x.out = out;
	x.err = err ? err : &e;
	out->error = SY_ERR_NONE;
	out->http_status = 0;
	out->replay = false;
	out->message[0] = '\0';
	out->attempts = out->round_trips = 0;
	out->applied = 0;
	sy_buf_reset(&out->body);
	pipe_init(&x.pp, p, c, &out->round_trips);

	if (PQstatus(c) != CONNECTION_OK) {
		x.st = SY_STORE_CONNECTION;
		op_fail(&x, "no connection");
		return x.st;
	}
	if (PQtransactionStatus(c) != PQTRANS_IDLE || PQpipelineStatus(c) != PQ_PIPELINE_OFF) {
		x.st = SY_STORE_FAILED;
		op_fail(&x, "the connection is not idle");
		return x.st;
	}
	notice_connection(p, c);

	sy_error fe = {0};
	x.res = sy_calloc(n, sizeof *x.res);
	x.doc = sy_json_doc_new();
	if (x.res == NULL || x.doc == NULL) {
		nomem(&x, "request");
		goto done;
	}
	/* The mutation fingerprints wait for the mutation ledger (ledger_inputs()). */
	if (!sy_fp_batch(req, x.user, strlen(x.user), &x.bfp, &fe)) {
		if (fe.code == SY_ERR_NOMEM)
			nomem(&x, "fingerprints");
		else
			answer_error(&x, SY_ERR_AUTH_REQUIRED, "authentication required");
		goto done;
	}
	sy_fp_hex(x.bfp.digest, x.bfp_hex);

	if (PQenterPipelineMode(c) != 1) {
		x.st = SY_STORE_FAILED;
		op_fail(&x, "cannot enter pipeline mode");
		goto done;
	}
	for (int round = 0;; round++) {
		size_t idx[5];
		xstatus s;
		if (round >= 3) {
			x.st = SY_STORE_FAILED;
			op_fail(&x, "the schema kept changing");
			break;
		}
		pipe_reset(&x.pp);
		queue_lookup(&x, false, idx);
		if (!pipe_run(&x.pp)) {
			if (!x.pp.lost && stale_statements(x.pp.sqlstate)) {
				stmts_clear(p);
				continue;
			}
			op_fail(&x, "lookup");
			break;
		}
		if (!read_lookup(&x, false, idx)) {
			nomem(&x, "lookup");
			break;
		}
		if (x.lk.schema_stale && latest_schema(&x) != X_OK)
			break;
		if (current_schema(&x) != X_OK)
			break;
		if (x.cur == NULL) {
			answer_error(&x, SY_ERR_TEMPORARY_UNAVAILABLE,
			             "no schema is published yet");
			x.st = SY_STORE_FAILED;
			sy_store_fail(x.err, x.st, "push: no schema is published");
			break;
		}
		/* Structural validation against the current schema precedes every other gate. */
		sy_error ce = {0};
		if (!sy_push_check_schema(req, x.cur->m, &ce)) {
			if (ce.code == SY_ERR_NOMEM)
				nomem(&x, "schema check");
			else
				answer_error(&x, SY_ERR_INVALID_REQUEST, "%s", ce.message);
			break;
		}
		s = decide(&x);
		if (s == X_PROBE && (s = probe(&x)) == X_OK)
			s = decide(&x);
		if (s != X_OK)
			break;
		if (!admitted && prm->admit != NULL &&
		    !prm->admit(prm->admit_arg, req->client_id)) {
			/* A refusal of the mutation ledger precedes admission control. */
			if (!x.lk.probed && ((s = probe(&x)) != X_OK || (s = decide(&x)) != X_OK))
				break;
			answer_error(&x, SY_ERR_RETRY_LATER,
			             "too many pushes in flight; retry later");
			break;
		}
		admitted = true;
		if (ledger_inputs(&x) != X_OK)
			break;
		if (!x.prepared && prepare(&x) != X_OK)
			break;
		for (int attempt = 0;; attempt++) {
			x.st = SY_STORE_OK;
			x.sqlstate[0] = '\0';
			s = execute(&x);
			if (s == X_FAIL && attempt < RETRIES && x.st == SY_STORE_FAILED &&
			    stale_statements(x.sqlstate)) {
				stmts_clear(p);
				continue;
			}
			if (s == X_FAIL && attempt < RETRIES && x.st == SY_STORE_FAILED &&
			    retryable(x.sqlstate))
				continue;
			break;
		}
		if (s == X_RESTART) {
			sy_free(x.pre);
			x.pre = NULL;
			x.prepared = false;
			continue;
		}
		break;
	}
	pipe_reset(&x.pp);
	/* Left in pipeline mode, the session is out of step: the caller must drop it. */
	if (PQpipelineStatus(c) != PQ_PIPELINE_OFF && PQexitPipelineMode(c) != 1) {
		if (x.st == SY_STORE_OK)
			sy_store_fail(x.err, SY_STORE_CONNECTION,
			              "push: cannot leave pipeline mode");
		x.st = SY_STORE_CONNECTION;
	}
	if (stale_statements(x.sqlstate))
		stmts_clear(p);
done:
	if (admitted && prm->leave != NULL)
		prm->leave(prm->admit_arg);
	pipe_free(&x.pp);
	lookup_clear(&x.lk);
	sy_free(x.ids);
	sy_free(x.mfp);
	sy_free(x.by_id);
	sy_free(x.res);
	sy_free(x.pre);
	sy_json_doc_free(x.doc);
	return x.st;
}
