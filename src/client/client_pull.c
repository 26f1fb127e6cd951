/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client_pull.c: pull and rebuild. It writes their request bodies and applies their pages.
 *
 * Layer: middle of src/client (doc/hacking.md).
 * Rules: doc/contract.md#pull-and-rebuild (pages, cursors and rebuild).
 * Notes: Each pull page is applied with its cursor in one SQLite transaction. So a crash
 * never saves a checkpoint without its data, nor data without its checkpoint. Every row is
 * checked against its row_checksum, under the schema it names, before anything of the page
 * is applied. The echo of an own mutation (mutation_id present) only refreshes the row. It
 * creates no intent and changes none.
 *
 * A rebuild stages its pages. It swaps the staged rows in with the final cursor in one
 * transaction. The intents table is never touched, so every unsettled intent survives
 * rebuild_required, cursor_expired and rebuild_invalidated. A rebuild page applies only
 * when it answers the page token the store holds. So pages apply in order, even when the
 * next one was asked for before the last one was applied (client_sync.c).
 */
#include "config.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"
#include "synchro/alloc.h"
#include "synchro/fingerprint.h"
#include "synchro/jcs.h"

static bool put_schema(sy_buf *b, const sy_schema_ref *s)
{
	return sy_buf_printf(b, "{\"hash\":\"%s\",\"version\":%llu}", s->hash,
	                     (unsigned long long)s->version);
}

/* The body of a rebuild request for the page after token (NULL: the first page), JCS. */
static void rebuild_body(sy_client *c, const char *rid, const char *token, sy_buf *out)
{
	/* JCS member order: client_generation, client_id, limit, page_token, rebuild_id, schema */
	sy_buf_printf(out, "{\"client_generation\":%llu,\"client_id\":\"%s\",",
	              (unsigned long long)c->generation, c->client_id);
	sy_buf_printf(out, "\"limit\":%u,\"page_token\":", c->rebuild_limit);
	if (token != NULL) {
		if (!sy_jcs_write_string(out, token, strlen(token)))
			out->failed = true;
	} else {
		sy_buf_puts(out, "null");
	}
	sy_buf_printf(out, ",\"rebuild_id\":\"%s\",\"schema\":", rid ? rid : "");
	put_schema(out, &c->schema);
	sy_buf_putc(out, '}');
}

/* Remembers the page token a rebuild request carries: its answer applies only over it. */
static sy_client_rc asked(sy_client *c, const char *token, sy_client_error *err)
{
	char *copy = token != NULL ? sy_strndup(token, strlen(token)) : NULL;
	if (token != NULL && copy == NULL)
		return sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	sy_free(c->rebuild_asked);
	c->rebuild_asked = copy;
	return SY_CLIENT_OK;
}

sy_client_rc sy_cl_pull_body(sy_client *c, bool rebuild, sy_buf *out, sy_client_error *err)
{
	char *cursor = NULL, *rid = NULL, *token = NULL;
	sy_client_rc rc = rebuild ? sy_cl_meta_get(c, "rebuild_id", &rid, err)
	                          : sy_cl_meta_get(c, "cursor", &cursor, err);
	if (rc == SY_CLIENT_OK && rebuild)
		rc = sy_cl_meta_get(c, "rebuild_token", &token, err);
	if (rc == SY_CLIENT_OK && rebuild)
		rc = asked(c, token, err);
	if (rc != SY_CLIENT_OK)
		goto done;
	if (rebuild) {
		rebuild_body(c, rid, token, out);
	} else {
		/* JCS member order: client_generation, client_id, cursor, limit, schema */
		sy_buf_printf(out, "{\"client_generation\":%llu,\"client_id\":\"%s\",",
		              (unsigned long long)c->generation, c->client_id);
		sy_buf_puts(out, "\"cursor\":");
		if (cursor != NULL) {
			if (!sy_jcs_write_string(out, cursor, strlen(cursor)))
				out->failed = true;
		} else {
			sy_buf_puts(out, "null");
		}
		sy_buf_printf(out, ",\"limit\":%u,\"schema\":", c->pull_limit);
		put_schema(out, &c->schema);
		sy_buf_putc(out, '}');
	}
	if (out->failed)
		rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
done:
	sy_free(cursor);
	sy_free(rid);
	sy_free(token);
	return rc;
}

