/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * manifest.c: schema manifests. It validates them strictly, writes their canonical bytes
 * and hash, and holds the historical compatibility rule.
 *
 * Layer: middle of src/core (doc/hacking.md).
 * Rules: doc/contract.md#schema-manifest (the manifest),
 * doc/contract.md#schema-hash (its hash).
 * Notes: The compatibility rule decides the schema_incompatible outcome.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/buf.h"
#include "synchro/jcs.h"
#include "synchro/json.h"
#include "synchro/manifest.h"
#include "synchro/octets.h"
#include "synchro/sha256.h"

#include "manifest_common.h"

/* Room for "tables[<size_t>]", and for that followed by ".fields[<size_t>]". */
#define TABLE_PATH_CAP 32
#define PATH_CAP       64
#define SHOW_CAP       SY_MF_SHOW_CAP

int sy_manifest_name_compare(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	int c = n ? memcmp(a, b, n) : 0;
	if (c != 0)
		return c;
	return alen < blen ? -1 : alen > blen;
}

/* The reader has validated the UTF-8, so C1 controls are exactly the pairs C2 80..C2 9F. */
bool sy_manifest_name_valid(const char *s, size_t len)
{
	if (len == 0 || len > SY_MANIFEST_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f)
			return false;
		if (c == 0xc2 && i + 1 < len && (unsigned char)s[i + 1] <= 0x9f)
			return false;
	}
	return true;
}

static bool get_bool(const sy_json *obj, const char *path, const char *name, bool *out,
                     sy_error *err)
{
	const sy_json *v = sy_json_get(obj, name);
	*out = false;
	if (v->type != SY_JSON_TRUE && v->type != SY_JSON_FALSE)
		return sy_mf_fail_at(err, path, name, "expected boolean, got %s",
		                     sy_json_type_name(v->type));
	*out = v->type == SY_JSON_TRUE;
	return true;
}

static bool get_id(const sy_json *obj, const char *path, const char *name, const char **s,
                   size_t *len, sy_error *err)
{
	char shown[SHOW_CAP];
	if (!sy_mf_get_string(obj, path, name, s, len, err))
		return false;
	if (!sy_manifest_name_valid(*s, *len))
		return sy_mf_fail_at(err, path, name,
		                     "invalid %s \"%s\" (1..63 bytes, no control characters)", name,
		                     sy_mf_show(shown, *s, *len));
	return true;
}

static bool parse_field(const sy_json *v, const char *path, bool is_pk, sy_field *f, sy_error *err)
{
	static const char *const names[] = {"field_id", "column", "type", "nullable", "writable"};
	char shown[SHOW_CAP];
	const char *id, *column, *type;
	size_t id_len, column_len, type_len;

	if (!sy_mf_check_members(v, path, names, NULL, is_pk ? 3 : 5, err))
		return false;
	if (!get_id(v, path, "field_id", &id, &id_len, err) ||
	    !sy_mf_get_sql_name(v, path, "column", &column, &column_len, err) ||
	    !sy_mf_get_string(v, path, "type", &type, &type_len, err))
		return false;
	/* A name holding U+0000 would otherwise look like its prefix to sy_type_from_name. */
	if (strlen(type) != type_len || !sy_type_from_name(type, &f->type))
		return sy_mf_fail_at(err, path, "type", "unknown type \"%s\"",
		                     sy_mf_show(shown, type, type_len));
	if (is_pk) {
		if (!sy_mf_key_type(f->type))
			return sy_mf_fail_at(
			        err, path, "type",
			        "type \"%s\" cannot be a primary key (uuid, int64, int32, text)",
			        type);
		f->nullable = false;
		f->writable = false;
	} else if (!get_bool(v, path, "nullable", &f->nullable, err) ||
	           !get_bool(v, path, "writable", &f->writable, err)) {
		return false;
	}
	f->field_id = sy_strndup(id, id_len);
	f->column = sy_strndup(column, column_len);
	if (f->field_id == NULL || f->column == NULL)
		return sy_mf_nomem(err);
	return true;
}

