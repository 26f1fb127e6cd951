/* SPDX-License-Identifier: BSD-2-Clause */
/* The fake Synchro server of the client suites; see client_fake.h. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_fake.h"
#include "synchro/alloc.h"
#include "synchro/buf.h"
#include "synchro/fingerprint.h"
#include "synchro/jcs.h"
#include "synchro/manifest.h"
#include "synchro/outcome.h"
#include "synchro/push.h"

#define MANIFEST_V1                                                                                \
	"{\"tables\":[{\"table_id\":\"todo\",\"relation\":\"public.todo\",\"pk\":{\"field_id\":"   \
	"\"id\",\"column\":\"id\",\"type\":\"text\"},\"fields\":[{\"field_id\":\"title\","         \
	"\"column\":\"title\",\"type\":\"text\",\"nullable\":false,\"writable\":true},"            \
	"{\"field_id\":\"done\",\"column\":\"done\",\"type\":\"bool\",\"nullable\":false,"         \
	"\"writable\":true},{\"field_id\":\"note\",\"column\":\"note\",\"type\":\"text\","         \
	"\"nullable\":true,\"writable\":true}],\"delete\":{\"mode\":\"hard\"},\"policy\":"         \
	"{\"read\":\"all\",\"write\":\"all\"}}]}"
#define MANIFEST_V2                                                                                \
	"{\"tables\":[{\"table_id\":\"todo\",\"relation\":\"public.todo\",\"pk\":{\"field_id\":"   \
	"\"id\",\"column\":\"id\",\"type\":\"text\"},\"fields\":[{\"field_id\":\"title\","         \
	"\"column\":\"title\",\"type\":\"text\",\"nullable\":false,\"writable\":true},"            \
	"{\"field_id\":\"done\",\"column\":\"done\",\"type\":\"bool\",\"nullable\":false,"         \
	"\"writable\":true}],\"delete\":{\"mode\":\"hard\"},\"policy\":"                           \
	"{\"read\":\"all\",\"write\":\"all\"}}]}"
#define SERVER_TIME "2026-01-01T00:00:00.000000Z"
#define MAX         4096

typedef struct {
	char *table, *pk, *row, *version; /* row NULL: deleted (a fence with its version) */
} frow;

typedef struct {
	char *table, *pk, *version, *row, *mutation_id;
	uint64_t schema;
	bool left_scope; /* a delete of a row that left the user's scope */
} change;

typedef struct {
	char *key, *value;
} entry;

struct fake {
	int64_t now;
	int64_t step_at_sleep; /* added to the clock at the next sleep (a clock step), once */
	uint64_t generation;
	sy_manifest *manifests[3]; /* by version */
	uint64_t schema;
	frow rows[MAX];
	size_t nrows;
	change log[MAX];
	size_t nlog;
	entry batches[MAX]; /* batch_id -> "status\nbody bytes\n" + response */
	size_t nbatches;
	char *pushes[MAX];
	size_t push_len[MAX];
	size_t npushes;
	struct {
		char path[32];
	} reqs[MAX * 2];
	size_t nreqs;
	size_t executions;
	int version_seq;
	/* knobs */
	int fail_status, fail_retry;
	char fail_code[48];
	bool drop, corrupt, hold, rebuild, retired, garble_pull, bad_page;
	char *token;        /* the bearer token every request needs, or NULL */
	char *refused[MAX]; /* bodies of the pushes refused 401 */
	size_t refused_len[MAX], nrefused;
	/* the response in flight */
	bool have;
	sy_client_response resp;
};

static char *dup(const char *s)
{
	return s ? sy_strndup(s, strlen(s)) : NULL;
}

static void set(char **p, const char *s)
{
	sy_free(*p);
	*p = dup(s);
}

static sy_manifest *parse_manifest(const char *t)
{
	sy_error e = {0};
	return sy_manifest_parse(t, strlen(t), &e);
}

fake *fake_new(void)
{
	fake *f = sy_calloc(1, sizeof *f);
	f->now = 1800000000000LL;
	f->generation = 0;
	f->manifests[1] = parse_manifest(MANIFEST_V1);
	f->manifests[2] = parse_manifest(MANIFEST_V2);
	f->schema = 1;
	return f;
}