sy_client_rc sy_cl_rebuild_body_after(sy_client *c, const char *token, sy_buf *out,
                                      sy_client_error *err)
{
	char *rid = NULL;
	sy_client_rc rc = sy_cl_meta_get(c, "rebuild_id", &rid, err);
	if (rc == SY_CLIENT_OK && rid == NULL)
		rc = sy_cl_fail(err, SY_CLIENT_ESTORE, "no rebuild under way");
	if (rc == SY_CLIENT_OK)
		rc = asked(c, token, err);
	if (rc == SY_CLIENT_OK) {
		rebuild_body(c, rid, token, out);
		if (out->failed)
			rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	}
	sy_free(rid);
	return rc;
}

sy_client_rc sy_cl_rebuild_start(sy_client *c, sy_client_error *err)
{
	char rid[SY_UUID_LEN + 1];
	sy_cl_new_uuid(rid);
	sy_client_rc rc = sy_cl_begin(c, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	if ((rc = sy_cl_exec(c,
	                     "DELETE FROM rebuild_rows; DELETE FROM meta WHERE key IN"
	                     " ('rebuild_token', 'rebuild_received', 'rebuild_total')",
	                     err)) == SY_CLIENT_OK &&
	    (rc = sy_cl_meta_set(c, "rebuild_id", rid, err)) == SY_CLIENT_OK)
		return sy_cl_commit(c, err);
	sy_cl_rollback(c);
	return rc;
}

bool sy_cl_row_checksum_ok(const sy_schema_ref *schema, const char *table, const sy_json *pk,
                           const sy_json *row, const char *checksum, char *why, size_t whylen)
{
	const sy_json *field = sy_json_get(pk, "field");
	const sy_json *value = sy_json_get(pk, "value");
	char hex[SY_FP_HEX_LEN + 1];
	sy_error e = {0};
	if (field == NULL || field->type != SY_JSON_STRING || value == NULL) {
		snprintf(why, whylen, "pk: expected {field, value}");
		return false;
	}
	if (checksum == NULL) {
		snprintf(why, whylen, "row_checksum missing beside row");
		return false;
	}
	if (!sy_fp_row_checksum(schema, table, strlen(table), field->u.string.data,
	                        field->u.string.len, value, row, hex, &e)) {
		snprintf(why, whylen, "row: %s", e.message);
		return false;
	}
	if (strcmp(hex, checksum) != 0) {
		snprintf(why, whylen, "row_checksum does not match the row");
		return false;
	}
	return true;
}

/* One change or rebuild row: checked, then stored. */
static sy_client_rc apply_change(sy_client *c, const sy_json *ch, bool rebuild, size_t i,
                                 bool check_only, sy_client_error *err)
{
	const char *table = sy_cl_jstr(ch, "table");
	const char *op = sy_cl_jstr(ch, "op");
	const char *sv = sy_cl_jstr(ch, "server_version");
	const sy_json *pk = sy_json_get(ch, "pk");
	const sy_json *row = sy_json_get(ch, "row");
	sy_schema_ref ref;
	char why[200];
	if (table == NULL || op == NULL || sv == NULL || pk == NULL ||
	    !sy_schema_ref_parse(sy_json_get(ch, "schema"), &ref) ||
	    (strcmp(op, "upsert") != 0 && strcmp(op, "delete") != 0) ||
	    !sy_opaque_version_valid(sv, strlen(sv)))
		return sy_cl_fail(err, SY_CLIENT_EPROTOCOL, "change %zu: malformed", i);
	bool upsert = strcmp(op, "upsert") == 0;
	if (upsert && (row == NULL || row->type != SY_JSON_OBJECT))
		return sy_cl_fail(err, SY_CLIENT_EPROTOCOL, "change %zu: upsert without a row", i);
	if (row != NULL && !sy_cl_row_checksum_ok(&ref, table, pk, row,
	                                          sy_cl_jstr(ch, "row_checksum"), why, sizeof why))
		return sy_cl_fail(err, SY_CLIENT_EPROTOCOL, "change %zu: %s", i, why);
	if (check_only)
		return SY_CLIENT_OK;
	/* A delete of a row that left the user's scope: it leaves the store, not as a tombstone
	 * (the row still exists), and its intents stay (doc/protocol.md "Membership scopes"). */
	const sy_json *ls = sy_json_get(ch, "left_scope");
	bool left_scope = !upsert && !rebuild && ls != NULL && ls->type == SY_JSON_TRUE;
	char *pktext = sy_cl_jcs(sy_json_get(pk, "value"), NULL);
	char *rowtext = row != NULL ? sy_cl_jcs(row, NULL) : NULL;
	sy_client_rc rc;
	if (pktext == NULL || (row != NULL && rowtext == NULL))
		rc = sy_cl_fail(err, SY_CLIENT_ENOMEM, "out of memory");
	else if (left_scope)
		rc = sy_cl_row_exit(c, table, pktext, sv, err);
	else
		rc = sy_cl_row_put(c, table, pktext, rowtext, !upsert, sv, &ref,
		                   sy_cl_jstr(ch, "row_checksum"), rebuild, err);
	sy_free(pktext);
	sy_free(rowtext);
	return rc;
}

/* Adds n to the rows a rebuild has staged so far (meta rebuild_received). */
static sy_client_rc add_received(sy_client *c, size_t n, sy_client_error *err)
{
	char *v = NULL;
	sy_client_rc rc = sy_cl_meta_get(c, "rebuild_received", &v, err);
	if (rc != SY_CLIENT_OK)
		return rc;
	long long have = v != NULL ? strtoll(v, NULL, 10) : 0;
	sy_free(v);
	return sy_cl_meta_set_int(c, "rebuild_received", (int64_t)(have + (long long)n), err);
}

/* Whether the store's page token is the one the answered rebuild request carried. */
static sy_client_rc answers_store(sy_client *c, bool *same, sy_client_error *err)
{
	char *held = NULL;
	sy_client_rc rc = sy_cl_meta_get(c, "rebuild_token", &held, err);
	*same = rc == SY_CLIENT_OK &&
	        (held == NULL ? c->rebuild_asked == NULL
	                      : c->rebuild_asked != NULL && strcmp(held, c->rebuild_asked) == 0);
	sy_free(held);
	return rc;
}

sy_client_rc sy_cl_pull_apply(sy_client *c, bool rebuild, const char *body, size_t len,
                              sy_cl_ahead_fn ahead, bool *has_more, sy_client_error *err)
{
	/* the body of an answer to the pull or rebuild request */
	assert(body != NULL);
	sy_error e = {0};
	*has_more = false;
	sy_json_doc *doc = sy_json_parse(body, len, &e);
	if (doc == NULL)
		return sy_cl_fail(err, SY_CLIENT_EPROTOCOL, "pull response: %s", e.message);
	const sy_json *root = sy_json_doc_root(doc);
	const sy_json *items = sy_json_get(root, rebuild ? "rows" : "changes");
	const sy_json *cursor = sy_json_get(root, "cursor");
	const sy_json *token = sy_json_get(root, "page_token");
	const sy_json *more = sy_json_get(root, "has_more");
	const sy_json *total = rebuild ? sy_json_get(root, "rows_total") : NULL;
	bool relaxed = false; /* synchronous = NORMAL for this page (see below) */
	sy_client_rc rc = SY_CLIENT_OK;
	if (items == NULL || items->type != SY_JSON_ARRAY ||
	    (!rebuild && (cursor == NULL || cursor->type != SY_JSON_STRING || more == NULL ||
	                  (more->type != SY_JSON_TRUE && more->type != SY_JSON_FALSE))) ||
	    (rebuild &&
	     (token == NULL || (token->type != SY_JSON_NULL && token->type != SY_JSON_STRING))) ||
	    (rebuild && token->type == SY_JSON_NULL &&
	     (cursor == NULL || cursor->type != SY_JSON_STRING))) {
		rc = sy_cl_fail(err, SY_CLIENT_EPROTOCOL, "%s response: malformed",
		                rebuild ? "rebuild" : "pull");
		goto done;
	}
	if (rebuild) {
		/* A page answers the token it was asked with: over any other it is not applied,
		 * and the rebuild goes on from the store's token. */
		bool same = false;
		if ((rc = answers_store(c, &same, err)) != SY_CLIENT_OK)
			goto done;
		if (!same) {
			*has_more = true;
			goto done;
		}
	}
	/* The next page is asked for now: the server reads it while this one is checked and
	 * applied. Its answer applies only over this page's token (answers_store above); a page
	 * that fails its checks or its apply cancels it (on_pull). */
	if (rebuild && token->type == SY_JSON_STRING && ahead != NULL)
		rc = ahead(c, token->u.string.data, err);
	/* Everything is checked before anything is applied. */
	for (size_t i = 0; rc == SY_CLIENT_OK && i < items->u.array.count; i++)
		rc = apply_change(c, items->u.array.items[i], rebuild, i, true, err);
	/* A rebuild page before the last commits without waiting for the disk: what it stages
	 * is seen by nothing until the last page, whose synchronous=FULL commit syncs the WAL
	 * and with it every earlier page's frames. A power cut loses at most the latest pages
	 * and their page token together (one transaction), and the rebuild goes on from the
	 * token that survived (the server's session answers any page of it again). */
	relaxed = rc == SY_CLIENT_OK && rebuild && token->type == SY_JSON_STRING;
	if (rc == SY_CLIENT_OK && relaxed)
		rc = sy_cl_exec(c, "PRAGMA synchronous = NORMAL", err);
	if (rc != SY_CLIENT_OK || (rc = sy_cl_begin(c, err)) != SY_CLIENT_OK)
		goto done;
	for (size_t i = 0; rc == SY_CLIENT_OK && i < items->u.array.count; i++)
		rc = apply_change(c, items->u.array.items[i], rebuild, i, false, err);
	if (rc == SY_CLIENT_OK && !rebuild) {
		rc = sy_cl_meta_set(c, "cursor", cursor->u.string.data, err);
		*has_more = more->type == SY_JSON_TRUE;
	} else if (rc == SY_CLIENT_OK && token->type == SY_JSON_STRING) {
		/* Progress for sy_client_status: rows staged so far, and the server's total
		 * when it gives one (its first page; a value that is not a count is ignored). */
		rc = add_received(c, items->u.array.count, err);
		if (rc == SY_CLIENT_OK && total != NULL && total->type == SY_JSON_NUMBER &&
		    total->u.number.is_integer && total->u.number.value >= 0 &&
		    total->u.number.value < 9e15)
			rc = sy_cl_meta_set_int(c, "rebuild_total", (int64_t)total->u.number.value,
			                        err);
		if (rc == SY_CLIENT_OK)
			rc = sy_cl_meta_set(c, "rebuild_token", token->u.string.data, err);
		*has_more = true;
	} else if (rc == SY_CLIENT_OK) {
		/* The last page: the staged snapshot replaces the rows, with its cursor; the
		 * visible tables are built again from scratch at the commit (client_visible.c). */
		if (c->rows_replacing != NULL)
			rc = c->rows_replacing(c, err);
		if (rc == SY_CLIENT_OK)
			rc = sy_cl_exec(
			        c,
			        "DELETE FROM scope_exits WHERE (tbl, pk) IN"
			        " (SELECT tbl, pk FROM rebuild_rows);"
			        " DELETE FROM rows; INSERT INTO rows SELECT * FROM rebuild_rows;"
			        " DELETE FROM rebuild_rows;"
			        " DELETE FROM meta WHERE key IN ('rebuild_id', 'rebuild_token',"
			        " 'rebuild_received', 'rebuild_total')",
			        err);
		if (rc == SY_CLIENT_OK)
			rc = sy_cl_meta_set(c, "cursor", cursor->u.string.data, err);
	}
	if (rc == SY_CLIENT_OK)
		rc = sy_cl_commit(c, err);
	else
		sy_cl_rollback(c);
	if (relaxed) {
		sy_client_error e2;
		sy_client_rc back = sy_cl_exec(c, "PRAGMA synchronous = FULL", &e2);
		if (back != SY_CLIENT_OK && rc == SY_CLIENT_OK) {
			rc = back;
			*err = e2;
		}
		relaxed = false;
	}
	/* Listeners hear of committed state only. A rebuild's rows change at its last page. */
	if (rc == SY_CLIENT_OK && !rebuild)
		sy_cl_emit_rows(c, items);
	else if (rc == SY_CLIENT_OK && !*has_more)
		sy_cl_emit(c, SY_CLIENT_EVENT_ROW, NULL, NULL, NULL);
done:
	if (relaxed && sy_cl_exec(c, "PRAGMA synchronous = FULL", NULL) != SY_CLIENT_OK &&
	    rc == SY_CLIENT_OK)
		rc = sy_cl_fail(err, SY_CLIENT_ESTORE, "cannot restore synchronous = FULL");
	sy_json_doc_free(doc);
	return rc;
}
