/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli_read.c: synchro-cli's read commands: status, pending, show, explain, batch, rows and
 * verify.
 *
 * Layer: middle of src/client (doc/hacking.md).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "client_json.h"
#include "synchro/alloc.h"

/* The JSON helpers and forms are the library's (client_json.c), shared with the browser API. */
#define jstr    sy_cl_json_str
#define jmember sy_cl_json_member
#define jraw    sy_cl_json_raw

static void put(sy_buf *b)
{
	if (!b->failed && b->data != NULL)
		fwrite(b->data, 1, b->len, stdout);
	sy_buf_free(b);
}

/* Closes a listing: the JSON array's end, then the whole listing on stdout, or on failure
 * nothing of it and the library's message on stderr. */
static int listing_end(sy_buf *b, bool json, sy_client_rc rc, const sy_client_error *err)
{
	if (json)
		sy_buf_puts(b, "]\n");
	if (rc != SY_CLIENT_OK) {
		sy_buf_free(b);
		fprintf(stderr, "synchro-cli: %s\n", err->message);
		return sy_cli_exit(rc);
	}
	put(b);
	return 0;
}

static int cmd_status(sy_client *c, bool json)
{
	sy_client_status s;
	sy_client_error err = {0};
	sy_client_rc rc = sy_client_status_get(c, &s, &err);
	if (rc != SY_CLIENT_OK) {
		fprintf(stderr, "synchro-cli: %s\n", err.message);
		return sy_cli_exit(rc);
	}
	sy_buf b = SY_BUF_INIT;
	if (json) {
		sy_cl_status_json(&b, &s);
		sy_buf_putc(&b, '\n');
	} else {
		sy_buf_printf(&b, "client:      %s\ngeneration:  %llu\nschema:      v%llu %s\n",
		              s.client_id, (unsigned long long)s.generation,
		              (unsigned long long)s.schema_version, s.schema_hash);
		sy_buf_printf(&b, "phase:       %s%s%s\ncursor:      %s\n",
		              sy_client_phase_name(s.phase), s.frozen ? " (queue frozen)" : "",
		              s.retired ? " (retired: read-only)" : "",
		              s.has_cursor ? s.cursor : "(none: rebuild)");
		if (s.last_error[0])
			sy_buf_printf(&b, "last error:  %s (%s)\n", s.last_error,
			              s.last_error_retryable ? "retryable" : "not retryable");
		sy_buf_printf(&b, "batches:     %zu unsettled\n", s.unsettled_batches);
		for (int i = 0; i < SY_INTENT__COUNT; i++)
			if (s.counts[i])
				sy_buf_printf(&b, "%-24s %zu\n",
				              sy_client_intent_state_name((sy_intent_state)i),
				              s.counts[i]);
	}
	put(&b);
	return 0;
}

#define intent_json sy_cl_intent_json

typedef struct {
	sy_buf *b;
	bool json, first;
} listing;

static void on_intent(void *ctx, const sy_client_intent *i)
{
	listing *l = ctx;
	if (l->json) {
		if (!l->first)
			sy_buf_putc(l->b, ',');
		intent_json(l->b, i);
	} else {
		sy_buf_printf(l->b, "%s %-22s %s %s %s%s%s\n", i->mutation_id,
		              sy_client_intent_state_name(i->state), i->op, i->table, i->pk_json,
		              i->code ? " " : "", i->code ? i->code : "");
	}
	l->first = false;
}

static int cmd_pending(sy_client *c, bool all, bool json)
{
	sy_buf b = SY_BUF_INIT;
	listing l = {&b, json, true};
	sy_client_error err = {0};
	if (json)
		sy_buf_putc(&b, '[');
	sy_client_rc rc = sy_client_intents(c, all, on_intent, &l, &err);
	return listing_end(&b, json, rc, &err);
}

static int cmd_show(sy_client *c, const char *id, bool json, bool explain)
{
	sy_client_error err = {0};
	sy_client_intent *i = NULL;
	char *text = NULL;
	sy_client_rc rc = sy_client_intent_get(c, id, &i, &err);
	if (rc == SY_CLIENT_OK && explain)
		rc = sy_client_explain(c, id, &text, &err);
	if (rc != SY_CLIENT_OK) {
		sy_client_intent_free(i);
		fprintf(stderr, "synchro-cli: %s\n", err.message);
		return sy_cli_exit(rc);
	}
	sy_buf b = SY_BUF_INIT;
	if (explain && json) {
		bool f = true;
		sy_buf_putc(&b, '{');
		jmember(&b, &f, "mutation_id", i->mutation_id);
		jmember(&b, &f, "state", sy_client_intent_state_name(i->state));
		jmember(&b, &f, "explanation", text);
		sy_buf_puts(&b, "}\n");
	} else if (explain) {
		sy_buf_printf(&b, "%s\n", text);
	} else if (json) {
		intent_json(&b, i);
		sy_buf_putc(&b, '\n');
	} else {
		sy_buf_printf(
		        &b,
		        "mutation_id:    %s\nstate:          %s\noperation:      %s %s %s\n"
		        "columns:        %s\nbase_version:   %s\nclient_version: %s\n"
		        "schema:         v%llu\nlocal order:    %lld%s%s\nlink:           %s\n"
		        "batch:          %s\ncode:           %s\noutcome:        %s\n",
		        i->mutation_id, sy_client_intent_state_name(i->state), i->op, i->table,
		        i->pk_json, i->columns_json ? i->columns_json : "-",
		        i->base_version ? i->base_version : "-", i->client_version,
		        (unsigned long long)i->schema_version, (long long)i->local_order,
		        i->normalized ? " (normalized)" : "", i->atomic ? " (atomic)" : "",
		        i->link ? i->link : "-", i->batch_id ? i->batch_id : "-",
		        i->code ? i->code : "-", i->outcome_json ? i->outcome_json : "-");
	}
	sy_free(text);
	sy_client_intent_free(i);
	put(&b);
	return 0;
}

