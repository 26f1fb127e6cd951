/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client_json.c: the JSON forms of the client's records, status and intent.
 *
 * Layer: middle of src/client (doc/hacking.md).
 * Notes: synchro-cli prints them with --json. The browser API (src/web) returns them. So
 * both show the same phases, counts and names. The writers are small and write to an
 * sy_buf. A failed append marks the buffer failed.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "client_json.h"
#include "synchro/jcs.h"

void sy_cl_json_str(sy_buf *b, const char *s)
{
	if (s == NULL)
		sy_buf_puts(b, "null");
	else if (!sy_jcs_write_string(b, s, strlen(s)))
		b->failed = true;
}

/* A member "key":"value" (or null), with its leading comma unless first. */
void sy_cl_json_member(sy_buf *b, bool *first, const char *key, const char *value)
{
	if (!*first)
		sy_buf_putc(b, ',');
	*first = false;
	sy_cl_json_str(b, key);
	sy_buf_putc(b, ':');
	sy_cl_json_str(b, value);
}

void sy_cl_json_raw(sy_buf *b, bool *first, const char *key, const char *raw)
{
	if (!*first)
		sy_buf_putc(b, ',');
	*first = false;
	sy_cl_json_str(b, key);
	sy_buf_putc(b, ':');
	sy_buf_puts(b, raw ? raw : "null");
}

void sy_cl_status_json(sy_buf *b, const sy_client_status *s)
{
	bool f = true;
	char num[32];
	sy_buf_putc(b, '{');
	sy_cl_json_member(b, &f, "client_id", s->client_id);
	snprintf(num, sizeof num, "%llu", (unsigned long long)s->generation);
	sy_cl_json_raw(b, &f, "client_generation", num);
	snprintf(num, sizeof num, "%llu", (unsigned long long)s->schema_version);
	sy_cl_json_raw(b, &f, "schema_version", num);
	sy_cl_json_member(b, &f, "schema_hash", s->schema_hash[0] ? s->schema_hash : NULL);
	sy_cl_json_member(b, &f, "phase", sy_client_phase_name(s->phase));
	sy_cl_json_member(b, &f, "cursor", s->has_cursor ? s->cursor : NULL);
	sy_cl_json_raw(b, &f, "rebuilding", s->rebuilding ? "true" : "false");
	snprintf(num, sizeof num, "%llu", (unsigned long long)s->rebuild_rows);
	sy_cl_json_raw(b, &f, "rebuild_rows", num);
	snprintf(num, sizeof num, "%lld", (long long)s->rebuild_total);
	sy_cl_json_raw(b, &f, "rebuild_total", s->rebuild_total >= 0 ? num : NULL);
	sy_cl_json_raw(b, &f, "frozen", s->frozen ? "true" : "false");
	sy_cl_json_raw(b, &f, "retired", s->retired ? "true" : "false");
	sy_cl_json_member(b, &f, "last_error", s->last_error[0] ? s->last_error : NULL);
	sy_cl_json_raw(b, &f, "last_error_retryable", s->last_error_retryable ? "true" : "false");
	snprintf(num, sizeof num, "%lld", (long long)s->next_attempt_ms);
	sy_cl_json_raw(b, &f, "next_attempt_ms", num);
	snprintf(num, sizeof num, "%zu", s->unsettled_batches);
	sy_cl_json_raw(b, &f, "unsettled_batches", num);
	sy_buf_puts(b, ",\"counts\":{");
	bool g = true;
	for (int i = 0; i < SY_INTENT__COUNT; i++) {
		snprintf(num, sizeof num, "%zu", s->counts[i]);
		sy_cl_json_raw(b, &g, sy_client_intent_state_name((sy_intent_state)i), num);
	}
	sy_buf_puts(b, "}}");
}

void sy_cl_intent_json(sy_buf *b, const sy_client_intent *i)
{
	bool f = true;
	char num[32];
	sy_buf_putc(b, '{');
	sy_cl_json_member(b, &f, "mutation_id", i->mutation_id);
	sy_cl_json_member(b, &f, "state", sy_client_intent_state_name(i->state));
	sy_cl_json_member(b, &f, "table", i->table);
	sy_cl_json_raw(b, &f, "pk", i->pk_json);
	sy_cl_json_member(b, &f, "operation", i->op);
	sy_cl_json_raw(b, &f, "columns", i->columns_json);
	sy_cl_json_member(b, &f, "base_version", i->base_version);
	sy_cl_json_member(b, &f, "client_version", i->client_version);
	snprintf(num, sizeof num, "%llu", (unsigned long long)i->schema_version);
	sy_cl_json_raw(b, &f, "schema_version", num);
	snprintf(num, sizeof num, "%lld", (long long)i->local_order);
	sy_cl_json_raw(b, &f, "local_order", num);
	sy_cl_json_raw(b, &f, "normalized", i->normalized ? "true" : "false");
	sy_cl_json_raw(b, &f, "atomic", i->atomic ? "true" : "false");
	sy_cl_json_member(b, &f, "link", i->link);
	sy_cl_json_member(b, &f, "batch_id", i->batch_id);
	sy_cl_json_member(b, &f, "code", i->code);
	sy_cl_json_raw(b, &f, "outcome", i->outcome_json);
	sy_buf_putc(b, '}');
}