void fake_free(fake *f)
{
	if (f == NULL)
		return;
	for (size_t i = 0; i < f->nrows; i++) {
		sy_free(f->rows[i].table);
		sy_free(f->rows[i].pk);
		sy_free(f->rows[i].row);
		sy_free(f->rows[i].version);
	}
	for (size_t i = 0; i < f->nlog; i++) {
		sy_free(f->log[i].table);
		sy_free(f->log[i].pk);
		sy_free(f->log[i].version);
		sy_free(f->log[i].row);
		sy_free(f->log[i].mutation_id);
	}
	for (size_t i = 0; i < f->nbatches; i++) {
		sy_free(f->batches[i].key);
		sy_free(f->batches[i].value);
	}
	for (size_t i = 0; i < f->npushes; i++)
		sy_free(f->pushes[i]);
	sy_manifest_free(f->manifests[1]);
	sy_manifest_free(f->manifests[2]);
	for (size_t i = 0; i < f->nrefused; i++)
		sy_free(f->refused[i]);
	sy_free(f->token);
	sy_free(f->resp.body);
	sy_free(f);
}

int64_t fake_now(fake *f)
{
	return f->now;
}

void fake_advance(fake *f, int64_t ms)
{
	f->now += ms;
}

static int64_t clock_fn(void *ctx)
{
	return ((fake *)ctx)->now;
}

static void sleep_fn(void *ctx, int64_t ms)
{
	fake *f = ctx;
	f->now += ms + f->step_at_sleep;
	f->step_at_sleep = 0;
}

void fake_step_clock_at_sleep(fake *f, int64_t ms)
{
	f->step_at_sleep = ms;
}

static frow *find_row(fake *f, const char *table, const char *pk)
{
	for (size_t i = 0; i < f->nrows; i++)
		if (strcmp(f->rows[i].table, table) == 0 && strcmp(f->rows[i].pk, pk) == 0)
			return &f->rows[i];
	return NULL;
}

static const char *new_version(fake *f)
{
	static char v[32];
	snprintf(v, sizeof v, "v%d", ++f->version_seq);
	return v;
}

/* The row restricted to the fields of schema version s, with defaults for missing ones. */
static sy_json *row_under(fake *f, sy_json_doc *doc, const char *row, uint64_t s)
{
	sy_error e = {0};
	sy_json_doc *d = sy_json_parse(row, strlen(row), &e);
	const sy_table *t = &f->manifests[s]->tables[0];
	sy_json *o = sy_json_new_object(doc);
	for (size_t i = 0; i < t->field_count; i++) {
		const sy_json *v = sy_json_get(sy_json_doc_root(d), t->fields[i].field_id);
		sy_json *x = v                                   ? sy_json_copy(doc, v)
		             : t->fields[i].type == SY_TYPE_BOOL ? sy_json_new_bool(doc, false)
		             : t->fields[i].nullable             ? sy_json_new_null(doc)
		                                                 : sy_json_new_cstring(doc, "");
		if (!sy_json_object_put(doc, o, t->fields[i].field_id, x))
			abort();
	}
	sy_json_doc_free(d);
	return o;
}

static void log_change(fake *f, const frow *r, const char *mutation_id)
{
	change *c = &f->log[f->nlog++];
	memset(c, 0, sizeof *c);
	c->table = dup(r->table);
	c->pk = dup(r->pk);
	c->version = dup(r->version);
	c->row = dup(r->row);
	c->mutation_id = dup(mutation_id);
	c->schema = f->schema;
}

static frow *put_row(fake *f, const char *table, const char *pk, const char *row)
{
	frow *r = find_row(f, table, pk);
	if (r == NULL) {
		r = &f->rows[f->nrows++];
		memset(r, 0, sizeof *r);
		r->table = dup(table);
		r->pk = dup(pk);
	}
	set(&r->row, row);
	set(&r->version, new_version(f));
	return r;
}

void fake_direct_write(fake *f, const char *table, const char *pk_json, const char *row_json)
{
	log_change(f, put_row(f, table, pk_json, row_json), NULL);
}

