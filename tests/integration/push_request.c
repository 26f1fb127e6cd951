/* SPDX-License-Identifier: BSD-2-Clause */
/* The push requests of the synchro_push suites and their outcomes (push_request.h). */
#include "config.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgtest.h"
#include "push_request.h"
#include "synchro/alloc.h"
#include "synchro/jcs.h"

void fresh(char out[SY_UUID_LEN + 1], char kind)
{
	serial++;
	snprintf(out, SY_UUID_LEN + 1, "%c%07lx-0000-4000-8000-%012lx", kind, serial & 0xfffffff,
	         serial);
}

void put_ref(sy_buf *b, const sy_schema_ref *r)
{
	sy_buf_printf(b, "{\"version\":%llu,\"hash\":\"%s\"}", (unsigned long long)r->version,
	              r->hash);
}

long long client_generation(const char *client)
{
	const char *p[] = {client};
	return pgt_int(db, "SELECT generation FROM synchro.clients WHERE client_id = $1", 1, p);
}

long long (*generation_of)(const char *client) = client_generation;

char *build(const rspec *rs, const mspec *ms, size_t n, char (*ids)[SY_UUID_LEN + 1])
{
	static const rspec none = {0};
	sy_buf b = SY_BUF_INIT;
	char batch[SY_UUID_LEN + 1];
	if (rs == NULL)
		rs = &none;
	const char *client = rs->client ? rs->client : CA1;
	if (rs->batch)
		snprintf(batch, sizeof batch, "%s", rs->batch);
	else
		fresh(batch, 'b');
	long long gen = rs->gen ? rs->gen : generation_of(client);
	sy_buf_printf(&b, "{\"client_id\":\"%s\",\"client_generation\":%lld,\"batch_id\":\"%s\",",
	              client, gen, batch);
	if (rs->atomic)
		sy_buf_puts(&b, "\"atomic\":true,");
	sy_buf_puts(&b, "\"schema\":");
	put_ref(&b, rs->schema ? rs->schema : &cur);
	sy_buf_puts(&b, ",\"mutations\":[");
	for (size_t i = 0; i < n; i++) {
		const mspec *m = &ms[i];
		char id[SY_UUID_LEN + 1];
		if (m->id)
			snprintf(id, sizeof id, "%s", m->id);
		else
			fresh(id, 'a');
		if (ids)
			memcpy(ids[i], id, sizeof id);
		sy_buf_printf(&b,
		              "%s{\"mutation_id\":\"%s\",\"table\":\"%s\",\"pk\":{\"field\":\"id\","
		              "\"value\":%s},\"authored_schema\":",
		              i ? "," : "", id, m->table, m->pk);
		put_ref(&b, m->authored ? m->authored : &cur);
		sy_buf_printf(&b,
		              ",\"operation\":\"%s\",\"client_version\":\"2026-01-02T03:04:05Z\"",
		              m->op);
		if (m->base)
			sy_buf_printf(&b, ",\"base_version\":\"%s\"", m->base);
		if (m->cols)
			sy_buf_printf(&b, ",\"columns\":%s", m->cols);
		sy_buf_putc(&b, '}');
	}
	sy_buf_puts(&b, "]}");
	CU_ASSERT_FATAL(!b.failed);
	size_t len;
	char *s = sy_buf_steal(&b, &len);
	char *out = strdup(s);
	sy_free(s);
	return out;
}

const sy_json *push_outcome(const sy_json_doc *doc, const char *id, bool *accepted)
{
	if (doc == NULL)
		return NULL;
	const char *arrays[] = {"accepted", "rejected"};
	for (int a = 0; a < 2; a++) {
		const sy_json *arr = sy_json_get(sy_json_doc_root(doc), arrays[a]);
		for (size_t i = 0; arr && i < arr->u.array.count; i++) {
			const sy_json *o = arr->u.array.items[i];
			const sy_json *m = sy_json_get(o, "mutation_id");
			if (m && strcmp(m->u.string.data, id) == 0) {
				if (accepted)
					*accepted = a == 0;
				return o;
			}
		}
	}
	return NULL;
}

const char *str(const sy_json *o, const char *key)
{
	const sy_json *v = o ? sy_json_get(o, key) : NULL;
	return v && v->type == SY_JSON_STRING ? v->u.string.data : NULL;
}

bool has(const sy_json *o, const char *key)
{
	return o != NULL && sy_json_get(o, key) != NULL;
}

const sy_json *check_at(const sy_json_doc *doc, const char *id, const char *status,
                        const char *code, bool version, bool row, const char *file, int line)
{
	const sy_json *o = push_outcome(doc, id, NULL);
	CU_ASSERT_PTR_NOT_NULL(o);
	if (o == NULL) {
		fprintf(stderr, "%s:%d: outcome %s missing\n", file, line, id);
		return NULL;
	}
	bool ok = str(o, "status") && strcmp(str(o, "status"), status) == 0 &&
	          (code ? str(o, "code") && strcmp(str(o, "code"), code) == 0 : !has(o, "code")) &&
	          has(o, "server_version") == version && has(o, "server_row") == row &&
	          has(o, "row_checksum") == row;
	CU_ASSERT_TRUE(ok);
	if (!ok) {
		sy_buf b = SY_BUF_INIT;
		sy_error e;
		if (sy_jcs_write(&b, o, &e))
			fprintf(stderr, "%s:%d: outcome %s: want %s/%s version=%d row=%d, got %s\n",
			        file, line, id, status, code ? code : "-", version, row, b.data);
		sy_buf_free(&b);
	}
	return o;
}

char *row_value(const sy_json *o, const char *field)
{
	const sy_json *row = o ? sy_json_get(o, "server_row") : NULL;
	const sy_json *v = row ? sy_json_get(row, field) : NULL;
	if (v == NULL)
		return strdup("<absent>");
	sy_buf b = SY_BUF_INIT;
	sy_error e;
	if (!sy_jcs_write(&b, v, &e)) {
		sy_buf_free(&b);
		return strdup("<error>");
	}
	size_t n;
	char *s = sy_buf_steal(&b, &n);
	char *out = strdup(s);
	sy_free(s);
	return out;
}

void check_row_value_at(const sy_json *o, const char *field, const char *want, const char *file,
                        int line)
{
	char *got = row_value(o, field);
	CU_ASSERT_STRING_EQUAL(got, want);
	if (strcmp(got, want) != 0)
		fprintf(stderr, "%s:%d: server_row.%s: want %s, got %s\n", file, line, field, want,
		        got);
	free(got);
}
