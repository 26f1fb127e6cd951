/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client_inspect.c: inspection of the store. It lists intents with their state and links,
 * and sealed batches with their exact bytes and every attempt.
 *
 * Layer: middle of src/client (doc/hacking.md).
 * Interface:
 *   sy_client_intents(), sy_client_intent_get()  intents with their state and links
 *   sy_client_batch_get()                        a sealed batch, its bytes and attempts
 *   sy_client_explain()                          why an intent is in its state
 *   sy_client_verify()                           the store's self-check
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "client_internal.h"
#include "synchro/alloc.h"
#include "synchro/buf.h"
#include "synchro/fingerprint.h"
#include "synchro/sha256.h"

#define INTENT_COLUMNS                                                                             \
	"i.mutation_id, i.ord, i.normalized, i.txn, t.atomic, i.tbl, i.pk, i.op, i.columns,"       \
	" i.base, i.client_version, i.schema_version, i.schema_hash, i.state, i.link,"             \
	" i.batch_id, i.code, i.outcome, i.resolution, i.pred"

void sy_client_intent_free(sy_client_intent *i)
{
	if (i == NULL)
		return;
	sy_free(i->table);
	sy_free(i->pk_json);
	sy_free(i->op);
	sy_free(i->columns_json);
	sy_free(i->base_version);
	sy_free(i->client_version);
	sy_free(i->schema_hash);
	sy_free(i->link);
	sy_free(i->batch_id);
	sy_free(i->code);
	sy_free(i->outcome_json);
	sy_free(i->resolution);
	sy_free(i);
}

static sy_client_intent *intent_row(sqlite3_stmt *st)
{
	sy_client_intent *i = sy_calloc(1, sizeof *i);
	if (i == NULL)
		return NULL;
	snprintf(i->mutation_id, sizeof i->mutation_id, "%s",
	         (const char *)sqlite3_column_text(st, 0));
	i->local_order = sqlite3_column_int64(st, 1);
	i->normalized = sqlite3_column_int(st, 2) != 0;
	i->txn = sqlite3_column_int64(st, 3);
	i->atomic = sqlite3_column_int(st, 4) != 0;
	i->table = sy_cl_col_text(st, 5);
	i->pk_json = sy_cl_col_text(st, 6);
	i->op = sy_cl_col_text(st, 7);
	i->columns_json = sy_cl_col_text(st, 8);
	i->base_version = sy_cl_col_text(st, 9);
	i->client_version = sy_cl_col_text(st, 10);
	i->schema_version = (uint64_t)sqlite3_column_int64(st, 11);
	i->schema_hash = sy_cl_col_text(st, 12);
	if (sy_cl_state_from_name((const char *)sqlite3_column_text(st, 13), &i->state) !=
	    SY_CLIENT_OK)
		i->state = SY_INTENT_PENDING;
	i->link = sy_cl_col_text(st, 14);
	i->batch_id = sy_cl_col_text(st, 15);
	i->code = sy_cl_col_text(st, 16);
	i->outcome_json = sy_cl_col_text(st, 17);
	i->resolution = sy_cl_col_text(st, 18);
	/* A waiting intent's link is the sealed predecessor it waits for. */
	if (i->link == NULL && i->state == SY_INTENT_WAITING)
		i->link = sy_cl_col_text(st, 19);
	if (i->table == NULL || i->pk_json == NULL || i->op == NULL || i->client_version == NULL ||
	    i->schema_hash == NULL) {
		sy_client_intent_free(i);
		return NULL;
	}
	return i;
}