void fake_hide_row(fake *f, const char *table, const char *pk_json)
{
	frow *r = find_row(f, table, pk_json);
	if (r == NULL)
		return;
	sy_free(r->table);
	sy_free(r->pk);
	sy_free(r->row);
	sy_free(r->version);
	*r = f->rows[--f->nrows];
}

void fake_scope_exit(fake *f, const char *table, const char *pk_json)
{
	frow *r = find_row(f, table, pk_json);
	if (r == NULL)
		return;
	change *c = &f->log[f->nlog++];
	memset(c, 0, sizeof *c);
	c->table = dup(table);
	c->pk = dup(pk_json);
	c->version = dup(r->version);
	c->schema = f->schema;
	c->left_scope = true;
	fake_hide_row(f, table, pk_json);
}

/* --- responses ---------------------------------------------------------------- */

static void respond(fake *f, int status, const char *body, size_t len, int retry_after)
{
	f->have = true;
	f->resp.status = status;
	f->resp.retry_after_s = retry_after;
	f->resp.body = body ? sy_strndup(body, len) : NULL;
	f->resp.body_len = body ? len : 0;
}

static void respond_error(fake *f, int status, const char *code, int retry_after)
{
	sy_buf b = SY_BUF_INIT;
	sy_errcode ec = SY_ERR_TEMPORARY_UNAVAILABLE;
	for (int i = 0; i < SY_ERR__COUNT; i++)
		if (strcmp(sy_errcode_name((sy_errcode)i), code) == 0) {
			ec = (sy_errcode)i;
			break;
		}
	sy_error e = {0};
	sy_schema_ref cur = {.version = f->schema}, rec = {.version = 1};
	memcpy(cur.hash, f->manifests[f->schema]->hash, sizeof cur.hash);
	memcpy(rec.hash, f->manifests[1]->hash, sizeof rec.hash);
	bool sm = ec == SY_ERR_SCHEMA_MISMATCH;
	if (!sy_outcome_error_body(&b, ec, "fake", sm ? &cur : NULL, sm ? &rec : NULL, &e))
		abort();
	respond(f, status, b.data, b.len, retry_after);
	sy_buf_free(&b);
}

static const char *lookup(entry *v, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].key, key) == 0)
			return v[i].value;
	return NULL;
}

static void remember(entry *v, size_t *n, const char *key, const char *value)
{
	v[*n].key = dup(key);
	v[*n].value = dup(value);
	(*n)++;
}