static void field_clear(sy_field *f)
{
	sy_free(f->field_id);
	sy_free(f->column);
}

static bool parse_delete(const sy_json *v, const char *table_path, sy_table *t, sy_error *err)
{
	static const char *const names[] = {"mode", "column"};
	static const bool optional[] = {false, true};
	char path[PATH_CAP], shown[SHOW_CAP];
	const char *mode, *column;
	size_t mode_len, column_len;

	snprintf(path, sizeof path, "%s.delete", table_path);
	if (!sy_mf_check_members(v, path, names, optional, 2, err) ||
	    !sy_mf_get_string(v, path, "mode", &mode, &mode_len, err))
		return false;
	bool has_column = sy_json_get(v, "column") != NULL;
	if (sy_mf_bytes_equal(mode, mode_len, "hard", 4)) {
		t->delete_mode = SY_DELETE_HARD;
		if (has_column)
			return sy_mf_fail_at(err, path, "column",
			                     "only allowed when mode is \"soft\"");
		return true;
	}
	if (!sy_mf_bytes_equal(mode, mode_len, "soft", 4))
		return sy_mf_fail_at(err, path, "mode", "unknown mode \"%s\" (hard, soft)",
		                     sy_mf_show(shown, mode, mode_len));
	t->delete_mode = SY_DELETE_SOFT;
	if (!has_column)
		return sy_mf_fail_at(err, path, "column", "required when mode is \"soft\"");
	if (!sy_mf_get_sql_name(v, path, "column", &column, &column_len, err))
		return false;
	t->delete_column = sy_strndup(column, column_len);
	return t->delete_column != NULL || sy_mf_nomem(err);
}

/* Field ids and columns are unique within a table, the pk's included. */
static bool check_field_unique(const sy_table *t, size_t i, const char *path, sy_error *err)
{
	char shown[SHOW_CAP];
	const sy_field *f = &t->fields[i];
	bool id_dup = strcmp(f->field_id, t->pk.field_id) == 0;
	bool col_dup = strcmp(f->column, t->pk.column) == 0;
	for (size_t j = 0; j < i; j++) {
		id_dup = id_dup || strcmp(f->field_id, t->fields[j].field_id) == 0;
		col_dup = col_dup || strcmp(f->column, t->fields[j].column) == 0;
	}
	if (id_dup)
		return sy_mf_fail_at(err, path, "field_id", "duplicate field_id \"%s\"",
		                     sy_mf_show(shown, f->field_id, strlen(f->field_id)));
	if (col_dup)
		return sy_mf_fail_at(err, path, "column", "duplicate column \"%s\"",
		                     sy_mf_show(shown, f->column, strlen(f->column)));
	return true;
}

static bool check_soft_delete(const sy_table *t, const char *path, sy_error *err)
{
	char fpath[PATH_CAP], shown[SHOW_CAP];
	const char *col = t->delete_column;
	if (strcmp(col, t->pk.column) == 0)
		return sy_mf_fail_at(err, path, "delete.column", "\"%s\" is the primary key column",
		                     sy_mf_show(shown, col, strlen(col)));
	for (size_t i = 0; i < t->field_count; i++) {
		const sy_field *f = &t->fields[i];
		if (strcmp(f->column, col) != 0)
			continue;
		snprintf(fpath, sizeof fpath, "%s.fields[%zu]", path, i);
		/* Non-null means deleted, so live rows need the null. */
		if (f->type != SY_TYPE_TIMESTAMP)
			return sy_mf_fail_at(
			        err, fpath, "type",
			        "maps the soft-delete column \"%s\" and must be timestamp",
			        sy_mf_show(shown, col, strlen(col)));
		if (!f->nullable)
			return sy_mf_fail_at(
			        err, fpath, "nullable",
			        "maps the soft-delete column \"%s\" and must be nullable",
			        sy_mf_show(shown, col, strlen(col)));
	}
	return true;
}

static void table_clear(sy_table *t)
{
	sy_free(t->table_id);
	sy_free(t->relation);
	field_clear(&t->pk);
	for (size_t i = 0; i < t->field_count; i++)
		field_clear(&t->fields[i]);
	sy_free(t->fields);
	sy_free(t->delete_column);
	sy_mf_members_free(t->members);
}