sy_client_rc sy_client_intent_get(sy_client *c, const char *mutation_id, sy_client_intent **out,
                                  sy_client_error *err)
{
	sqlite3_stmt *st;
	*out = NULL;
	sy_client_rc rc = sy_cl_prepare(c,
	                                "SELECT " INTENT_COLUMNS " FROM intents i JOIN txns t"
	                                " ON t.id = i.txn WHERE i.mutation_id = ?",
	                                &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sqlite3_bind_text(st, 1, mutation_id, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW)
		rc = sy_cl_fail(err, SY_CLIENT_ENOTFOUND, "no intent %s", mutation_id);
	else if ((*out = intent_row(st)) == NULL)
		rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	sqlite3_finalize(st);
	return rc;
}

sy_client_rc sy_client_intents(sy_client *c, bool all, sy_client_intent_fn fn, void *ctx,
                               sy_client_error *err)
{
	sqlite3_stmt *st;
	sy_client_rc rc = sy_cl_prepare(
	        c,
	        all ? "SELECT " INTENT_COLUMNS " FROM intents i JOIN txns t ON t.id = i.txn"
	              " ORDER BY i.ord, i.seq"
	            : "SELECT " INTENT_COLUMNS " FROM intents i JOIN txns t ON t.id = i.txn"
	              " WHERE i.state NOT IN ('applied', 'superseded_before_send',"
	              " 'cancelled_before_send', 'resolved') ORDER BY i.ord, i.seq",
	        &st, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	int s;
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		sy_client_intent *i = intent_row(st);
		if (i == NULL) {
			rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
			break;
		}
		fn(ctx, i);
		sy_client_intent_free(i);
	}
	if (rc == SY_CLIENT_OK && s != SQLITE_DONE)
		rc = sy_cl_store_fail(c, err, "intents");
	sqlite3_finalize(st);
	return rc;
}

/* The state name of another intent, for explanations. */
static const char *state_of(sy_client *c, const char *id, char *buf, size_t len)
{
	sy_client_intent *o = NULL;
	snprintf(buf, len, "unknown");
	if (id != NULL && sy_client_intent_get(c, id, &o, NULL) == SY_CLIENT_OK)
		snprintf(buf, len, "%s", sy_client_intent_state_name(o->state));
	sy_client_intent_free(o);
	return buf;
}

static const char *member(const sy_client_intent *i, const char *key, char *buf, size_t len)
{
	buf[0] = '\0';
	if (i->outcome_json == NULL)
		return buf;
	sy_error e = {0};
	sy_json_doc *d = sy_json_parse(i->outcome_json, strlen(i->outcome_json), &e);
	const char *v = d ? sy_cl_jstr(sy_json_doc_root(d), key) : NULL;
	snprintf(buf, len, "%s", v ? v : "");
	sy_json_doc_free(d);
	return buf;
}

sy_client_rc sy_client_explain(sy_client *c, const char *mutation_id, char **text,
                               sy_client_error *err)
{
	sy_client_intent *i = NULL;
	*text = NULL;
	sy_client_rc rc = sy_client_intent_get(c, mutation_id, &i, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	sy_buf b = SY_BUF_INIT;
	char other[48], msg[256];
	sy_buf_printf(&b, "Intent %s (%s%s of %s %s, authored %s under schema v%llu) is %s: ",
	              i->mutation_id, i->normalized ? "normalized " : "", i->op, i->table,
	              i->pk_json, i->client_version, (unsigned long long)i->schema_version,
	              sy_client_intent_state_name(i->state));
	switch (i->state) {
	case SY_INTENT_PENDING:
		sy_buf_puts(&b, "it is stored and will be sealed into the next batch at the next "
		                "sync.");
		break;
	case SY_INTENT_WAITING:
		sy_buf_printf(&b,
		              "an earlier mutation of the same row is already sealed (%s, %s), so "
		              "this one has no usable server base yet; it waits for that outcome "
		              "and is never sent with a made-up version.",
		              i->link ? i->link : "its predecessor",
		              state_of(c, i->link, other, sizeof other));
		break;
	case SY_INTENT_SEALED:
		sy_buf_printf(&b,
		              "it is in sealed batch %s, which is sent again byte for byte until "
		              "an outcome arrives (a lost response is answered by exact replay).",
		              i->batch_id ? i->batch_id : "?");
		break;
	case SY_INTENT_APPLIED:
		sy_buf_printf(&b, "the server accepted it in batch %s with version %s.",
		              i->batch_id ? i->batch_id : "?",
		              member(i, "server_version", msg, sizeof msg));
		break;
	case SY_INTENT_SUPERSEDED:
		sy_buf_printf(&b,
		              "before anything was sent it was folded, with the other intents of "
		              "its row, into normalized mutation %s (now %s); the record is kept.",
		              i->link ? i->link : "?", state_of(c, i->link, other, sizeof other));
		break;
	case SY_INTENT_CANCELLED:
		sy_buf_printf(&b,
		              "an insert followed by a delete before anything was sent has no "
		              "server effect, so neither was sent (chain ends at %s).",
		              i->link ? i->link : "?");
		break;
	case SY_INTENT_CONFLICT:
		sy_buf_printf(&b,
		              "the server answered %s (%s); the row shows the server's row. "
		              "Rebase it onto that row, accept the server's row, or discard it.",
		              i->code ? i->code : "conflict",
		              member(i, "message", msg, sizeof msg));
		break;
	case SY_INTENT_REJECTED:
		sy_buf_printf(&b,
		              "the server rejected it for good (%s: %s); it is never retried. "
		              "Discard it, or write a new intent.",
		              i->code ? i->code : "?", member(i, "message", msg, sizeof msg));
		break;
	case SY_INTENT_SCHEMA_INCOMPATIBLE:
		sy_buf_printf(&b,
		              "the current schema (v%llu) cannot represent what it authored; the "
		              "whole intent is kept and out of automatic retry. Remap it to a new "
		              "intent under the current schema, or discard it.",
		              (unsigned long long)c->schema.version);
		break;
	case SY_INTENT_BLOCKED_BY_PREDECESSOR:
		sy_buf_printf(&b,
		              "its predecessor on the same row, %s, ended %s, so it has no server "
		              "base it could honestly be sent with. Rebase or discard it.",
		              i->link ? i->link : "?", state_of(c, i->link, other, sizeof other));
		break;
	case SY_INTENT_BLOCKED_LIMIT:
		sy_buf_printf(&b,
		              "it cannot be sent: %s. It is kept, never sent, never a 400 loop; "
		              "discard it.",
		              member(i, "message", msg, sizeof msg)[0] ? msg
		                                                       : "its atomic group cannot "
		                                                         "be sent whole");
		break;
	case SY_INTENT_RESOLVED:
		sy_buf_printf(
		        &b,
		        "it was resolved explicitly (%s)%s%s; its payload and outcome are kept.",
		        i->resolution ? i->resolution : "?", i->link ? "; successor " : "",
		        i->link ? i->link : "");
		break;
	case SY_INTENT__COUNT: break;
	}
	bool left = false;
	if (i->state != SY_INTENT_APPLIED && i->state != SY_INTENT_SUPERSEDED &&
	    i->state != SY_INTENT_CANCELLED && i->state != SY_INTENT_RESOLVED &&
	    (rc = sy_cl_row_left_scope(c, i->table, i->pk_json, &left, err)) != SY_CLIENT_OK) {
		sy_client_intent_free(i);
		sy_buf_free(&b);
		return rc;
	}
	bool unsent = i->state == SY_INTENT_PENDING || i->state == SY_INTENT_WAITING ||
	              i->state == SY_INTENT_SEALED;
	if (left)
		sy_buf_printf(&b,
		              " The row left the user's scope: the server no longer shares it with "
		              "this user, so it left the device's store, and the server answers "
		              "this intent as it answers a missing row. The intent is kept; %s.",
		              unsent ? "once that answer comes, discard settles it"
		                     : "discard it to settle it");
	sy_client_intent_free(i);
	if (b.failed) {
		sy_buf_free(&b);
		return sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	}
	*text = sy_buf_steal(&b, NULL);
	return SY_CLIENT_OK;
}

void sy_client_batch_free(sy_client_batch *b)
{
	if (b == NULL)
		return;
	sy_free(b->state);
	sy_free(b->schema_hash);
	sy_free(b->body);
	sy_free(b->successor);
	for (size_t i = 0; i < b->mutation_count; i++)
		sy_free(b->mutation_ids[i]);
	sy_free(b->mutation_ids);
	for (size_t i = 0; i < b->attempt_count; i++)
		sy_free(b->attempts[i].response);
	sy_free(b->attempts);
	sy_free(b);
}

static char *blob(sqlite3_stmt *st, int i, size_t *len)
{
	*len = (size_t)sqlite3_column_bytes(st, i);
	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return NULL;
	char *p = sy_malloc(*len + 1);
	if (p != NULL) {
		if (*len)
			memcpy(p, sqlite3_column_blob(st, i), *len);
		p[*len] = '\0';
	}
	return p;
}

sy_client_rc sy_client_batch_get(sy_client *c, const char *batch_id, sy_client_batch **out,
                                 sy_client_error *err)
{
	sqlite3_stmt *st;
	*out = NULL;
	sy_client_batch *b = sy_calloc(1, sizeof *b);
	if (b == NULL)
		return sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	sy_client_rc rc = sy_cl_prepare(c,
	                                "SELECT batch_id, state, generation, schema_version,"
	                                " schema_hash, atomic, body, sha256, successor FROM batches"
	                                " WHERE batch_id = ?",
	                                &st, err);
	if (rc != SY_CLIENT_OK)
		goto fail;
	sqlite3_bind_text(st, 1, batch_id, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW) {
		sqlite3_finalize(st);
		rc = sy_cl_fail(err, SY_CLIENT_ENOTFOUND, "no batch %s", batch_id);
		goto fail;
	}
	snprintf(b->batch_id, sizeof b->batch_id, "%s", (const char *)sqlite3_column_text(st, 0));
	b->state = sy_cl_col_text(st, 1);
	b->generation = (uint64_t)sqlite3_column_int64(st, 2);
	b->schema_version = (uint64_t)sqlite3_column_int64(st, 3);
	b->schema_hash = sy_cl_col_text(st, 4);
	b->atomic = sqlite3_column_int(st, 5) != 0;
	b->body = blob(st, 6, &b->body_len);
	snprintf(b->sha256, sizeof b->sha256, "%s", (const char *)sqlite3_column_text(st, 7));
	b->successor = sy_cl_col_text(st, 8);
	sqlite3_finalize(st);
	if (b->state == NULL || b->body == NULL || b->schema_hash == NULL) {
		rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
		goto fail;
	}
	if ((rc = sy_cl_prepare(c,
	                        "SELECT mutation_id FROM batch_members WHERE batch_id = ?"
	                        " ORDER BY ordinal",
	                        &st, err)) != SY_CLIENT_OK)
		goto fail;
	sqlite3_bind_text(st, 1, batch_id, -1, SQLITE_STATIC);
	while (rc == SY_CLIENT_OK && sqlite3_step(st) == SQLITE_ROW) {
		char **nv = sy_realloc(b->mutation_ids, (b->mutation_count + 1) * sizeof *nv);
		if (nv == NULL || (nv[b->mutation_count] = sy_cl_col_text(st, 0)) == NULL) {
			if (nv != NULL)
				b->mutation_ids = nv;
			rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
			break;
		}
		b->mutation_ids = nv;
		b->mutation_count++;
	}
	sqlite3_finalize(st);
	if (rc != SY_CLIENT_OK ||
	    (rc = sy_cl_prepare(c,
	                        "SELECT at_ms, status, retry_after, response FROM attempts"
	                        " WHERE batch_id = ? ORDER BY id",
	                        &st, err)) != SY_CLIENT_OK)
		goto fail;
	sqlite3_bind_text(st, 1, batch_id, -1, SQLITE_STATIC);
	while (sqlite3_step(st) == SQLITE_ROW) {
		sy_client_attempt *nv =
		        sy_realloc(b->attempts, (b->attempt_count + 1) * sizeof *nv);
		if (nv == NULL) {
			rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
			break;
		}
		b->attempts = nv;
		sy_client_attempt *a = &nv[b->attempt_count++];
		a->at_ms = sqlite3_column_int64(st, 0);
		a->status = sqlite3_column_int(st, 1);
		a->retry_after_s =
		        sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 2);
		a->response = blob(st, 3, &a->response_len);
	}
	sqlite3_finalize(st);
	if (rc != SY_CLIENT_OK)
		goto fail;
	*out = b;
	return SY_CLIENT_OK;
fail:
	sy_client_batch_free(b);
	return rc;
}

/* --- verify ------------------------------------------------------------------- */

static void verify_rows(sy_client *c, sy_buf *rep, size_t *bad)
{
	sqlite3_stmt *st;
	if (sy_cl_prepare(c,
	                  "SELECT tbl, pk, row, schema_version, schema_hash, checksum FROM rows"
	                  " WHERE deleted = 0",
	                  &st, NULL) != SY_CLIENT_OK) {
		(*bad)++;
		return;
	}
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *tbl = (const char *)sqlite3_column_text(st, 0);
		const char *pk = (const char *)sqlite3_column_text(st, 1);
		const char *row = (const char *)sqlite3_column_text(st, 2);
		const char *sum = (const char *)sqlite3_column_text(st, 5);
		sy_schema_ref ref = {.version = (uint64_t)sqlite3_column_int64(st, 3)};
		snprintf(ref.hash, sizeof ref.hash, "%s", (const char *)sqlite3_column_text(st, 4));
		sy_manifest *m = sy_cl_schema_manifest(c, ref.version);
		const sy_table *t = m ? sy_manifest_table(m, tbl, strlen(tbl)) : NULL;
		sy_error e = {0};
		sy_json_doc *pd = sy_json_parse(pk, strlen(pk), &e);
		sy_json_doc *rd = row ? sy_json_parse(row, strlen(row), &e) : NULL;
		char hex[SY_FP_HEX_LEN + 1];
		bool ok = t != NULL && pd != NULL && rd != NULL && sum != NULL &&
		          sy_fp_row_checksum(&ref, tbl, strlen(tbl), t->pk.field_id,
		                             strlen(t->pk.field_id), sy_json_doc_root(pd),
		                             sy_json_doc_root(rd), hex, &e) &&
		          strcmp(hex, sum) == 0;
		if (!ok) {
			(*bad)++;
			sy_buf_printf(rep, "row %s %s: checksum does not verify\n", tbl, pk);
		}
		sy_json_doc_free(pd);
		sy_json_doc_free(rd);
		sy_manifest_free(m);
	}
	sqlite3_finalize(st);
}