/* Evaluates one mutation; fills o (row in doc). Returns whether it applied. */
static bool evaluate(fake *f, sy_json_doc *doc, const sy_push_request *req, const sy_mutation *m,
                     sy_outcome *o, const char **ids, char *verbuf)
{
	sy_schema_ref cur = {.version = f->schema};
	memcpy(cur.hash, f->manifests[f->schema]->hash, sizeof cur.hash);
	sy_outcome_init(o, m, &cur);
	(void)req;
	/* schema_incompatible: a submitted field the current schema lacks */
	const sy_table *t = &f->manifests[f->schema]->tables[0];
	size_t nbad = 0;
	for (size_t i = 0; i < m->column_count; i++)
		if (sy_table_field(t, m->columns[i].field_id, m->columns[i].field_len) == NULL)
			ids[nbad++] = m->columns[i].field_id;
	if (nbad > 0) {
		o->status = SY_STATUS_REJECTED_TERMINAL;
		o->code = SY_CODE_SCHEMA_INCOMPATIBLE;
		o->message = "field not in the current schema";
		o->current_schema = cur;
		o->incompatible_field_ids = ids;
		o->incompatible_count = nbad;
		return false;
	}
	char *pk = NULL;
	sy_buf pb = SY_BUF_INIT;
	sy_error e = {0};
	if (!sy_jcs_write(&pb, m->pk_value, &e))
		abort();
	pk = pb.data;
	char table[64];
	snprintf(table, sizeof table, "%.*s", (int)m->table_len, m->table_id);
	frow *r = find_row(f, table, pk);
	sy_row_state st = r == NULL ? SY_ROW_ABSENT : r->row ? SY_ROW_LIVE : SY_ROW_DELETED;
	bool eq = r != NULL && m->base_version != NULL && strcmp(r->version, m->base_version) == 0;
	sy_matrix_result res = sy_matrix_classify(m->op, st, eq);
	o->status = res.status;
	o->code = res.code;
	if (res.status == SY_STATUS_APPLIED) {
		f->executions++;
		if (m->op == SY_OP_DELETE) {
			set(&r->row, NULL);
			set(&r->version, new_version(f));
		} else {
			sy_json_doc *tmp = sy_json_doc_new();
			sy_json *base = m->op == SY_OP_UPDATE ? row_under(f, tmp, r->row, f->schema)
			                                      : sy_json_new_object(tmp);
			for (size_t i = 0; i < m->column_count; i++) {
				sy_json_member *mm = NULL;
				for (size_t k = 0; k < base->u.object.count; k++)
					if (strcmp(base->u.object.members[k].key,
					           m->columns[i].field_id) == 0)
						mm = &base->u.object.members[k];
				if (mm != NULL)
					mm->value = sy_json_copy(tmp, m->columns[i].value);
				else if (!sy_json_object_put(
				                 tmp, base, m->columns[i].field_id,
				                 sy_json_copy(tmp, m->columns[i].value)))
					abort();
			}
			sy_buf rb = SY_BUF_INIT;
			if (!sy_jcs_write(&rb, base, &e))
				abort();
			r = put_row(f, table, pk, rb.data);
			sy_buf_free(&rb);
			sy_json_doc_free(tmp);
		}
		if (r == NULL || m->op == SY_OP_DELETE)
			r = find_row(f, table, pk);
		snprintf(verbuf, 64, "%s", r->version);
		o->server_version = verbuf;
		log_change(f, r, m->mutation_id);
	} else {
		o->message = "conflict";
		if (r != NULL) {
			snprintf(verbuf, 64, "%s", r->version);
			o->server_version = verbuf;
		}
	}
	if (r != NULL && r->row != NULL)
		o->server_row = row_under(f, doc, r->row, f->schema);
	sy_buf_free(&pb);
	return res.status == SY_STATUS_APPLIED;
}

/* Rows of the fake as they were, for an atomic group's rollback. */
typedef struct {
	frow rows[MAX];
	size_t n, nlog;
	int seq;
} snapshot;

/* Whether body is exactly its own RFC 8785 form (the client seals JCS bytes). */
static bool is_jcs(const char *body, size_t len)
{
	sy_error e = {0};
	sy_json_doc *d = sy_json_parse(body, len, &e);
	sy_buf b = SY_BUF_INIT;
	bool same = d != NULL && sy_jcs_write(&b, sy_json_doc_root(d), &e) && b.len == len &&
	            memcmp(b.data, body, len) == 0;
	sy_buf_free(&b);
	sy_json_doc_free(d);
	return same;
}

