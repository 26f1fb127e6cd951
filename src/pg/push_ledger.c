/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * push_ledger.c: the ledger writes of a first execution.
 *
 * Layer: middle of src/pg (doc/hacking.md).
 * Rules: doc/contract.md#first-execution (what a first execution writes),
 * doc/contract.md#ledgers-and-retirement (the ledger rows),
 * doc/contract.md#response-validation (every response is checked before it is stored).
 * Notes: It writes the canonical 200 body, validated before anything is stored. It writes
 * the batch ledger row, complete with that exact body. It writes every new mutation ledger
 * row with its exact canonical outcome. That is one statement: plain values for one row,
 * columns as arrays for more. When the batch accepted a source write, it increments the
 * client's accepted-write epoch once. The client row lock, taken first, claims the batch
 * identity. So a batch row is never visible in a state but complete.
 *
 * The batch and mutation rows and the epoch are written through the table and index access
 * methods (ledger_insert.c). The rules of the tables' CHECKs and triggers are applied here.
 * The SQL statements below write only when a table is not as the module knows it.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "push_module.h"
#include "synchro/alloc.h"

#define PROTOCOL_VERSION 3

#define BATCH_COLUMNS                                                                       \
	"INSERT INTO synchro.batches (user_id, client_id, batch_id, protocol_version,"      \
	"       client_generation, schema_version, schema_hash, fp_algorithm, fp_version," \
	"       fp_domain, fingerprint, atomic, state, http_status, response, completed_at"
#define BATCH_VALUES                                                                      \
	" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'complete', 200, $13," \
	"         pg_catalog.clock_timestamp()"
/* With the request digest (migration 19), and without it for a database not migrated yet. */
static const char batch_sql[] = BATCH_COLUMNS ", request_digest)" BATCH_VALUES ", $14)";
static const char batch_sql_18[] = BATCH_COLUMNS ")" BATCH_VALUES ")";

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

/* The ledger rows by SQL: when a ledger table is not as the module knows it (ledger_insert.c). */
static void write_batch_sql(sp_push *x)
{
	const sy_push_request *req = x->req;
	static const Oid types[] = {TEXTOID, UUIDOID, UUIDOID,  INT4OID, INT8OID,
	                            INT8OID, TEXTOID, TEXTOID,  INT4OID, TEXTOID,
	                            BYTEAOID, BOOLOID, BYTEAOID, BYTEAOID};
	Datum v[] = {x->user_d,
	             x->client_d,
	             x->batch_d,
	             Int32GetDatum(PROTOCOL_VERSION),
	             Int64GetDatum((int64)req->client_generation),
	             Int64GetDatum((int64)req->schema.version),
	             cstr(req->schema.hash),
	             cstr(x->bfp.algorithm),
	             Int32GetDatum(x->bfp.version),
	             cstr(x->bfp.domain),
	             sp_bytea_datum(x->bfp.digest, sizeof x->bfp.digest),
	             BoolGetDatum(req->atomic),
	             sp_bytea_datum(x->body, x->body_len),
	             x->has_request_digest
	                     ? sp_bytea_datum(x->request_digest, sizeof x->request_digest)
	                     : (Datum)0};
	char nulls[lengthof(v)];
	memset(nulls, ' ', sizeof nulls);
	nulls[13] = x->has_request_digest ? ' ' : 'n';
	bool digest = x->lk.digest_column;
	sp_run(sp_plan(digest ? batch_sql : batch_sql_18, digest ? 14 : 13, types), v, nulls,
	       SPI_OK_INSERT);
	if (SPI_processed != 1)
		sp_fail("the batch row was not written");
}

static void write_mutations_sql(sp_push *x, const columns *c, size_t fresh)
{
	const sy_push_request *req = x->req;
	Datum sv = Int64GetDatum((int64)req->schema.version);
	Datum sh = cstr(req->schema.hash);
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
			sp_run(sp_plan(mutation_sql, 8 + A_COUNT, one_types), v, nulls,
			       SPI_OK_INSERT);
		else
			sp_run(sp_plan(mutations_sql, 8 + A_COUNT, array_types), v, NULL,
			       SPI_OK_INSERT);
		if (SPI_processed != fresh)
			sp_fail("the mutation ledger rows were not written");
	}
}