static bool parse_table(const sy_json *v, const char *path, sy_table *t, sy_error *err)
{
	static const char *const names[] = {"table_id", "relation", "pk",
	                                    "fields",   "delete",   "policy"};
	char sub[PATH_CAP], shown[SHOW_CAP];
	const char *id, *relation;
	size_t id_len, relation_len;

	if (!sy_mf_check_members(v, path, names, NULL, 6, err) ||
	    !get_id(v, path, "table_id", &id, &id_len, err) ||
	    !sy_mf_get_string(v, path, "relation", &relation, &relation_len, err))
		return false;
	if (!sy_mf_relation_valid(relation, relation_len))
		return sy_mf_fail_at(err, path, "relation",
		                     "invalid relation \"%s\" (name or schema.name, lowercase SQL "
		                     "identifiers)",
		                     sy_mf_show(shown, relation, relation_len));
	t->table_id = sy_strndup(id, id_len);
	t->relation = sy_strndup(relation, relation_len);
	if (t->table_id == NULL || t->relation == NULL)
		return sy_mf_nomem(err);

	snprintf(sub, sizeof sub, "%s.pk", path);
	if (!parse_field(sy_json_get(v, "pk"), sub, true, &t->pk, err))
		return false;

	const sy_json *fields = sy_json_get(v, "fields");
	if (fields->type != SY_JSON_ARRAY)
		return sy_mf_fail_at(err, path, "fields", "expected array, got %s",
		                     sy_json_type_name(fields->type));
	size_t n = fields->u.array.count;
	if (n > 0) {
		t->fields = sy_calloc(n, sizeof *t->fields);
		if (t->fields == NULL)
			return sy_mf_nomem(err);
	}
	for (size_t i = 0; i < n; i++) {
		snprintf(sub, sizeof sub, "%s.fields[%zu]", path, i);
		/* Counted first so table_clear() frees a partly filled entry. */
		t->field_count = i + 1;
		if (!parse_field(fields->u.array.items[i], sub, false, &t->fields[i], err) ||
		    !check_field_unique(t, i, sub, err))
			return false;
	}

	if (!parse_delete(sy_json_get(v, "delete"), path, t, err))
		return false;
	if (t->delete_mode == SY_DELETE_SOFT && !check_soft_delete(t, path, err))
		return false;
	return sy_mf_parse_policy(sy_json_get(v, "policy"), path, t, err);
}

/* Hash and canonical bytes: SHA-256(domain 0x00 JCS(manifest)). */
static bool seal(sy_manifest *m, const sy_json *root, sy_error *err)
{
	static const char domain[] = SY_MANIFEST_HASH_DOMAIN;
	uint8_t md[SY_SHA256_LEN];
	sy_buf b = SY_BUF_INIT;

	/* sizeof includes the NUL: exactly the 0x00 separator. */
	if (!sy_buf_append(&b, domain, sizeof domain))
		goto nomem;
	if (!sy_jcs_write(&b, root, err))
		goto fail;
	if (!sy_sha256(b.data, b.len, md))
		goto nomem;
	sy_hex_encode(m->hash, md, sizeof md);
	m->hash[SY_HASH_HEX_LEN] = '\0';
	size_t total;
	char *data = sy_buf_steal(&b, &total);
	if (data == NULL)
		goto nomem;
	m->canonical_len = total - sizeof domain;
	memmove(data, data + sizeof domain, m->canonical_len + 1);
	m->canonical = data;
	return true;
nomem:
	sy_mf_nomem(err);
fail:
	sy_buf_free(&b);
	return false;
}