static void push(fake *f, const char *body, size_t len)
{
	f->pushes[f->npushes] = sy_strndup(body, len);
	f->push_len[f->npushes++] = len;
	if (f->retired)
		return respond_error(f, 409, "client_retired", -1);
	sy_error e = {0};
	sy_push_request *req = is_jcs(body, len) ? sy_push_parse(body, len, &e) : NULL;
	if (req == NULL)
		return respond_error(f, 400, "invalid_request", -1);
	if (f->fail_status != 0) {
		respond_error(f, f->fail_status, f->fail_code, f->fail_retry);
		f->fail_status = 0;
		sy_push_request_free(req);
		return;
	}
	if (req->client_generation != f->generation) {
		sy_push_request_free(req);
		return respond_error(f, 409, "client_generation_expired", -1);
	}
	if (req->schema.version != f->schema) {
		sy_push_request_free(req);
		return respond_error(f, 422, "schema_mismatch", -1);
	}
	sy_json_doc *doc = sy_json_doc_new();
	sy_outcome *outs = sy_calloc(req->mutation_count, sizeof *outs);
	const char **ids = sy_calloc(req->mutation_count * 256 + 1, sizeof *ids);
	char(*vers)[64] = sy_calloc(req->mutation_count, 64);
	snapshot *snap = NULL;
	if (req->atomic) {
		snap = sy_calloc(1, sizeof *snap);
		for (size_t i = 0; i < f->nrows; i++) {
			snap->rows[i].table = dup(f->rows[i].table);
			snap->rows[i].pk = dup(f->rows[i].pk);
			snap->rows[i].row = dup(f->rows[i].row);
			snap->rows[i].version = dup(f->rows[i].version);
		}
		snap->n = f->nrows;
		snap->nlog = f->nlog;
	}
	size_t failing = SIZE_MAX;
	for (size_t i = 0; i < req->mutation_count; i++) {
		const sy_mutation *m = &req->mutations[i];
		if (!evaluate(f, doc, req, m, &outs[i], ids + i * 256, vers[i]) && req->atomic) {
			failing = i;
			break;
		}
	}
	sy_buf out = SY_BUF_INIT;
	if (req->atomic && failing != SIZE_MAX) {
		/* roll the group back, then the failed-group response */
		sy_outcome failed = outs[failing];
		for (size_t i = 0; i < f->nrows; i++) {
			sy_free(f->rows[i].table);
			sy_free(f->rows[i].pk);
			sy_free(f->rows[i].row);
			sy_free(f->rows[i].version);
		}
		memcpy(f->rows, snap->rows, snap->n * sizeof *snap->rows);
		f->nrows = snap->n;
		for (size_t i = snap->nlog; i < f->nlog; i++) {
			sy_free(f->log[i].table);
			sy_free(f->log[i].pk);
			sy_free(f->log[i].version);
			sy_free(f->log[i].row);
			sy_free(f->log[i].mutation_id);
		}
		f->nlog = snap->nlog;
		if (!sy_outcome_atomic_failed_group(req, failing, &failed, outs, &e))
			abort();
	}
	if (!sy_outcome_write_response(&out, req->batch_id, SERVER_TIME, outs, req->mutation_count,
	                               &e)) {
		fprintf(stderr, "fake: %s\n", e.message);
		abort();
	}
	/* the batch ledger: the request bytes, 0x01, the response */
	sy_buf rec = SY_BUF_INIT;
	if (!sy_buf_append(&rec, body, len) || !sy_buf_putc(&rec, '\x01') ||
	    !sy_buf_append(&rec, out.data, out.len))
		abort();
	remember(f->batches, &f->nbatches, req->batch_id, rec.data);
	sy_buf_free(&rec);
	if (f->drop) {
		f->drop = false;
		respond(f, 0, NULL, 0, -1);
	} else {
		respond(f, 200, out.data, out.len, -1);
		if (f->corrupt) {
			f->corrupt = false;
			char *p = strstr(f->resp.body, "\"row_checksum\":\"");
			if (p != NULL)
				p[16] = p[16] == '0' ? '1' : '0';
		}
	}
	sy_buf_free(&out);
	for (size_t i = 0; snap != NULL && failing == SIZE_MAX && i < snap->n; i++) {
		/* the group applied: the snapshot's copies are not needed */
		sy_free(snap->rows[i].table);
		sy_free(snap->rows[i].pk);
		sy_free(snap->rows[i].row);
		sy_free(snap->rows[i].version);
	}
	sy_free(snap);
	sy_free(vers);
	sy_free(ids);
	sy_free(outs);
	sy_json_doc_free(doc);
	sy_push_request_free(req);
}

/* A stored batch answered again: exact replay when the bytes are equal. */
static bool replay(fake *f, const char *body, size_t len)
{
	sy_error e = {0};
	sy_push_request *req = sy_push_parse(body, len, &e);
	if (req == NULL)
		return false;
	const char *stored = lookup(f->batches, f->nbatches, req->batch_id);
	sy_push_request_free(req);
	if (stored == NULL || f->retired || f->fail_status != 0)
		return false;
	f->pushes[f->npushes] = sy_strndup(body, len);
	f->push_len[f->npushes++] = len;
	const char *sep = strchr(stored, '\x01');
	if ((size_t)(sep - stored) == len && memcmp(stored, body, len) == 0)
		respond(f, 200, sep + 1, strlen(sep + 1), -1);
	else
		respond_error(f, 409, "idempotency_conflict", -1);
	return true;
}