static int cmd_batch(sy_client *c, const char *id, bool bytes, bool json)
{
	sy_client_error err = {0};
	sy_client_batch *bt = NULL;
	sy_client_rc rc = sy_client_batch_get(c, id, &bt, &err);
	if (rc != SY_CLIENT_OK) {
		fprintf(stderr, "synchro-cli: %s\n", err.message);
		return sy_cli_exit(rc);
	}
	if (bytes) {
		/* The exact sealed request bytes, as every attempt sent them. */
		fwrite(bt->body, 1, bt->body_len, stdout);
		sy_client_batch_free(bt);
		return 0;
	}
	sy_buf b = SY_BUF_INIT;
	char num[32];
	if (json) {
		bool f = true;
		sy_buf_putc(&b, '{');
		jmember(&b, &f, "batch_id", bt->batch_id);
		jmember(&b, &f, "state", bt->state);
		snprintf(num, sizeof num, "%llu", (unsigned long long)bt->generation);
		jraw(&b, &f, "client_generation", num);
		snprintf(num, sizeof num, "%llu", (unsigned long long)bt->schema_version);
		jraw(&b, &f, "schema_version", num);
		jraw(&b, &f, "atomic", bt->atomic ? "true" : "false");
		jmember(&b, &f, "sha256", bt->sha256);
		jmember(&b, &f, "successor", bt->successor);
		sy_buf_puts(&b, ",\"mutation_ids\":[");
		for (size_t i = 0; i < bt->mutation_count; i++) {
			if (i)
				sy_buf_putc(&b, ',');
			jstr(&b, bt->mutation_ids[i]);
		}
		sy_buf_puts(&b, "],\"attempts\":[");
		for (size_t i = 0; i < bt->attempt_count; i++) {
			bool g = true;
			sy_buf_puts(&b, i ? ",{" : "{");
			snprintf(num, sizeof num, "%lld", (long long)bt->attempts[i].at_ms);
			jraw(&b, &g, "at_ms", num);
			snprintf(num, sizeof num, "%d", bt->attempts[i].status);
			jraw(&b, &g, "status", num);
			snprintf(num, sizeof num, "%d", bt->attempts[i].retry_after_s);
			jraw(&b, &g, "retry_after",
			     bt->attempts[i].retry_after_s >= 0 ? num : NULL);
			jmember(&b, &g, "response", bt->attempts[i].response);
			sy_buf_putc(&b, '}');
		}
		sy_buf_puts(&b, "]}\n");
	} else {
		sy_buf_printf(
		        &b,
		        "batch_id:   %s\nstate:      %s%s%s\ngeneration: %llu\nschema:     v%llu\n"
		        "atomic:     %s\nsha256:     %s\nbytes:      %zu\nmutations:  %zu\n",
		        bt->batch_id, bt->state, bt->successor ? " -> " : "",
		        bt->successor ? bt->successor : "", (unsigned long long)bt->generation,
		        (unsigned long long)bt->schema_version, bt->atomic ? "yes" : "no",
		        bt->sha256, bt->body_len, bt->mutation_count);
		for (size_t i = 0; i < bt->mutation_count; i++)
			sy_buf_printf(&b, "  %s\n", bt->mutation_ids[i]);
		for (size_t i = 0; i < bt->attempt_count; i++)
			sy_buf_printf(&b, "attempt %zu: at %lld status %d%s\n", i + 1,
			              (long long)bt->attempts[i].at_ms, bt->attempts[i].status,
			              bt->attempts[i].status == 0 ? " (no response)" : "");
	}
	sy_client_batch_free(bt);
	put(&b);
	return 0;
}

static void on_row(void *ctx, const char *pk, const char *row, sy_client_row_state state)
{
	listing *l = ctx;
	if (l->json) {
		bool f = true;
		sy_buf_puts(l->b, l->first ? "{" : ",{");
		jraw(l->b, &f, "pk", pk);
		jmember(l->b, &f, "state", sy_client_row_state_name(state));
		jraw(l->b, &f, "row", row);
		sy_buf_putc(l->b, '}');
	} else {
		sy_buf_printf(l->b, "%s %-8s %s\n", pk, sy_client_row_state_name(state),
		              row ? row : "(not visible)");
	}
	l->first = false;
}