static void verify_batches(sy_client *c, sy_buf *rep, size_t *bad)
{
	sqlite3_stmt *st;
	if (sy_cl_prepare(c, "SELECT batch_id, body, sha256 FROM batches", &st, NULL) !=
	    SY_CLIENT_OK) {
		(*bad)++;
		return;
	}
	while (sqlite3_step(st) == SQLITE_ROW) {
		uint8_t md[SY_SHA256_LEN];
		char hex[65];
		bool ok = sy_sha256(sqlite3_column_blob(st, 1), (size_t)sqlite3_column_bytes(st, 1),
		                    md);
		sy_fp_hex(md, hex);
		if (!ok || strcmp(hex, (const char *)sqlite3_column_text(st, 2)) != 0) {
			(*bad)++;
			sy_buf_printf(rep, "batch %s: bytes do not match their SHA-256\n",
			              (const char *)sqlite3_column_text(st, 0));
		}
	}
	sqlite3_finalize(st);
}

static void verify_query(sy_client *c, const char *sql, const char *what, sy_buf *rep, size_t *bad)
{
	sqlite3_stmt *st;
	if (sy_cl_prepare(c, sql, &st, NULL) != SY_CLIENT_OK) {
		(*bad)++;
		return;
	}
	while (sqlite3_step(st) == SQLITE_ROW) {
		(*bad)++;
		sy_buf_printf(rep, "%s: %s\n", what, (const char *)sqlite3_column_text(st, 0));
	}
	sqlite3_finalize(st);
}