static const char *jstr(const sy_json *o, const char *k)
{
	const sy_json *v = sy_json_get(o, k);
	return v != NULL && v->type == SY_JSON_STRING ? v->u.string.data : NULL;
}

static void put_change(fake *f, sy_buf *b, const char *table, const char *pk, const char *version,
                       const char *row, const char *mid, uint64_t schema, bool left_scope)
{
	sy_json_doc *doc = sy_json_doc_new();
	sy_error e = {0};
	sy_schema_ref ref = {.version = schema};
	memcpy(ref.hash, f->manifests[schema]->hash, sizeof ref.hash);
	sy_buf_printf(b,
	              "{\"table\":\"%s\",\"pk\":{\"field\":\"id\",\"value\":%s},\"op\":\"%s\","
	              "\"server_version\":\"%s\",\"schema\":{\"hash\":\"%s\",\"version\":%llu}",
	              table, pk, row ? "upsert" : "delete", version, ref.hash,
	              (unsigned long long)schema);
	if (row != NULL) {
		sy_json *r = row_under(f, doc, row, schema);
		sy_json_doc *pd = sy_json_parse(pk, strlen(pk), &e);
		char hex[65];
		if (!sy_fp_row_checksum(&ref, table, strlen(table), "id", 2, sy_json_doc_root(pd),
		                        r, hex, &e))
			abort();
		sy_buf_puts(b, ",\"row\":");
		if (!sy_jcs_write(b, r, &e))
			abort();
		sy_buf_printf(b, ",\"row_checksum\":\"%s\"", hex);
		sy_json_doc_free(pd);
	}
	if (mid != NULL)
		sy_buf_printf(b, ",\"mutation_id\":\"%s\"", mid);
	if (left_scope)
		sy_buf_puts(b, ",\"left_scope\":true");
	sy_buf_putc(b, '}');
	sy_json_doc_free(doc);
}

static void pull(fake *f, const char *body, size_t len, bool rebuild)
{
	sy_error e = {0};
	sy_json_doc *d = sy_json_parse(body, len, &e);
	const sy_json *root = sy_json_doc_root(d);
	uint64_t gen = 0;
	sy_schema_ref ref;
	if (f->retired) {
		respond_error(f, 409, "client_retired", -1);
	} else if (!sy_generation_parse(sy_json_get(root, "client_generation"), &gen) ||
	           gen != f->generation) {
		respond_error(f, 409, "client_generation_expired", -1);
	} else if (!sy_schema_ref_parse(sy_json_get(root, "schema"), &ref) ||
	           ref.version != f->schema) {
		respond_error(f, 422, "schema_mismatch", -1);
	} else if (rebuild) {
		/* Pages of limit rows; the token is the index of the next row; the first page
		 * says how many rows there are. */
		const sy_json *lim = sy_json_get(root, "limit");
		const char *tok = jstr(root, "page_token");
		size_t limit = lim != NULL ? (size_t)lim->u.number.value : 500, k = 0, total = 0;
		size_t i = tok != NULL ? strtoull(tok, NULL, 10) : 0;
		for (size_t j = 0; j < f->nrows; j++)
			total += f->rows[j].row != NULL;
		sy_buf b = SY_BUF_INIT;
		sy_buf_puts(&b, "{\"rows\":[");
		for (; i < f->nrows && k < limit; i++) {
			if (f->rows[i].row == NULL)
				continue;
			if (k++)
				sy_buf_putc(&b, ',');
			put_change(f, &b, f->rows[i].table, f->rows[i].pk, f->rows[i].version,
			           f->rows[i].row, NULL, f->schema, false);
		}
		while (i < f->nrows && f->rows[i].row == NULL)
			i++;
		if (f->bad_page && tok != NULL) {
			/* one row's checksum no longer matches its row */
			char *at = strstr(b.data, "\"row_checksum\":\"");
			if (at != NULL) {
				at += strlen("\"row_checksum\":\"");
				*at = *at == '0' ? '1' : '0';
			}
			f->bad_page = false;
		}
		if (tok == NULL)
			sy_buf_printf(&b, "],\"rows_total\":%zu,", total);
		else
			sy_buf_puts(&b, "],");
		if (i < f->nrows)
			sy_buf_printf(&b, "\"page_token\":\"%zu\",\"server_time\":\"%s\"}", i,
			              SERVER_TIME);
		else
			sy_buf_printf(
			        &b,
			        "\"page_token\":null,\"cursor\":\"c%zu\",\"server_time\":\"%s\"}",
			        f->nlog, SERVER_TIME);
		respond(f, 200, b.data, b.len, -1);
		sy_buf_free(&b);
	} else {
		const char *cur = jstr(root, "cursor");
		if (cur != NULL && f->garble_pull) {
			static const char cut[] = "{\"changes\":[{\"table\":";
			f->garble_pull = false;
			respond(f, 200, cut, sizeof cut - 1, -1);
		} else if (cur == NULL || f->rebuild) {
			f->rebuild = false;
			respond_error(f, 409, "rebuild_required", -1);
		} else {
			size_t from = strtoull(cur + 1, NULL, 10), to = from;
			sy_buf b = SY_BUF_INIT;
			sy_buf_puts(&b, "{\"changes\":[");
			for (; to < f->nlog && to < from + 2; to++) {
				if (to > from)
					sy_buf_putc(&b, ',');
				change *c = &f->log[to];
				put_change(f, &b, c->table, c->pk, c->version, c->row,
				           c->mutation_id, c->schema, c->left_scope);
			}
			sy_buf_printf(
			        &b, "],\"cursor\":\"c%zu\",\"has_more\":%s,\"server_time\":\"%s\"}",
			        to, to < f->nlog ? "true" : "false", SERVER_TIME);
			respond(f, 200, b.data, b.len, -1);
			sy_buf_free(&b);
		}
	}
	sy_json_doc_free(d);
}