/* The batch row's columns (ledger_insert.c). */
enum {
	B_USER,
	B_CLIENT,
	B_BATCH,
	B_PROTOCOL,
	B_GENERATION,
	B_SCHEMA_VERSION,
	B_SCHEMA_HASH,
	B_FP_ALGORITHM,
	B_FP_VERSION,
	B_FP_DOMAIN,
	B_FINGERPRINT,
	B_ATOMIC,
	B_STATE,
	B_HTTP_STATUS,
	B_RESPONSE,
	B_CREATED_AT,
	B_COMPLETED_AT,
	B_REQUEST_DIGEST, /* migration 19 */
	B_COUNT
};
static const char *const batch_columns[B_COUNT] = {
        "user_id",        "client_id",   "batch_id",     "protocol_version", "client_generation",
        "schema_version", "schema_hash", "fp_algorithm", "fp_version",       "fp_domain",
        "fingerprint",    "atomic",      "state",        "http_status",      "response",
        "created_at",     "completed_at", "request_digest"};
static const Oid batch_types[B_COUNT] = {
        TEXTOID,  UUIDOID, UUIDOID,  INT4OID,        INT8OID,        INT8OID,
        TEXTOID,  TEXTOID, INT4OID,  TEXTOID,        BYTEAOID,       BOOLOID,
        TEXTOID,  INT4OID, BYTEAOID, TIMESTAMPTZOID, TIMESTAMPTZOID, BYTEAOID};
/* batches_before_insert's rule is applied here (a retired client writes no batch); the
 * foreign key to the client holds under the client's row lock, taken before any lookup. */
static const char *const batch_triggers[] = {"batches_before_insert", NULL};
static const char *const batch_checks[] = {"batches_row_rules", NULL};
static const sp_ledger_shape batch_shape = {.table = "batches",
                                            .columns = batch_columns,
                                            .types = batch_types,
                                            .ncols = B_COUNT,
                                            .checks = batch_checks,
                                            .triggers = batch_triggers,
                                            .fk_table = "clients"};
/* A database not yet at migration 19 (the module is installed first): no request digest. */
static const sp_ledger_shape batch_shape_18 = {.table = "batches",
                                               .columns = batch_columns,
                                               .types = batch_types,
                                               .ncols = B_REQUEST_DIGEST,
                                               .checks = batch_checks,
                                               .triggers = batch_triggers,
                                               .fk_table = "clients"};

/* The mutation row's columns: the rows of mutations_sql, then completed_at. */
enum {
	M_USER,
	M_CLIENT,
	M_MUTATION,
	M_FP_ALGORITHM,
	M_FP_VERSION,
	M_FP_DOMAIN,
	M_FINGERPRINT,
	M_BATCH,
	M_ORDINAL,
	M_AV,
	M_AH,
	M_SV,
	M_SH,
	M_TABLE,
	M_PK,
	M_OP,
	M_STATUS,
	M_CODE,
	M_OUTCOME,
	M_OV,
	M_OH,
	M_COMPLETED_AT,
	M_COUNT
};
static const char *const mutation_columns[M_COUNT] = {"user_id",
                                                      "client_id",
                                                      "mutation_id",
                                                      "fp_algorithm",
                                                      "fp_version",
                                                      "fp_domain",
                                                      "fingerprint",
                                                      "batch_id",
                                                      "ordinal",
                                                      "authored_schema_version",
                                                      "authored_schema_hash",
                                                      "submitted_schema_version",
                                                      "submitted_schema_hash",
                                                      "table_id",
                                                      "pk",
                                                      "operation",
                                                      "status",
                                                      "code",
                                                      "outcome",
                                                      "outcome_schema_version",
                                                      "outcome_schema_hash",
                                                      "completed_at"};
static const Oid mutation_types[M_COUNT] = {
        TEXTOID, UUIDOID, UUIDOID,  TEXTOID, INT4OID, TEXTOID,       BYTEAOID, UUIDOID,
        INT4OID, INT8OID, TEXTOID,  INT8OID, TEXTOID, TEXTOID,       TEXTOID,  TEXTOID,
        TEXTOID, TEXTOID, BYTEAOID, INT8OID, TEXTOID, TIMESTAMPTZOID};
/* mutations_after_insert's rule (each row names a batch of its client) holds by
 * construction: the rows name the batch row written just before, in this call. */
static const char *const mutation_triggers[] = {"mutations_after_insert", NULL};
static const char *const mutation_checks[] = {"mutations_row_rules", NULL};
static const sp_ledger_shape mutation_shape = {.table = "mutations",
                                               .columns = mutation_columns,
                                               .types = mutation_types,
                                               .ncols = M_COUNT,
                                               .checks = mutation_checks,
                                               .triggers = mutation_triggers};

/* The client row's accepted-write epoch: the columns its rules read. clients_before_change's
 * rules (identity kept, epochs never decrease, none advances for a retired client) and the
 * three CHECKs are applied here; clients_accepted_epoch's message is written as it writes it;
 * the row was locked before any lookup (sp_lock_client), so it is the row visible now. */
