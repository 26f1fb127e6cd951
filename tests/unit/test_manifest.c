/* SPDX-License-Identifier: BSD-2-Clause */
/* Schema manifests: the example vectors, hash, every validation error, compatibility. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/json.h"
#include "synchro/manifest.h"
#include "testutil.h"

/* Computed outside the code under test: see tests/vectors/manifests/README. */
#define EXAMPLE_HASH "7c5eca6d50e864230462d4b2bfa1714322ae2a878355de61ce58f1f33b90d2ae"
#define INTL_HASH    "59dc1ef1c2ad30edca921332886a599948069290fa03d19c1e5a67eefb4e8422"

static char *read_vector(const char *name, size_t *len)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/tests/vectors/manifests/%s", sy_test_src_dir(), name);
	char *text = sy_test_read_file(path, len);
	if (text == NULL)
		fprintf(stderr, "cannot read %s\n", path);
	return text;
}

static sy_manifest *parse_vector(const char *name)
{
	size_t len;
	char *text = read_vector(name, &len);
	if (text == NULL)
		return NULL;
	sy_error err;
	sy_error_clear(&err);
	sy_manifest *m = sy_manifest_parse(text, len, &err);
	if (m == NULL)
		fprintf(stderr, "%s: %s\n", name, err.message);
	free(text);
	return m;
}

/* Test JSON is written with ' for " to stay readable; no case needs a real apostrophe. */
static char *dq(const char *s)
{
	char *d = strdup(s);
	for (char *p = d; p != NULL && *p != '\0'; p++)
		if (*p == '\'')
			*p = '"';
	return d;
}

static sy_manifest *parse_dq(const char *s, sy_error *err)
{
	char *text = dq(s);
	sy_manifest *m = sy_manifest_parse(text, strlen(text), err);
	free(text);
	return m;
}

static void check_field(const sy_field *f, const char *id, const char *column, sy_type type,
                        bool nullable, bool writable)
{
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_STRING_EQUAL(f->field_id, id);
	CU_ASSERT_STRING_EQUAL(f->column, column);
	CU_ASSERT_EQUAL(f->type, type);
	CU_ASSERT_EQUAL(f->nullable, nullable);
	CU_ASSERT_EQUAL(f->writable, writable);
}