static bool t_start_inner(void *ctx, const sy_client_request *req)
{
	fake *f = ctx;
	snprintf(f->reqs[f->nreqs++].path, sizeof f->reqs[0].path, "%s", req->path);
	sy_free(f->resp.body);
	memset(&f->resp, 0, sizeof f->resp);
	f->have = false;
	if (f->token != NULL && (req->token == NULL || strcmp(req->token, f->token) != 0)) {
		if (strcmp(req->path, "/v3/push") == 0) {
			f->refused[f->nrefused] = sy_strndup(req->body, req->body_len);
			f->refused_len[f->nrefused++] = req->body_len;
		}
		respond_error(f, 401, "auth_required", -1);
		return true;
	}
	if (strcmp(req->path, "/v3/connect") == 0) {
		if (f->retired) {
			respond_error(f, 409, "client_retired", -1);
			return true;
		}
		f->generation++;
		sy_buf b = SY_BUF_INIT;
		sy_error e = {0};
		sy_json_doc *d = sy_json_parse(req->body, req->body_len, &e);
		sy_buf_printf(
		        &b,
		        "{\"client_generation\":%llu,\"client_id\":\"%s\",\"schema\":{\"hash\":"
		        "\"%s\",\"version\":%llu},\"server_time\":\"%s\"}",
		        (unsigned long long)f->generation,
		        sy_json_get(sy_json_doc_root(d), "client_id")->u.string.data,
		        f->manifests[f->schema]->hash, (unsigned long long)f->schema, SERVER_TIME);
		respond(f, 200, b.data, b.len, -1);
		sy_buf_free(&b);
		sy_json_doc_free(d);
	} else if (strcmp(req->path, "/v3/schema") == 0) {
		sy_buf b = SY_BUF_INIT;
		const sy_manifest *m = f->manifests[f->schema];
		sy_buf_puts(&b, "{\"manifest\":");
		sy_buf_append(&b, m->canonical, m->canonical_len);
		sy_buf_printf(&b, ",\"schema\":{\"hash\":\"%s\",\"version\":%llu}}", m->hash,
		              (unsigned long long)f->schema);
		respond(f, 200, b.data, b.len, -1);
		sy_buf_free(&b);
	} else if (strcmp(req->path, "/v3/push") == 0) {
		if (!replay(f, req->body, req->body_len))
			push(f, req->body, req->body_len);
	} else {
		pull(f, req->body, req->body_len, strcmp(req->path, "/v3/rebuild") == 0);
	}
	return true;
}