enum { C_CLIENT, C_GENERATION, C_ACCEPTED, C_MATERIALIZED, C_COUNT };
static const char *const client_columns[C_COUNT] = {
        "client_id", "generation", "accepted_write_epoch", "materialized_write_epoch"};
static const Oid client_types[C_COUNT] = {UUIDOID, INT8OID, INT8OID, INT8OID};
static const char *const client_checks[] = {"clients_generation_check",
                                            "clients_accepted_write_epoch_check",
                                            "clients_materialized_write_epoch_check", NULL};
static const char *const client_triggers[] = {"clients_before_change", "clients_accepted_epoch",
                                              NULL};
static const sp_ledger_shape client_shape = {.table = "clients",
                                             .columns = client_columns,
                                             .types = client_types,
                                             .ncols = C_COUNT,
                                             .update = true,
                                             .checks = client_checks,
                                             .triggers = client_triggers};

/* batches_before_insert's rule, probed as its statement reads: a fresh snapshot. */
static void refuse_if_retired(sp_push *x)
{
	sp_probe p;
	Datum client[] = {x->client_d};
	Snapshot snap = sp_probe_snapshot();
	sp_probe_open(&p, "retirements");
	bool retired = sp_probe_find(&p, 1, client, snap);
	sp_probe_close(&p);
	sp_probe_snapshot_end(snap);
	if (retired)
		ereport(ERROR, (errcode(MAKE_SQLSTATE('S', 'Y', '0', '0', '4')),
		                errmsg("synchro: client %s is retired", x->req->client_id)));
}

static bool write_batch(sp_push *x)
{
	const sy_push_request *req = x->req;
	sp_ledger_table t;
	if (!sp_ledger_open(&t, x->lk.digest_column ? &batch_shape : &batch_shape_18))
		return false;
	Datum v[B_COUNT] = {[B_USER] = x->user_d,
	                    [B_CLIENT] = x->client_d,
	                    [B_BATCH] = x->batch_d,
	                    [B_PROTOCOL] = Int32GetDatum(PROTOCOL_VERSION),
	                    [B_GENERATION] = Int64GetDatum((int64)req->client_generation),
	                    [B_SCHEMA_VERSION] = Int64GetDatum((int64)req->schema.version),
	                    [B_SCHEMA_HASH] = cstr(req->schema.hash),
	                    [B_FP_ALGORITHM] = cstr(x->bfp.algorithm),
	                    [B_FP_VERSION] = Int32GetDatum(x->bfp.version),
	                    [B_FP_DOMAIN] = cstr(x->bfp.domain),
	                    [B_FINGERPRINT] = sp_bytea_datum(x->bfp.digest, sizeof x->bfp.digest),
	                    [B_ATOMIC] = BoolGetDatum(req->atomic),
	                    [B_STATE] = cstr("complete"),
	                    [B_HTTP_STATUS] = Int32GetDatum(200),
	                    [B_RESPONSE] = sp_bytea_datum(x->body, x->body_len),
	                    [B_CREATED_AT] =
	                            TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()),
	                    [B_COMPLETED_AT] = TimestampTzGetDatum(GetCurrentTimestamp()),
	                    [B_REQUEST_DIGEST] =
	                            x->has_request_digest
	                                    ? sp_bytea_datum(x->request_digest,
	                                                     sizeof x->request_digest)
	                                    : (Datum)0};
	bool nulls[B_COUNT] = {[B_REQUEST_DIGEST] = !x->has_request_digest};
	/* The CHECK's arguments, in synchro.batch_row_rules' order. */
	static const int rule_args[] = {B_PROTOCOL,    B_GENERATION,   B_SCHEMA_VERSION,
	                                B_SCHEMA_HASH, B_FP_ALGORITHM, B_FP_VERSION,
	                                B_FP_DOMAIN,   B_FINGERPRINT,  B_STATE,
	                                B_HTTP_STATUS, B_RESPONSE,     B_COMPLETED_AT};
	Datum args[lengthof(rule_args)];
	bool anulls[lengthof(rule_args)];
	for (size_t i = 0; i < lengthof(rule_args); i++) {
		args[i] = v[rule_args[i]];
		anulls[i] = nulls[rule_args[i]];
	}
	refuse_if_retired(x);
	sp_batch_row_rules(args, anulls);
	sp_ledger_insert(&t, v, nulls);
	sp_ledger_close(&t);
	return true;
}