sy_manifest *sy_manifest_parse_json(const sy_json *root, sy_error *err)
{
	static const char *const names[] = {"tables"};
	char path[TABLE_PATH_CAP], shown[SHOW_CAP];
	sy_manifest *m = NULL;

	if (!sy_mf_check_members(root, "manifest", names, NULL, 1, err))
		goto fail;
	const sy_json *tables = sy_json_get(root, "tables");
	if (tables->type != SY_JSON_ARRAY) {
		sy_mf_fail_at(err, "tables", NULL, "expected array, got %s",
		              sy_json_type_name(tables->type));
		goto fail;
	}
	size_t n = tables->u.array.count;
	if (n == 0) {
		sy_mf_fail_at(err, "tables", NULL, "must not be empty");
		goto fail;
	}
	m = sy_calloc(1, sizeof *m);
	if (m == NULL || (m->tables = sy_calloc(n, sizeof *m->tables)) == NULL) {
		sy_mf_nomem(err);
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof path, "tables[%zu]", i);
		m->table_count = i + 1;
		sy_table *t = &m->tables[i];
		if (!parse_table(tables->u.array.items[i], path, t, err))
			goto fail;
		for (size_t j = 0; j < i; j++) {
			if (strcmp(t->table_id, m->tables[j].table_id) == 0) {
				sy_mf_fail_at(err, path, "table_id", "duplicate table_id \"%s\"",
				              sy_mf_show(shown, t->table_id, strlen(t->table_id)));
				goto fail;
			}
			/* One trigger per relation reports one table's changes. */
			if (strcmp(t->relation, m->tables[j].relation) == 0) {
				sy_mf_fail_at(err, path, "relation", "duplicate relation \"%s\"",
				              sy_mf_show(shown, t->relation, strlen(t->relation)));
				goto fail;
			}
		}
	}
	if (!seal(m, root, err))
		goto fail;
	return m;
fail:
	sy_manifest_free(m);
	return NULL;
}

sy_manifest *sy_manifest_parse(const char *text, size_t len, sy_error *err)
{
	sy_json_doc *doc = sy_json_parse(text, len, err);
	if (doc == NULL)
		return NULL;
	sy_manifest *m = sy_manifest_parse_json(sy_json_doc_root(doc), err);
	sy_json_doc_free(doc);
	return m;
}

void sy_manifest_free(sy_manifest *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->table_count; i++)
		table_clear(&m->tables[i]);
	sy_free(m->tables);
	sy_free(m->canonical);
	sy_free(m);
}

const sy_table *sy_manifest_table(const sy_manifest *m, const char *table_id, size_t len)
{
	if (m == NULL)
		return NULL;
	for (size_t i = 0; i < m->table_count; i++) {
		const sy_table *t = &m->tables[i];
		if (sy_mf_bytes_equal(t->table_id, strlen(t->table_id), table_id, len))
			return t;
	}
	return NULL;
}

const sy_field *sy_table_field(const sy_table *t, const char *field_id, size_t len)
{
	for (size_t i = 0; i < t->field_count; i++) {
		const sy_field *f = &t->fields[i];
		if (sy_mf_bytes_equal(f->field_id, strlen(f->field_id), field_id, len))
			return f;
	}
	return NULL;
}

const sy_field *sy_table_field_by_column(const sy_table *t, const char *column, size_t len)
{
	for (size_t i = 0; i < t->field_count; i++) {
		const sy_field *f = &t->fields[i];
		if (sy_mf_bytes_equal(f->column, strlen(f->column), column, len))
			return f;
	}
	return NULL;
}

bool sy_field_writable(const sy_table *t, const sy_field *f)
{
	if (f == &t->pk || !f->writable)
		return false;
	if (t->owner_field != NULL && strcmp(f->field_id, t->owner_field) == 0)
		return false;
	if (t->delete_mode == SY_DELETE_SOFT && strcmp(f->column, t->delete_column) == 0)
		return false;
	return true;
}

/* Any field of t, the pk included. */
static const sy_field *any_field(const sy_table *t, const char *field_id, size_t len)
{
	if (sy_mf_bytes_equal(t->pk.field_id, strlen(t->pk.field_id), field_id, len))
		return &t->pk;
	return sy_table_field(t, field_id, len);
}