static void test_example(void)
{
	sy_manifest *m = parse_vector("example.json");
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	CU_ASSERT_STRING_EQUAL(m->hash, EXAMPLE_HASH);
	size_t jcs_len;
	char *jcs = read_vector("example.jcs", &jcs_len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(jcs);
	CU_ASSERT_EQUAL(m->canonical_len, jcs_len);
	CU_ASSERT_EQUAL(m->canonical_len, strlen(m->canonical));
	CU_ASSERT(m->canonical_len == jcs_len && memcmp(m->canonical, jcs, jcs_len) == 0);
	free(jcs);

	CU_ASSERT_EQUAL_FATAL(m->table_count, 5);
	const sy_table *todo = &m->tables[0], *item = &m->tables[1];
	CU_ASSERT_PTR_EQUAL(sy_manifest_table(m, "todo", 4), todo);
	CU_ASSERT_PTR_EQUAL(sy_manifest_table(m, "item", 4), item);
	CU_ASSERT_PTR_NULL(sy_manifest_table(m, "ite", 3));
	CU_ASSERT_PTR_NULL(sy_manifest_table(m, "todo\0", 5));
	CU_ASSERT_PTR_NULL(sy_manifest_table(NULL, "todo", 4));

	CU_ASSERT_STRING_EQUAL(todo->table_id, "todo");
	CU_ASSERT_STRING_EQUAL(todo->relation, "public.todo");
	check_field(&todo->pk, "id", "id", SY_TYPE_UUID, false, false);
	CU_ASSERT_EQUAL_FATAL(todo->field_count, 5);
	check_field(&todo->fields[0], "title", "title", SY_TYPE_TEXT, false, true);
	check_field(&todo->fields[1], "done", "done", SY_TYPE_BOOL, false, true);
	check_field(&todo->fields[2], "note", "note", SY_TYPE_TEXT, true, true);
	check_field(&todo->fields[3], "owner", "owner", SY_TYPE_TEXT, false, false);
	check_field(&todo->fields[4], "list_id", "list_id", SY_TYPE_UUID, true, true);
	CU_ASSERT_EQUAL(todo->delete_mode, SY_DELETE_HARD);
	CU_ASSERT_PTR_NULL(todo->delete_column);
	CU_ASSERT_STRING_EQUAL(todo->owner_field, "owner");
	CU_ASSERT_EQUAL(todo->read, SY_POLICY_MEMBERS);
	CU_ASSERT_EQUAL(todo->write, SY_POLICY_MEMBERS);
	CU_ASSERT_PTR_NOT_NULL_FATAL(todo->members);
	CU_ASSERT_EQUAL(todo->members->hop_count, 1);
	CU_ASSERT_STRING_EQUAL(todo->members->relation, "list_member");

	CU_ASSERT_STRING_EQUAL(item->relation, "public.item");
	check_field(&item->pk, "id", "id", SY_TYPE_INT64, false, false);
	CU_ASSERT_EQUAL_FATAL(item->field_count, 10);
	static const struct {
		const char *id;
		sy_type type;
	} item_fields[] = {
	        {"label", SY_TYPE_TEXT},    {"qty", SY_TYPE_INT32},
	        {"price", SY_TYPE_NUMERIC}, {"weight", SY_TYPE_FLOAT64},
	        {"due", SY_TYPE_DATE},      {"seen_at", SY_TYPE_TIMESTAMP},
	        {"tags", SY_TYPE_JSON},     {"blob", SY_TYPE_BYTES},
	        {"ref", SY_TYPE_UUID},      {"deleted_at", SY_TYPE_TIMESTAMP},
	};
	for (size_t i = 0; i < 10; i++)
		check_field(&item->fields[i], item_fields[i].id, item_fields[i].id,
		            item_fields[i].type, true, i != 9);
	CU_ASSERT_EQUAL(item->delete_mode, SY_DELETE_SOFT);
	CU_ASSERT_STRING_EQUAL(item->delete_column, "deleted_at");
	CU_ASSERT_PTR_NULL(item->owner_field);
	CU_ASSERT_EQUAL(item->read, SY_POLICY_ALL);
	CU_ASSERT_EQUAL(item->write, SY_POLICY_ALL);

	CU_ASSERT_PTR_EQUAL(sy_table_field(todo, "note", 4), &todo->fields[2]);
	CU_ASSERT_PTR_NULL(sy_table_field(todo, "id", 2)); /* the pk is not a "field" */
	CU_ASSERT_PTR_NULL(sy_table_field(todo, "notes", 5));
	CU_ASSERT_PTR_EQUAL(sy_table_field_by_column(item, "deleted_at", 10), &item->fields[9]);
	CU_ASSERT_PTR_NULL(sy_table_field_by_column(item, "id", 2));

	CU_ASSERT_TRUE(sy_field_writable(todo, &todo->fields[0]));
	CU_ASSERT_TRUE(sy_field_writable(todo, &todo->fields[2]));
	CU_ASSERT_FALSE(sy_field_writable(todo, &todo->fields[3]));
	CU_ASSERT_FALSE(sy_field_writable(todo, &todo->pk));
	CU_ASSERT_TRUE(sy_field_writable(item, &item->fields[8]));
	CU_ASSERT_FALSE(sy_field_writable(item, &item->fields[9]));
	sy_manifest_free(m);
	sy_manifest_free(NULL);
}

/* Member order, whitespace, line ends and \u escapes do not change the bytes or the hash. */
static void test_hash_stable(void)
{
	static const struct {
		const char *file, *jcs, *hash;
	} forms[] = {
	        {"example.json", "example.jcs", EXAMPLE_HASH},
	        {"example-reordered.json", "example.jcs", EXAMPLE_HASH},
	        {"example.jcs", "example.jcs", EXAMPLE_HASH},
	        {"intl.json", "intl.jcs", INTL_HASH},
	        {"intl-escaped.json", "intl.jcs", INTL_HASH},
	        {"intl.jcs", "intl.jcs", INTL_HASH},
	};
	for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
		sy_manifest *m = parse_vector(forms[i].file);
		CU_ASSERT_PTR_NOT_NULL_FATAL(m);
		size_t len;
		char *jcs = read_vector(forms[i].jcs, &len);
		CU_ASSERT_PTR_NOT_NULL_FATAL(jcs);
		CU_ASSERT(m->canonical_len == len && memcmp(m->canonical, jcs, len) == 0);
		CU_ASSERT_STRING_EQUAL(m->hash, forms[i].hash);
		free(jcs);
		sy_manifest_free(m);
	}
}

static void test_intl(void)
{
	sy_manifest *m = parse_vector("intl.json");
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	const sy_table *t = sy_manifest_table(m, "notes", 5);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_STRING_EQUAL(t->relation, "notes");
	check_field(&t->pk, "\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87", "id", SY_TYPE_TEXT, false, false);
	CU_ASSERT_EQUAL_FATAL(t->field_count, 5);
	check_field(sy_table_field(t, "\xf0\x9f\x98\x80", 4), "\xf0\x9f\x98\x80", "smile",
	            SY_TYPE_TEXT, true, true);
	check_field(sy_table_field(t, "\xef\xbc\xa1", 3), "\xef\xbc\xa1", "a_full", SY_TYPE_INT32,
	            false, true);
	CU_ASSERT_EQUAL(t->delete_mode, SY_DELETE_SOFT);
	CU_ASSERT_STRING_EQUAL(t->delete_column, "gone_at");
	CU_ASSERT_PTR_NULL(sy_table_field_by_column(t, "gone_at", 7));
	CU_ASSERT_EQUAL(t->read, SY_POLICY_ALL);
	CU_ASSERT_EQUAL(t->write, SY_POLICY_OWNER);
	/* Declared writable, but the owner field is server-set. */
	const sy_field *owner = sy_table_field(t, "owner", 5);
	CU_ASSERT_PTR_NOT_NULL_FATAL(owner);
	CU_ASSERT_TRUE(owner->writable);
	CU_ASSERT_FALSE(sy_field_writable(t, owner));
	CU_ASSERT_PTR_EQUAL(t->owner_field, owner->field_id);
	CU_ASSERT_TRUE(sy_field_writable(t, sy_table_field(t, "a", 1)));
	sy_manifest_free(m);
}