static bool write_mutations(sp_push *x, const columns *c)
{
	const sy_push_request *req = x->req;
	sp_ledger_table t;
	if (!sp_ledger_open(&t, &mutation_shape))
		return false;
	/* Column A_* of the rows of push_ledger's arrays, per M_* column from M_MUTATION on. */
	static const int from[M_COUNT] = {
	        [M_MUTATION] = A_IDS + 1, [M_FINGERPRINT] = A_FPS + 1,  [M_ORDINAL] = A_ORDS + 1,
	        [M_AV] = A_AVS + 1,       [M_AH] = A_AHS + 1,           [M_TABLE] = A_TABLES + 1,
	        [M_PK] = A_PKS + 1,       [M_OP] = A_OPS + 1,           [M_STATUS] = A_STATUSES + 1,
	        [M_CODE] = A_CODES + 1,   [M_OUTCOME] = A_OUTCOMES + 1, [M_OV] = A_OVS + 1,
	        [M_OH] = A_OHS + 1};
	static const int rule_args[] = {
	        M_FP_ALGORITHM, M_FP_VERSION, M_FP_DOMAIN, M_FINGERPRINT, M_ORDINAL, M_AV, M_AH,
	        M_SV,           M_SH,         M_OP,        M_STATUS,      M_CODE,    M_OV, M_OH};
	Datum v[M_COUNT] = {[M_USER] = x->user_d,
	                    [M_CLIENT] = x->client_d,
	                    [M_FP_ALGORITHM] = cstr(SY_FP_ALGORITHM),
	                    [M_FP_VERSION] = Int32GetDatum(SY_FP_VERSION),
	                    [M_FP_DOMAIN] = cstr(SY_FP_MUTATION_DOMAIN),
	                    [M_BATCH] = x->batch_d,
	                    [M_SV] = Int64GetDatum((int64)req->schema.version),
	                    [M_SH] = cstr(req->schema.hash),
	                    [M_COMPLETED_AT] =
	                            TimestampTzGetDatum(GetCurrentTransactionStartTimestamp())};
	bool nulls[M_COUNT] = {false};
	for (int k = 0; k < c->n; k++) {
		Datum args[lengthof(rule_args)];
		bool anulls[lengthof(rule_args)];
		for (int i = 0; i < M_COUNT; i++) {
			if (from[i] == 0)
				continue;
			v[i] = c->v[from[i] - 1][k];
			nulls[i] = c->nulls[from[i] - 1][k];
		}
		for (size_t i = 0; i < lengthof(rule_args); i++) {
			args[i] = v[rule_args[i]];
			anulls[i] = nulls[rule_args[i]];
		}
		sp_mutation_row_rules(args, anulls);
		sp_ledger_insert(&t, v, nulls);
	}
	sp_ledger_close(&t);
	return true;
}

static void refuse_check(const char *constraint)
{
	ereport(ERROR, (errcode(ERRCODE_CHECK_VIOLATION),
	                errmsg("new row for relation \"clients\" violates check constraint \"%s\"",
	                       constraint)));
}

/* UPDATE synchro.clients SET accepted_write_epoch = accepted_write_epoch + 1, its rules and
 * its trigger's message, without the statement. */
static bool advance_epoch(sp_push *x)
{
	sp_ledger_table t;
	sp_probe p;
	Datum client[] = {x->client_d};
	if (!sp_ledger_open(&t, &client_shape))
		return false;
	Snapshot snap = sp_probe_snapshot();
	sp_probe_open(&p, "clients");
	/* The version this call locked is the newest (no other writer can have changed the
	 * row since, and this call changes it only here): read at its tid, not probed again. */
	if (!sp_probe_fetch(&p, &x->client_locked, snap) && !sp_probe_find(&p, 1, client, snap))
		sp_fail("the accepted-write epoch did not advance");
	int64 generation = sp_probe_int(&p, "generation");
	int64 epoch = sp_probe_int(&p, "accepted_write_epoch");
	int64 materialized = sp_probe_int(&p, "materialized_write_epoch");
	if (epoch == PG_INT64_MAX)
		ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
		                errmsg("bigint out of range")));
	epoch++;
	if (generation < 0)
		refuse_check("clients_generation_check");
	if (epoch <= 0)
		refuse_check("clients_accepted_write_epoch_check");
	if (materialized <= 0)
		refuse_check("clients_materialized_write_epoch_check");
	refuse_if_retired(x);
	sp_ledger_update(&t, p.slot, C_ACCEPTED, Int64GetDatum(epoch));
	sp_probe_close(&p);
	sp_probe_snapshot_end(snap);
	sp_emit_accepted_epoch(x->client_d, epoch);
	sp_ledger_close(&t);
	return true;
}

static void write_ledger(sp_push *x, const columns *c, size_t fresh)
{
	if (!write_batch(x))
		write_batch_sql(x);
	if (fresh > 0 && !write_mutations(x, c))
		write_mutations_sql(x, c, fresh);
	if (x->applied > 0 && !advance_epoch(x)) {
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