sy_client_rc sy_client_verify(sy_client *c, char **report, sy_client_error *err)
{
	sy_buf rep = SY_BUF_INIT;
	size_t bad = 0;
	verify_query(c, "PRAGMA integrity_check", "integrity", &rep, &bad);
	if (bad == 1 && rep.data != NULL && strstr(rep.data, "integrity: ok") != NULL) {
		bad = 0;
		sy_buf_reset(&rep);
	}
	verify_rows(c, &rep, &bad);
	sy_cl_visible_verify(c, &rep, &bad);
	verify_batches(c, &rep, &bad);
	verify_query(c,
	             "SELECT mutation_id FROM intents i WHERE link IS NOT NULL AND NOT EXISTS"
	             " (SELECT 1 FROM intents j WHERE j.mutation_id = i.link)",
	             "intent links to nothing", &rep, &bad);
	verify_query(c,
	             "SELECT mutation_id FROM intents i WHERE state = 'sealed' AND NOT EXISTS"
	             " (SELECT 1 FROM batches b WHERE b.batch_id = i.batch_id AND"
	             " b.state = 'sealed')",
	             "sealed intent outside an unsettled batch", &rep, &bad);
	verify_query(c,
	             "SELECT mutation_id FROM batch_members GROUP BY mutation_id HAVING"
	             " count(DISTINCT batch_id) > 1 AND sum(batch_id IN (SELECT batch_id FROM"
	             " batches WHERE state IN ('sealed', 'completed'))) > 1",
	             "mutation in two live batches", &rep, &bad);
	if (report != NULL)
		*report = rep.failed ? NULL : sy_buf_steal(&rep, NULL);
	sy_buf_free(&rep);
	if (bad != 0)
		return sy_cl_fail(err, SY_CLIENT_EPROTOCOL, "verify: %zu problem(s)", bad);
	return SY_CLIENT_OK;
}