#define PK   "'pk':{'field_id':'id','column':'id','type':'uuid'}"
#define HARD "'delete':{'mode':'hard'}"
#define ALL  "'policy':{'read':'all','write':'all'}"
#define TABLE(fields, del, pol)                                                                    \
	"{'table_id':'t','relation':'t'," PK ",'fields':[" fields "]," del "," pol "}"
#define MANIFEST(table) "{'tables':[" table "]}"
#define FIELD(id, col, type, n, w)                                                                 \
	"{'field_id':'" id "','column':'" col "','type':'" type "','nullable':" n ",'writable':" w \
	"}"
#define X10 "xxxxxxxxxx"
#define X40 X10 X10 X10 X10
#define X63 X40 X10 X10 "xxx"

/* Edge cases that are valid. */
static void test_valid_edges(void)
{
	static const char *const ok[] = {
	        MANIFEST(TABLE("", HARD, ALL)),
	        MANIFEST("{'table_id':'" X63 "','relation':'" X63 "." X63 "',"
	                 "'pk':{'field_id':'" X63 "','column':'" X63 "','type':'int32'},"
	                 "'fields':[]," HARD "," ALL "}"),
	        MANIFEST("{'table_id':'t','relation':'_s$1._r9','pk':{'field_id':'k',"
	                 "'column':'id','type':'text'},'fields':[" FIELD(
	                         "a b.c[0]", "a$1", "json", "true",
	                         "false") "]," HARD ",'policy':{'read':'all','write':'none'}}"),
	        /* A soft-delete column no field maps; an owner field that is nullable. */
	        MANIFEST(TABLE(FIELD("o", "o", "text", "true", "true"),
	                       "'delete':{'mode':'soft','column':'gone'}",
	                       "'policy':{'read':'owner','write':'none','owner_field':'o'}")),
	        /* Two tables on one relation name in different schemas. */
	        "{'tables':[{'table_id':'a','relation':'s1.t'," PK ",'fields':[]," HARD "," ALL "},"
	        "{'table_id':'b','relation':'s2.t'," PK ",'fields':[]," HARD "," ALL "}]}",
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		sy_error err;
		sy_error_clear(&err);
		sy_manifest *m = parse_dq(ok[i], &err);
		if (m == NULL)
			fprintf(stderr, "valid case %zu refused: %s\n", i, err.message);
		CU_ASSERT_PTR_NOT_NULL(m);
		CU_ASSERT_EQUAL(err.code, SY_ERR_NONE);
		sy_manifest_free(m);
	}
}