static int t_poll_inner(void *ctx, int timeout_ms, sy_client_response *out)
{
	fake *f = ctx;
	(void)timeout_ms;
	if (f->hold || !f->have)
		return 0;
	*out = f->resp;
	memset(&f->resp, 0, sizeof f->resp);
	f->have = false;
	return 1;
}

int fake_alloc_guard;

/* The fake's own allocations never fail in the allocation-failure suite. */
static bool t_start(void *ctx, const sy_client_request *req)
{
	fake_alloc_guard++;
	bool ok = t_start_inner(ctx, req);
	fake_alloc_guard--;
	return ok;
}

static int t_poll(void *ctx, int timeout_ms, sy_client_response *out)
{
	fake_alloc_guard++;
	int r = t_poll_inner(ctx, timeout_ms, out);
	fake_alloc_guard--;
	return r;
}

static void t_cancel(void *ctx)
{
	fake *f = ctx;
	sy_free(f->resp.body);
	memset(&f->resp, 0, sizeof f->resp);
	f->have = false;
}

static void t_destroy(void *ctx)
{
	(void)ctx;
}

sy_client_transport fake_transport(fake *f)
{
	sy_client_transport t = {f, t_start, t_poll, t_cancel, t_destroy};
	return t;
}

void fake_options(fake *f, sy_client_options *o)
{
	static sy_client_transport tr[8];
	static int k;
	memset(o, 0, sizeof *o);
	tr[k % 8] = fake_transport(f);
	o->transport = &tr[k++ % 8];
	o->clock_ms = clock_fn;
	o->sleep_ms = sleep_fn;
	o->clock_ctx = f;
	o->poll_interval_ms = 60000;
}

void fake_fail_next_push(fake *f, int status, const char *code, int retry_after)
{
	f->fail_status = status;
	f->fail_retry = retry_after;
	snprintf(f->fail_code, sizeof f->fail_code, "%s", code);
}

void fake_drop_next_push(fake *f)
{
	f->drop = true;
}

void fake_corrupt_next_push(fake *f)
{
	f->corrupt = true;
}

void fake_hold(fake *f, bool hold)
{
	f->hold = hold;
}

void fake_publish_v2(fake *f)
{
	f->schema = 2;
}

void fake_bump_generation(fake *f)
{
	f->generation++;
}

void fake_bad_next_page(fake *f)
{
	f->bad_page = true;
}

void fake_garble_next_pull(fake *f)
{
	f->garble_pull = true;
}

void fake_require_rebuild(fake *f)
{
	f->rebuild = true;
}

void fake_retire(fake *f)
{
	f->retired = true;
}

size_t fake_push_count(const fake *f)
{
	return f->npushes;
}

const char *fake_push_body(const fake *f, size_t i, size_t *len)
{
	if (i >= f->npushes)
		return NULL;
	if (len)
		*len = f->push_len[i];
	return f->pushes[i];
}

size_t fake_requests(const fake *f, const char *path)
{
	size_t n = 0;
	for (size_t i = 0; i < f->nreqs; i++)
		n += strcmp(f->reqs[i].path, path) == 0;
	return n;
}

size_t fake_executions(const fake *f)
{
	return f->executions;
}

const char *fake_row_version(fake *f, const char *table, const char *pk_json)
{
	frow *r = find_row(f, table, pk_json);
	return r ? r->version : NULL;
}

const char *fake_row(fake *f, const char *table, const char *pk_json)
{
	frow *r = find_row(f, table, pk_json);
	return r ? r->row : NULL;
}

void fake_require_token(fake *f, const char *token)
{
	set(&f->token, token);
}

const char *fake_refused_push(const fake *f, size_t i, size_t *len)
{
	if (i >= f->nrefused)
		return NULL;
	*len = f->refused_len[i];
	return f->refused[i];
}