static int cmd_rows(sy_client *c, const char *table, bool json)
{
	sy_buf b = SY_BUF_INIT;
	listing l = {&b, json, true};
	sy_client_error err = {0};
	if (json)
		sy_buf_putc(&b, '[');
	sy_client_rc rc = sy_client_rows(c, table, on_row, &l, &err);
	return listing_end(&b, json, rc, &err);
}

typedef struct {
	sy_buf *b;
	bool json, first;
} qlisting;

static void on_query_row(void *ctx, const char *row_json)
{
	qlisting *l = ctx;
	if (l->json && !l->first)
		sy_buf_putc(l->b, ',');
	sy_buf_puts(l->b, row_json);
	if (!l->json)
		sy_buf_putc(l->b, '\n');
	l->first = false;
}

/* PARAM: a JSON number when it is one, else text. */
static char *query_params(int argc, char **argv)
{
	sy_buf b = SY_BUF_INIT;
	sy_buf_putc(&b, '[');
	for (int i = 0; i < argc; i++) {
		sy_error e = {0};
		sy_json_doc *d = sy_json_parse(argv[i], strlen(argv[i]), &e);
		bool number = d != NULL && sy_json_doc_root(d)->type == SY_JSON_NUMBER;
		sy_json_doc_free(d);
		if (i > 0)
			sy_buf_putc(&b, ',');
		if (number)
			sy_buf_puts(&b, argv[i]);
		else if (!sy_jcs_write_string(&b, argv[i], strlen(argv[i])))
			b.failed = true;
	}
	sy_buf_putc(&b, ']');
	if (b.failed) {
		sy_buf_free(&b);
		return NULL;
	}
	return sy_buf_steal(&b, NULL);
}

static int cmd_query(sy_client *c, int argc, char **argv, bool json)
{
	sy_buf b = SY_BUF_INIT;
	qlisting l = {&b, json, true};
	sy_client_error err = {0};
	char *params = query_params(argc - 1, argv + 1);
	if (params == NULL) {
		fprintf(stderr, "synchro-cli: out of memory\n");
		return SY_CLI_ERROR;
	}
	if (json)
		sy_buf_putc(&b, '[');
	sy_client_rc rc = sy_client_query(c, argv[0], params, on_query_row, &l, &err);
	sy_free(params);
	return listing_end(&b, json, rc, &err);
}

static int cmd_index(sy_client *c, int argc, char **argv)
{
	sy_client_error err = {0};
	char *cols = query_params(argc - 1, argv + 1);
	if (cols == NULL) {
		fprintf(stderr, "synchro-cli: out of memory\n");
		return SY_CLI_ERROR;
	}
	sy_client_rc rc = sy_client_index(c, argv[0], cols, &err);
	sy_free(cols);
	if (rc != SY_CLIENT_OK) {
		fprintf(stderr, "synchro-cli: %s\n", err.message);
		return sy_cli_exit(rc);
	}
	return 0;
}

static int cmd_verify(sy_client *c, bool json)
{
	sy_client_error err = {0};
	char *rep = NULL;
	sy_client_rc rc = sy_client_verify(c, &rep, &err);
	if (json) {
		sy_buf b = SY_BUF_INIT;
		bool f = true;
		sy_buf_putc(&b, '{');
		jraw(&b, &f, "ok", rc == SY_CLIENT_OK ? "true" : "false");
		jmember(&b, &f, "report", rep);
		sy_buf_puts(&b, "}\n");
		put(&b);
	} else if (rc == SY_CLIENT_OK) {
		puts("ok");
	} else {
		fprintf(stderr, "synchro-cli: %s\n%s", err.message, rep ? rep : "");
	}
	sy_free(rep);
	return sy_cli_exit(rc);
}

int sy_cli_read(sy_client *c, const char *cmd, int argc, char **argv, bool json)
{
	if (strcmp(cmd, "status") == 0 && argc == 0)
		return cmd_status(c, json);
	if (strcmp(cmd, "pending") == 0 && argc <= 1)
		return cmd_pending(c, argc == 1 && strcmp(argv[0], "--all") == 0, json);
	if ((strcmp(cmd, "show") == 0 || strcmp(cmd, "explain") == 0) && argc == 1)
		return cmd_show(c, argv[0], json, cmd[0] == 'e');
	if (strcmp(cmd, "batch") == 0 && (argc == 1 || (argc == 2 && !strcmp(argv[1], "--bytes"))))
		return cmd_batch(c, argv[0], argc == 2, json);
	if (strcmp(cmd, "rows") == 0 && argc == 1)
		return cmd_rows(c, argv[0], json);
	if (strcmp(cmd, "query") == 0 && argc >= 1)
		return cmd_query(c, argc, argv, json);
	if (strcmp(cmd, "index") == 0 && argc >= 2)
		return cmd_index(c, argc, argv);
	if (strcmp(cmd, "verify") == 0 && argc == 0)
		return cmd_verify(c, json);
	fprintf(stderr, "synchro-cli: unknown command or arguments: %s (see --help)\n", cmd);
	return SY_CLI_USAGE;
}