static void test_invalid(void)
{
	static const struct {
		const char *json, *message;
	} cases[] = {
	        {"[]", "manifest: expected object, got array"},
	        {"{}", "manifest: missing member 'tables'"},
	        {"{'tables':[],'x':1}", "manifest: unknown member 'x'"},
	        {"{'tables':{}}", "tables: expected array, got object"},
	        {"{'tables':[]}", "tables: must not be empty"},
	        {"{'tables':[1]}", "tables[0]: expected object, got number"},
	        {MANIFEST("{'table_id':'t','relation':'t'," PK ",'fields':[]," HARD "}"),
	         "tables[0]: missing member 'policy'"},
	        {MANIFEST("{'version':1,'table_id':'t','relation':'t'," PK ",'fields':[]," HARD
	                  "," ALL "}"),
	         "tables[0]: unknown member 'version'"},
	        {MANIFEST("{'table_id':'','relation':'t'," PK ",'fields':[]," HARD "," ALL "}"),
	         "tables[0].table_id: invalid table_id '' (1..63 bytes, no control characters)"},
	        {MANIFEST("{'table_id':'" X63 "x','relation':'t'," PK ",'fields':[]," HARD "," ALL
	                  "}"),
	         "tables[0].table_id: invalid table_id '" X40
	         "...' (1..63 bytes, no control characters)"},
	        {MANIFEST("{'table_id':'a\\u0007b','relation':'t'," PK ",'fields':[]," HARD "," ALL
	                  "}"),
	         "tables[0].table_id: invalid table_id 'a?b' (1..63 bytes, no control characters)"},
	        {MANIFEST("{'table_id':'a\\u0085','relation':'t'," PK ",'fields':[]," HARD "," ALL
	                  "}"),
	         "tables[0].table_id: invalid table_id 'a\xc2\x85' (1..63 bytes, no control "
	         "characters)"},
	        {MANIFEST("{'table_id':7,'relation':'t'," PK ",'fields':[]," HARD "," ALL "}"),
	         "tables[0].table_id: expected string, got number"},
	        {MANIFEST("{'table_id':'t','relation':'Public.todo'," PK ",'fields':[]," HARD
	                  "," ALL "}"),
	         "tables[0].relation: invalid relation 'Public.todo' (name or schema.name, "
	         "lowercase "
	         "SQL identifiers)"},
	        {MANIFEST("{'table_id':'t','relation':'a.b.c'," PK ",'fields':[]," HARD "," ALL
	                  "}"),
	         "tables[0].relation: invalid relation 'a.b.c' (name or schema.name, lowercase SQL "
	         "identifiers)"},
	        {MANIFEST("{'table_id':'t','relation':'public.'," PK ",'fields':[]," HARD "," ALL
	                  "}"),
	         "tables[0].relation: invalid relation 'public.' (name or schema.name, lowercase "
	         "SQL "
	         "identifiers)"},
	        {MANIFEST("{'table_id':'t','relation':'$t'," PK ",'fields':[]," HARD "," ALL "}"),
	         "tables[0].relation: invalid relation '$t' (name or schema.name, lowercase SQL "
	         "identifiers)"},
	        {MANIFEST("{'table_id':'t','relation':'" X63 "x'," PK ",'fields':[]," HARD "," ALL
	                  "}"),
	         "tables[0].relation: invalid relation '" X40
	         "...' (name or schema.name, lowercase SQL identifiers)"},
	        {MANIFEST("{'table_id':'t','relation':'t','pk':{'field_id':'id','column':'id'},"
	                  "'fields':[]," HARD "," ALL "}"),
	         "tables[0].pk: missing member 'type'"},
	        {MANIFEST("{'table_id':'t','relation':'t','pk':{'field_id':'id','column':'id','"
	                  "type':"
	                  "'uuid','nullable':false},'fields':[]," HARD "," ALL "}"),
	         "tables[0].pk: unknown member 'nullable'"},
	        {MANIFEST("{'table_id':'t','relation':'t','pk':{'field_id':'id','column':'id','"
	                  "type':"
	                  "'float64'},'fields':[]," HARD "," ALL "}"),
	         "tables[0].pk.type: type 'float64' cannot be a primary key (uuid, int64, int32, "
	         "text)"},
	        {MANIFEST("{'table_id':'t','relation':'t','pk':{'field_id':'id','column':'id','"
	                  "type':"
	                  "'int'},'fields':[]," HARD "," ALL "}"),
	         "tables[0].pk.type: unknown type 'int'"},
	        {MANIFEST("{'table_id':'t','relation':'t','pk':[],'fields':[]," HARD "," ALL "}"),
	         "tables[0].pk: expected object, got array"},
	        {"{'tables':[" TABLE("", HARD, ALL) ",{'table_id':'u','relation':'u'," PK
	                                            ",'fields':[" FIELD("f", "f", "int", "true",
	                                                                "true") "]," HARD "," ALL
	                                                                        "}]}",
	         "tables[1].fields[0].type: unknown type 'int'"},
	        {MANIFEST(TABLE(FIELD("f", "f", "text\\u0000", "true", "true"), HARD, ALL)),
	         "tables[0].fields[0].type: unknown type 'text?'"},
	        {MANIFEST(TABLE(FIELD("f", "f", "Text", "true", "true"), HARD, ALL)),
	         "tables[0].fields[0].type: unknown type 'Text'"},
	        {MANIFEST("{'table_id':'t','relation':'t'," PK ",'fields':{}," HARD "," ALL "}"),
	         "tables[0].fields: expected array, got object"},
	        {MANIFEST(TABLE("null", HARD, ALL)),
	         "tables[0].fields[0]: expected object, got null"},
	        {MANIFEST(TABLE(FIELD("f", "f", "text", "'yes'", "true"), HARD, ALL)),
	         "tables[0].fields[0].nullable: expected boolean, got string"},
	        {MANIFEST(TABLE(FIELD("f", "f", "text", "true", "null"), HARD, ALL)),
	         "tables[0].fields[0].writable: expected boolean, got null"},
	        {MANIFEST(TABLE("{'field_id':'f','column':'f','type':'text','nullable':true}", HARD,
	                        ALL)),
	         "tables[0].fields[0]: missing member 'writable'"},
	        {MANIFEST(TABLE(FIELD("f", "Title", "text", "true", "true"), HARD, ALL)),
	         "tables[0].fields[0].column: invalid column 'Title' (lowercase SQL identifier, at "
	         "most "
	         "63 bytes)"},
	        {MANIFEST(TABLE(FIELD("f", "my col", "text", "true", "true"), HARD, ALL)),
	         "tables[0].fields[0].column: invalid column 'my col' (lowercase SQL identifier, "
	         "at "
	         "most 63 bytes)"},
	        {MANIFEST(TABLE(FIELD("f", X63 "x", "text", "true", "true"), HARD, ALL)),
	         "tables[0].fields[0].column: invalid column '" X40
	         "...' (lowercase SQL identifier, at most 63 bytes)"},
	        {MANIFEST(TABLE(FIELD("", "f", "text", "true", "true"), HARD, ALL)),
	         "tables[0].fields[0].field_id: invalid field_id '' (1..63 bytes, no control "
	         "characters)"},
	        {MANIFEST(TABLE(FIELD("id", "f", "text", "true", "true"), HARD, ALL)),
	         "tables[0].fields[0].field_id: duplicate field_id 'id'"},
	        {MANIFEST(TABLE(FIELD("a", "a", "text", "true", "true") "," FIELD("a", "b", "text",
	                                                                          "true", "true"),
	                        HARD, ALL)),
	         "tables[0].fields[1].field_id: duplicate field_id 'a'"},
	        {MANIFEST(TABLE(FIELD("a", "a", "text", "true", "true") "," FIELD("b", "a", "text",
	                                                                          "true", "true"),
	                        HARD, ALL)),
	         "tables[0].fields[1].column: duplicate column 'a'"},
	        {MANIFEST(TABLE(FIELD("a", "id", "text", "true", "true"), HARD, ALL)),
	         "tables[0].fields[0].column: duplicate column 'id'"},
	        {"{'tables':[" TABLE("", HARD, ALL) "," TABLE("", HARD, ALL) "]}",
	         "tables[1].table_id: duplicate table_id 't'"},
	        {"{'tables':[" TABLE("", HARD, ALL) ",{'table_id':'u','relation':'t'," PK
	                                            ",'fields':[]," HARD "," ALL "}]}",
	         "tables[1].relation: duplicate relation 't'"},
	        {MANIFEST(TABLE("", "'delete':'hard'", ALL)),
	         "tables[0].delete: expected object, got string"},
	        {MANIFEST(TABLE("", "'delete':{}", ALL)),
	         "tables[0].delete: missing member 'mode'"},
	        {MANIFEST(TABLE("", "'delete':{'mode':'hard','x':1}", ALL)),
	         "tables[0].delete: unknown member 'x'"},
	        {MANIFEST(TABLE("", "'delete':{'mode':'archive'}", ALL)),
	         "tables[0].delete.mode: unknown mode 'archive' (hard, soft)"},
	        {MANIFEST(TABLE("", "'delete':{'mode':'soft'}", ALL)),
	         "tables[0].delete.column: required when mode is 'soft'"},
	        {MANIFEST(TABLE("", "'delete':{'mode':'hard','column':'gone'}", ALL)),
	         "tables[0].delete.column: only allowed when mode is 'soft'"},
	        {MANIFEST(TABLE("", "'delete':{'mode':'soft','column':'Gone'}", ALL)),
	         "tables[0].delete.column: invalid column 'Gone' (lowercase SQL identifier, at "
	         "most 63 "
	         "bytes)"},
	        {MANIFEST(TABLE("", "'delete':{'mode':'soft','column':'id'}", ALL)),
	         "tables[0].delete.column: 'id' is the primary key column"},
	        {MANIFEST(TABLE(FIELD("g", "gone", "date", "true", "false"),
	                        "'delete':{'mode':'soft','column':'gone'}", ALL)),
	         "tables[0].fields[0].type: maps the soft-delete column 'gone' and must be "
	         "timestamp"},
	        {MANIFEST(TABLE(FIELD("a", "a", "text", "true",
	                              "true") "," FIELD("g", "gone", "timestamp", "false", "false"),
	                        "'delete':{'mode':'soft','column':'gone'}", ALL)),
	         "tables[0].fields[1].nullable: maps the soft-delete column 'gone' and must be "
	         "nullable"},
	        {MANIFEST(TABLE("", HARD, "'policy':'all'")),
	         "tables[0].policy: expected object, got string"},
	        {MANIFEST(TABLE("", HARD, "'policy':{'read':'all'}")),
	         "tables[0].policy: missing member 'write'"},
	        {MANIFEST(TABLE("", HARD, "'policy':{'read':'all','write':'all','delete':'all'}")),
	         "tables[0].policy: unknown member 'delete'"},
	        {MANIFEST(TABLE("", HARD, "'policy':{'read':'none','write':'all'}")),
	         "tables[0].policy.read: unknown policy 'none' (owner, all, members)"},
	        {MANIFEST(TABLE("", HARD, "'policy':{'read':'all','write':'some'}")),
	         "tables[0].policy.write: unknown policy 'some' (owner, all, none, members)"},
	        {MANIFEST(TABLE("", HARD, "'policy':{'read':'all','write':true}")),
	         "tables[0].policy.write: expected string, got boolean"},
	        {MANIFEST(TABLE(FIELD("o", "o", "text", "false", "false"), HARD,
	                        "'policy':{'read':'owner','write':'all'}")),
	         "tables[0].policy.owner_field: required when read or write is 'owner'"},
	        {MANIFEST(TABLE(FIELD("o", "o", "text", "false", "false"), HARD,
	                        "'policy':{'read':'all','write':'none','owner_field':'o'}")),
	         "tables[0].policy.owner_field: only allowed when read or write is 'owner', or "
	         "read "
	         "is 'members'"},
	        {MANIFEST(TABLE(FIELD("o", "o", "text", "false", "false"), HARD,
	                        "'policy':{'read':'all','write':'owner','owner_field':null}")),
	         "tables[0].policy.owner_field: expected string, got null"},
	        {MANIFEST(TABLE(FIELD("o", "o", "text", "false", "false"), HARD,
	                        "'policy':{'read':'all','write':'owner','owner_field':'who'}")),
	         "tables[0].policy.owner_field: no field 'who'"},
	        {MANIFEST(TABLE(FIELD("o", "o", "text", "false", "false"), HARD,
	                        "'policy':{'read':'owner','write':'owner','owner_field':'id'}")),
	         "tables[0].policy.owner_field: 'id' is the primary key"},
	        {MANIFEST(TABLE(FIELD("o", "o", "int64", "false", "false"), HARD,
	                        "'policy':{'read':'owner','write':'owner','owner_field':'o'}")),
	         "tables[0].policy.owner_field: field 'o' must have type text"},
	};
	size_t n = sizeof cases / sizeof cases[0];
	CU_ASSERT(n >= 25);
	for (size_t i = 0; i < n; i++) {
		sy_error err;
		sy_error_clear(&err);
		sy_manifest *m = parse_dq(cases[i].json, &err);
		char *want = dq(cases[i].message);
		CU_ASSERT_PTR_NULL(m);
		CU_ASSERT_EQUAL(err.code, SY_ERR_INVALID_REQUEST);
		if (strcmp(err.message, want) != 0)
			fprintf(stderr, "\ncase %zu:\n  got  %s\n  want %s\n", i, err.message,
			        want);
		CU_ASSERT_STRING_EQUAL(err.message, want);
		free(want);
		sy_manifest_free(m);
	}
}

