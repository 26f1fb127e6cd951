/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The ledger writes of a first execution (ADR "First-execution transaction boundary",
 * "Required durable ledger fields"): the canonical 200 body, validated as the ADR
 * requires of every response before anything is stored; the batch ledger row, complete
 * with that exact body; every new mutation ledger row with its exact canonical outcome
 * (one statement: plain values for one row, columns as arrays for more); and one increment
 * of the client's accepted-write epoch when the batch accepted a source write. The client row lock taken first claims
 * the batch identity, so no batch row is ever visible in a state but complete.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/lsyscache.h"

#include "push_module.h"
#include "synchro/alloc.h"

#define PROTOCOL_VERSION 3

static const char batch_sql[] =
        "INSERT INTO synchro.batches (user_id, client_id, batch_id, protocol_version,"
        "       client_generation, schema_version, schema_hash, fp_algorithm, fp_version,"
        "       fp_domain, fingerprint, atomic, state, http_status, response, completed_at)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'complete', 200, $13,"
        "         pg_catalog.clock_timestamp())";

static const char mutations_sql[] =
        "INSERT INTO synchro.mutations (user_id, client_id, mutation_id, fp_algorithm,"
        "       fp_version, fp_domain, fingerprint, batch_id, ordinal, authored_schema_version,"
        "       authored_schema_hash, submitted_schema_version, submitted_schema_hash, table_id,"
        "       pk, operation, status, code, outcome, outcome_schema_version,"
        "       outcome_schema_hash)"
        " SELECT $1, $2, u.mutation_id, $3, $4, $5, u.fp, $6, u.ordinal, u.av, u.ah, $7, $8,"
        "        u.table_id, u.pk, u.op, u.status, u.code, u.outcome, u.ov, u.oh"
        "   FROM unnest($9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)"
        "        AS u(mutation_id, fp, ordinal, av, ah, table_id, pk, op, status, code, outcome,"
        "             ov, oh)";

/* The same for one new mutation ledger row, the common push: no arrays to build and unnest. */
static const char mutation_sql[] =
        "INSERT INTO synchro.mutations (user_id, client_id, mutation_id, fp_algorithm,"
        "       fp_version, fp_domain, fingerprint, batch_id, ordinal, authored_schema_version,"
        "       authored_schema_hash, submitted_schema_version, submitted_schema_hash, table_id,"
        "       pk, operation, status, code, outcome, outcome_schema_version,"
        "       outcome_schema_hash)"
        " VALUES ($1, $2, $9, $3, $4, $5, $10, $6, $11, $12, $13, $7, $8, $14, $15, $16, $17,"
        "         $18, $19, $20, $21)";

static const char epoch_sql[] =
        "UPDATE synchro.clients SET accepted_write_epoch = accepted_write_epoch + 1"
        " WHERE client_id = $1";

/* The element types of mutations_sql's $9..$21, in order. */
enum {
	A_IDS,
	A_FPS,
	A_ORDS,
	A_AVS,
	A_AHS,
	A_TABLES,
	A_PKS,
	A_OPS,
	A_STATUSES,
	A_CODES,
	A_OUTCOMES,
	A_OVS,
	A_OHS,
	A_COUNT
};
static const Oid elem_types[A_COUNT] = {UUIDOID,  BYTEAOID, INT4OID, INT8OID, TEXTOID,
                                        TEXTOID,  TEXTOID,  TEXTOID, TEXTOID, TEXTOID,
                                        BYTEAOID, INT8OID,  TEXTOID};

typedef struct {
	Datum *v[A_COUNT];
	bool *nulls[A_COUNT];
	int n;
} columns;

static Datum cstr(const char *s)
{
	return sp_text_datum(s, strlen(s));
}

static void put(columns *c, int col, Datum d, bool isnull)
{
	c->v[col][c->n] = d;
	c->nulls[col][c->n] = isnull;
}

static Datum array_of(const columns *c, int col)
{
	int16 len;
	bool byval;
	char align;
	int dims[1] = {c->n}, lbs[1] = {1};
	get_typlenbyvalalign(elem_types[col], &len, &byval, &align);
	return PointerGetDatum(construct_md_array(c->v[col], c->nulls[col], 1, dims, lbs,
	                                          elem_types[col], len, byval, align));
}