static bool field_compatible(const sy_table *authored, const sy_table *current, const char *id,
                             size_t len)
{
	const sy_field *cf = current != NULL ? any_field(current, id, len) : NULL;
	if (cf == NULL)
		return false;
	const sy_field *af = authored != NULL ? any_field(authored, id, len) : NULL;
	return af == NULL || af->type == cf->type;
}

typedef struct {
	const char *const *ids;
	const size_t *lens;
} id_list;

/* Total order on indexes: their ids' bytes, then the index itself. */
static int index_compare(const id_list *l, size_t a, size_t b)
{
	int c = sy_manifest_name_compare(l->ids[a], l->lens[a], l->ids[b], l->lens[b]);
	if (c != 0)
		return c;
	return a < b ? -1 : a > b;
}

static void sift_down(const id_list *l, size_t *v, size_t root, size_t n)
{
	for (;;) {
		size_t child = 2 * root + 1;
		if (child >= n)
			return;
		if (child + 1 < n && index_compare(l, v[child], v[child + 1]) < 0)
			child++;
		if (index_compare(l, v[root], v[child]) >= 0)
			return;
		size_t tmp = v[root];
		v[root] = v[child];
		v[child] = tmp;
		root = child;
	}
}

/* Heapsort: no allocation, and qsort() has no context argument in C11. */
static void sort_indexes(const id_list *l, size_t *v, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		sift_down(l, v, i, n);
	for (size_t end = n; end-- > 1;) {
		size_t tmp = v[0];
		v[0] = v[end];
		v[end] = tmp;
		sift_down(l, v, 0, end);
	}
}

bool sy_manifest_incompatible_indexes(const sy_manifest *authored, const sy_manifest *current,
                                      const char *table_id, size_t table_len,
                                      const char *const *field_ids, const size_t *field_lens,
                                      size_t count, size_t **out_idx, size_t *out_count,
                                      sy_error *err)
{
	const sy_table *cur = sy_manifest_table(current, table_id, table_len);
	const sy_table *auth = sy_manifest_table(authored, table_id, table_len);
	id_list l = {field_ids, field_lens};
	size_t *v = NULL, n = 0;

	*out_idx = NULL;
	*out_count = 0;
	for (size_t i = 0; i < count; i++) {
		if (field_compatible(auth, cur, field_ids[i], field_lens[i]))
			continue;
		if (v == NULL && (v = sy_calloc(count, sizeof *v)) == NULL)
			return sy_mf_nomem(err);
		v[n++] = i;
	}
	if (n == 0)
		return true;
	sort_indexes(&l, v, n);
	size_t kept = 1;
	for (size_t i = 1; i < n; i++) {
		const size_t a = v[kept - 1], b = v[i];
		if (!sy_mf_bytes_equal(field_ids[a], field_lens[a], field_ids[b], field_lens[b]))
			v[kept++] = b;
	}
	*out_idx = v;
	*out_count = kept;
	return true;
}

bool sy_manifest_incompatible_fields(const sy_manifest *authored, const sy_manifest *current,
                                     const char *table_id, size_t table_len,
                                     const char *const *field_ids, const size_t *field_lens,
                                     size_t count, char ***out_ids, size_t *out_count,
                                     sy_error *err)
{
	size_t *idx = NULL, n = 0;
	char **ids = NULL;

	*out_ids = NULL;
	*out_count = 0;
	if (!sy_manifest_incompatible_indexes(authored, current, table_id, table_len, field_ids,
	                                      field_lens, count, &idx, &n, err))
		return false;
	if (n == 0)
		return true;
	ids = sy_calloc(n, sizeof *ids);
	if (ids == NULL)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		ids[i] = sy_strndup(field_ids[idx[i]], field_lens[idx[i]]);
		if (ids[i] == NULL)
			goto fail;
	}
	sy_free(idx);
	*out_ids = ids;
	*out_count = n;
	return true;
fail:
	sy_manifest_free_ids(ids, ids != NULL ? n : 0);
	sy_free(idx);
	return sy_mf_nomem(err);
}

void sy_manifest_free_ids(char **ids, size_t n)
{
	if (ids == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		sy_free(ids[i]);
	sy_free(ids);
}