/* Invalid JSON is the reader's 400; the manifest layer adds nothing to it. */
static void test_invalid_json(void)
{
	static const char *const bad[] = {
	        "",
	        "{'tables':[]",
	        "{'tables':[],'tables':[]}", /* duplicate member */
	        "{'tables':[]} x",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		sy_error err;
		sy_error_clear(&err);
		sy_manifest *m = parse_dq(bad[i], &err);
		CU_ASSERT_PTR_NULL(m);
		CU_ASSERT_EQUAL(err.code, SY_ERR_INVALID_REQUEST);
		sy_manifest_free(m);
	}
}

/* The example as a later version: todo.note removed, todo.done now text, todo.color new,
 * todo.title's nullability and column changed, item gone. */
#define EXAMPLE_V2                                                                                 \
	"{'tables':[{'table_id':'todo','relation':'app.todos',"                                    \
	"'pk':{'field_id':'id','column':'id','type':'uuid'},'fields':[" FIELD(                     \
	        "title", "headline", "text", "true",                                               \
	        "false") "," FIELD("done", "done", "text", "false",                                \
	                           "true") "," FIELD("color", "color", "text", "true",             \
	                                             "true") "," FIELD("owner", "owner", "text",   \
	                                                               "false",                    \
	                                                               "false") "]," HARD ","      \
	                                                                        "'policy':{'"      \
	                                                                        "owner_field':'"   \
	                                                                        "owner','read':'"  \
	                                                                        "owner','write':'" \
	                                                                        "owner'}}]}"