static void write_ledger(sp_push *x, const columns *c, size_t fresh)
{
	const sy_push_request *req = x->req;
	Datum sv = Int64GetDatum((int64)req->schema.version);
	Datum sh = cstr(req->schema.hash);
	{
		static const Oid types[] = {TEXTOID,  UUIDOID, UUIDOID, INT4OID, INT8OID,
		                            INT8OID,  TEXTOID, TEXTOID, INT4OID, TEXTOID,
		                            BYTEAOID, BOOLOID, BYTEAOID};
		Datum v[] = {x->user_d,
		             x->client_d,
		             x->batch_d,
		             Int32GetDatum(PROTOCOL_VERSION),
		             Int64GetDatum((int64)req->client_generation),
		             sv,
		             sh,
		             cstr(x->bfp.algorithm),
		             Int32GetDatum(x->bfp.version),
		             cstr(x->bfp.domain),
		             sp_bytea_datum(x->bfp.digest, sizeof x->bfp.digest),
		             BoolGetDatum(req->atomic),
		             sp_bytea_datum(x->body, x->body_len)};
		sp_run(sp_plan(batch_sql, 13, types), v, NULL, SPI_OK_INSERT);
		if (SPI_processed != 1)
			sp_fail("the batch row was not written");
	}
	if (fresh > 0) {
		static Oid array_types[8 + A_COUNT] = {TEXTOID, UUIDOID, TEXTOID, INT4OID,
		                                       TEXTOID, UUIDOID, INT8OID, TEXTOID};
		Oid one_types[8 + A_COUNT];
		Datum v[8 + A_COUNT] = {x->user_d,
		                        x->client_d,
		                        cstr(SY_FP_ALGORITHM),
		                        Int32GetDatum(SY_FP_VERSION),
		                        cstr(SY_FP_MUTATION_DOMAIN),
		                        x->batch_d,
		                        sv,
		                        sh};
		char nulls[8 + A_COUNT];
		memset(nulls, ' ', sizeof nulls);
		memcpy(one_types, array_types, sizeof(Oid) * 8);
		for (int i = 0; i < A_COUNT; i++) {
			if (fresh == 1) {
				one_types[8 + i] = elem_types[i];
				v[8 + i] = c->v[i][0];
				nulls[8 + i] = c->nulls[i][0] ? 'n' : ' ';
				continue;
			}
			if (array_types[8 + i] == InvalidOid)
				array_types[8 + i] = get_array_type(elem_types[i]);
			v[8 + i] = array_of(c, i);
		}
		if (fresh == 1)
			sp_run(sp_plan(mutation_sql, 8 + A_COUNT, one_types), v, nulls, SPI_OK_INSERT);
		else
			sp_run(sp_plan(mutations_sql, 8 + A_COUNT, array_types), v, NULL,
			       SPI_OK_INSERT);
		if (SPI_processed != fresh)
			sp_fail("the mutation ledger rows were not written");
	}
	if (x->applied > 0) {
		static const Oid types[] = {UUIDOID};
		Datum v[] = {x->client_d};
		sp_run(sp_plan(epoch_sql, 1, types), v, NULL, SPI_OK_UPDATE);
		if (SPI_processed != 1)
			sp_fail("the accepted-write epoch did not advance");
	}
}

void sp_finish(sp_push *x)
{
	const sy_push_request *req = x->req;
	size_t n = req->mutation_count;
	sy_error e = {0};
	sy_buf tmp = SY_BUF_INIT, body = SY_BUF_INIT;
	columns c = {.n = 0};
	size_t fresh = 0;

	for (int i = 0; i < A_COUNT; i++) {
		c.v[i] = palloc(sizeof(Datum) * n);
		c.nulls[i] = palloc(sizeof(bool) * n);
	}
	sy_outcome_response *resp = sy_outcome_response_new(req->batch_id, x->server_time, &e);
	if (resp == NULL)
		goto core_failed;
	for (size_t k = 0; k < n; k++) {
		const sp_res *rr = &x->res[k];
		if (rr->stored != NULL) {
			if (!sy_outcome_response_add_json(resp, rr->stored, &e))
				goto core_failed;
			continue;
		}
		if (!rr->decided)
			sp_fail("a mutation has no outcome");
		sy_buf_reset(&tmp);
		if (!sy_outcome_response_add_write(resp, &rr->o, &tmp, &e))
			goto core_failed;
		const sy_mutation *m = &req->mutations[k];
		const sy_outcome *o = &rr->o;
		const char *code = sy_code_name(o->code);
		put(&c, A_IDS, sp_uuid_datum(m->mutation_id), false);
		put(&c, A_FPS, sp_bytea_datum(x->mfp[k].digest, sizeof x->mfp[k].digest), false);
		put(&c, A_ORDS, Int32GetDatum((int32)m->ordinal), false);
		put(&c, A_AVS, Int64GetDatum((int64)m->authored_schema.version), false);
		put(&c, A_AHS, cstr(m->authored_schema.hash), false);
		put(&c, A_TABLES, sp_text_datum(m->table_id, m->table_len), false);
		put(&c, A_PKS, sp_text_datum(m->pk_canonical, m->pk_canonical_len), false);
		put(&c, A_OPS, cstr(sy_op_name(m->op)), false);
		put(&c, A_STATUSES, cstr(sy_status_name(o->status)), false);
		put(&c, A_CODES, code != NULL ? cstr(code) : (Datum)0, code == NULL);
		put(&c, A_OUTCOMES, sp_bytea_datum(tmp.data, tmp.len), false);
		put(&c, A_OVS, Int64GetDatum((int64)o->outcome_schema.version), false);
		put(&c, A_OHS, cstr(o->outcome_schema.hash), false);
		c.n++;
		fresh++;
	}
	if (!sy_outcome_response_write(resp, &body, &e))
		goto core_failed;
	/* Every response passes the validator before it is stored; a failure is a bug of
	 * ours, answered 503 with nothing committed. */
	if (!sy_outcome_response_check(resp, req, &e)) {
		if (e.code == SY_ERR_NOMEM)
			goto core_failed;
		ereport(ERROR,
		        (errcode(ERRCODE_INTERNAL_ERROR),
		         errmsg("synchro_push: the response failed validation: %s", e.message)));
	}
	sy_outcome_response_free(resp);
	sy_buf_free(&tmp);
	x->body = body.data;
	x->body_len = body.len;
	write_ledger(x, &c, fresh);
	/* The counts the adapter's metrics take (migration 18), from the outcomes as decided:
	 * no adapter parses the body to count them. */
	memset(x->counts, 0, sizeof x->counts);
	for (size_t k = 0; k < n; k++) {
		if (x->res[k].stored != NULL)
			x->counts[SY_CODE__COUNT]++;
		else if ((unsigned)x->res[k].o.code < SY_CODE__COUNT)
			x->counts[x->res[k].o.code]++;
	}
	x->has_counts = true;
	x->error = SY_ERR_NONE;
	x->status = 200;
	x->replay = false;
	return;
core_failed:
	sy_outcome_response_free(resp);
	sy_buf_free(&tmp);
	sy_buf_free(&body);
	if (e.code == SY_ERR_NOMEM)
		sp_nomem("response");
	sp_fail("an outcome breaks the contract");
}