static void check_ids(char **ids, size_t n, const char *const *want, size_t want_n)
{
	CU_ASSERT_EQUAL_FATAL(n, want_n);
	CU_ASSERT_EQUAL(ids == NULL, n == 0);
	for (size_t i = 0; i < n; i++)
		CU_ASSERT_STRING_EQUAL(ids[i], want[i]);
}

static void incompatible(const sy_manifest *authored, const sy_manifest *current, const char *table,
                         const char *const *ids, size_t count, const char *const *want,
                         size_t want_n)
{
	size_t lens[16];
	for (size_t i = 0; i < count; i++)
		lens[i] = strlen(ids[i]);
	char **out = (char **)1;
	size_t n = 99;
	sy_error err;
	sy_error_clear(&err);
	CU_ASSERT_TRUE_FATAL(sy_manifest_incompatible_fields(
	        authored, current, table, strlen(table), ids, lens, count, &out, &n, &err));
	check_ids(out, n, want, want_n);
	sy_manifest_free_ids(out, n);
}

static void test_incompatible(void)
{
	sy_manifest *v1 = parse_vector("example.json");
	sy_error err;
	sy_error_clear(&err);
	sy_manifest *v2 = parse_dq(EXAMPLE_V2, &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(v1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(v2);

	/* Removed field and type change; column, nullability and writability changes are
	 * not incompatibilities, nor is a field the authored schema did not know. */
	static const char *const todo_ids[] = {"title", "note", "done", "owner", "color", "id"};
	static const char *const want1[] = {"done", "note"};
	incompatible(v1, v2, "todo", todo_ids, 6, want1, 2);
	/* Historical manifest unavailable: presence in the current schema only. */
	static const char *const want2[] = {"note"};
	incompatible(NULL, v2, "todo", todo_ids, 6, want2, 1);
	/* Unknown field ids, equal ids reported once. */
	static const char *const odd[] = {"zz", "bogus", "title", "bogus", "Title"};
	static const char *const want3[] = {"Title", "bogus", "zz"};
	incompatible(v1, v2, "todo", odd, 5, want3, 3);
	/* Same schema: nothing. */
	incompatible(v1, v1, "todo", todo_ids, 4, NULL, 0);
	incompatible(v2, v2, "todo", todo_ids + 2, 4, NULL, 0);
	incompatible(v1, v2, "todo", NULL, 0, NULL, 0);

	/* Table gone from the current schema: every submitted field, and the caller sees the
	 * table is absent. */
	CU_ASSERT_PTR_NULL(sy_manifest_table(v2, "item", 4));
	static const char *const item_ids[] = {"qty", "label", "deleted_at"};
	static const char *const want4[] = {"deleted_at", "label", "qty"};
	incompatible(v1, v2, "item", item_ids, 3, want4, 3);
	incompatible(v1, v2, "item", item_ids, 0, NULL, 0);
	/* A table only the current schema has: presence only (the authored one has no types). */
	incompatible(v2, v1, "item", item_ids, 3, NULL, 0);
	static const char *const want5[] = {"color"};
	incompatible(v1, v2, "todo", (const char *const[]){"color"}, 1, NULL, 0);
	incompatible(v2, v1, "todo", (const char *const[]){"color", "done"}, 2,
	             (const char *const[]){"color", "done"}, 2);
	incompatible(NULL, v1, "todo", (const char *const[]){"color"}, 1, want5, 1);
	sy_manifest_free(v1);
	sy_manifest_free(v2);
}

/* The pk counts as a field: a pk whose type changed makes its id incompatible. */
static void test_incompatible_pk(void)
{
	sy_error err;
	sy_error_clear(&err);
	sy_manifest *a = parse_dq(MANIFEST(TABLE("", HARD, ALL)), &err);
	sy_manifest *b =
	        parse_dq(MANIFEST("{'table_id':'t','relation':'t','pk':{'field_id':'id',"
	                          "'column':'id','type':'text'},'fields':[]," HARD "," ALL "}"),
	                 &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	static const char *const ids[] = {"id"};
	incompatible(a, b, "t", ids, 1, ids, 1);
	incompatible(a, a, "t", ids, 1, NULL, 0);
	incompatible(NULL, b, "t", ids, 1, NULL, 0);
	sy_manifest_free(a);
	sy_manifest_free(b);
}

/* Sorted by unsigned UTF-8 bytes, which here differs from both insertion order and the
 * UTF-16 order JCS uses for object members (U+FF21 > U+D83D in UTF-16). */
static void test_incompatible_sorted(void)
{
	sy_manifest *intl = parse_vector("intl.json");
	sy_error err;
	sy_error_clear(&err);
	sy_manifest *bare = parse_dq("{'tables':[{'table_id':'notes','relation':'notes',"
	                             "'pk':{'field_id':'\\u043a\\u043b\\u044e\\u0447','column':"
	                             "'id','type':'text'},'fields':[]," HARD "," ALL "}]}",
	                             &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(intl);
	CU_ASSERT_PTR_NOT_NULL_FATAL(bare);
	static const char *const ids[] = {"\xf0\x9f\x98\x80",
	                                  "\xef\xbc\xa1",
	                                  "zz",
	                                  "\xc3\xa9",
	                                  "a",
	                                  "\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87"};
	static const char *const want[] = {"a", "zz", "\xc3\xa9", "\xef\xbc\xa1",
	                                   "\xf0\x9f\x98\x80"};
	incompatible(intl, bare, "notes", ids, 6, want, 5);
	incompatible(NULL, bare, "notes", ids, 6, want, 5);
	static const char *const want_intl[] = {"zz"};
	incompatible(bare, intl, "notes", ids, 6, want_intl, 1);

	/* Positions: an id with U+0000 keeps its length; of equal ids the first position. */
	static const char *const raw[] = {"a\0b", "\xc3\xa9", "a", "a\0b", "\xc3\xa9"};
	static const size_t raw_lens[] = {3, 2, 1, 3, 2};
	size_t *idx = NULL, n = 0;
	CU_ASSERT_TRUE_FATAL(sy_manifest_incompatible_indexes(bare, intl, "notes", 5, raw, raw_lens,
	                                                      5, &idx, &n, &err));
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(idx[0], 0);
	sy_free(idx);
	CU_ASSERT_TRUE_FATAL(sy_manifest_incompatible_indexes(intl, bare, "notes", 5, raw, raw_lens,
	                                                      5, &idx, &n, &err));
	CU_ASSERT_EQUAL_FATAL(n, 3);
	CU_ASSERT_EQUAL(idx[0], 2);
	CU_ASSERT_EQUAL(idx[1], 0);
	CU_ASSERT_EQUAL(idx[2], 1);
	sy_free(idx);
	sy_manifest_free_ids(NULL, 0);
	sy_manifest_free(intl);
	sy_manifest_free(bare);
}

/* Fails each allocation in turn until a run needs no failure: NOMEM, never a leak. */
static void test_alloc_failures(void)
{
	size_t len;
	char *text = read_vector("example.json", &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	long i;
	for (i = 0; i < 100000; i++) {
		sy_error err;
		sy_error_clear(&err);
		sy_test_alloc_install(i, false);
		sy_manifest *m = sy_manifest_parse(text, len, &err);
		bool done = m != NULL;
		if (m != NULL) {
			CU_ASSERT_STRING_EQUAL(m->hash, EXAMPLE_HASH);
		} else {
			CU_ASSERT_EQUAL(err.code, SY_ERR_NOMEM);
		}
		sy_manifest_free(m);
		long live = sy_test_alloc.live;
		sy_test_alloc_remove();
		CU_ASSERT_EQUAL(live, 0);
		if (done || live != 0 || err.code != SY_ERR_NOMEM)
			break;
	}
	CU_ASSERT(i > 0 && i < 100000);
	free(text);
}

/* The same for validation alone (the JSON document is parsed beforehand). */
static void test_alloc_failures_json(void)
{
	size_t len;
	char *text = read_vector("intl.json", &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	sy_error err;
	sy_json_doc *doc = sy_json_parse(text, len, &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	long i;
	for (i = 0; i < 100000; i++) {
		sy_error_clear(&err);
		sy_test_alloc_install(i, false);
		sy_manifest *m = sy_manifest_parse_json(sy_json_doc_root(doc), &err);
		bool done = m != NULL;
		if (m != NULL) {
			CU_ASSERT_STRING_EQUAL(m->hash, INTL_HASH);
		} else {
			CU_ASSERT_EQUAL(err.code, SY_ERR_NOMEM);
		}
		sy_manifest_free(m);
		long live = sy_test_alloc.live;
		sy_test_alloc_remove();
		CU_ASSERT_EQUAL(live, 0);
		if (done || live != 0 || err.code != SY_ERR_NOMEM)
			break;
	}
	CU_ASSERT(i > 0 && i < 100000);
	sy_json_doc_free(doc);
	free(text);
}

static void test_alloc_failures_incompatible(void)
{
	sy_manifest *v1 = parse_vector("example.json");
	CU_ASSERT_PTR_NOT_NULL_FATAL(v1);
	static const char *const ids[] = {"zz", "bogus", "title", "aa"};
	static const size_t lens[] = {2, 5, 5, 2};
	static const char *const want[] = {"aa", "bogus", "zz"};
	long i;
	for (i = 0; i < 1000; i++) {
		sy_error err;
		sy_error_clear(&err);
		char **out = NULL;
		size_t n = 0;
		sy_test_alloc_install(i, false);
		bool ok = sy_manifest_incompatible_fields(v1, v1, "todo", 4, ids, lens, 4, &out, &n,
		                                          &err);
		if (ok) {
			check_ids(out, n, want, 3);
		} else {
			CU_ASSERT(err.code == SY_ERR_NOMEM && out == NULL && n == 0);
		}
		sy_manifest_free_ids(out, n);
		long live = sy_test_alloc.live;
		sy_test_alloc_remove();
		CU_ASSERT_EQUAL(live, 0);
		if (ok || live != 0)
			break;
	}
	CU_ASSERT(i == 5); /* the positions, the array, then one copy per id */
	sy_manifest_free(v1);
}

int main(void)
{
	static const CU_TestInfo tests[] = {
	        {"example vector", test_example},
	        {"hash stable across forms", test_hash_stable},
	        {"non-ASCII field ids", test_intl},
	        {"valid edge cases", test_valid_edges},
	        {"validation errors name the path", test_invalid},
	        {"invalid JSON", test_invalid_json},
	        {"incompatible fields", test_incompatible},
	        {"incompatible pk type", test_incompatible_pk},
	        {"incompatible fields sorted by UTF-8", test_incompatible_sorted},
	        {"allocation failures: parse", test_alloc_failures},
	        {"allocation failures: validate", test_alloc_failures_json},
	        {"allocation failures: incompatible", test_alloc_failures_incompatible},
	        CU_TEST_INFO_NULL,
	};
	sy_test_add_suite("manifest", tests);
	return sy_test_run();
}
