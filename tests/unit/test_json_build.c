/* SPDX-License-Identifier: BSD-2-Clause */
/* The builders, and every allocation of the reader and builders failing in turn. */
#include "config.h"

#include <CUnit/CUnit.h>
#include <dirent.h>
#include <float.h>
#include <json-c/json.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/buf.h"
#include "synchro/jcs.h"
#include "synchro/json.h"
#include "test_json.h"
#include "testutil.h"

/* ------------------------------------------------------------ builders */

void test_builders(void)
{
	sy_json_doc *doc = sy_json_doc_new();
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	CU_ASSERT_PTR_NULL(sy_json_doc_root(doc));
	sy_json *obj = sy_json_new_object(doc);
	sy_json *arr = sy_json_new_array(doc);
	CU_ASSERT_FATAL(obj != NULL && arr != NULL);
	for (int i = 0; i < 1000; i++)
		CU_ASSERT_FATAL(sy_json_array_push(doc, arr, sy_json_new_int(doc, i)));
	CU_ASSERT_EQUAL(arr->u.array.count, 1000);
	for (int i = 0; i < 1000; i++)
		CU_ASSERT_EQUAL(arr->u.array.items[i]->u.number.value, i);
	CU_ASSERT_FATAL(sy_json_object_put(doc, obj, "list", arr));
	CU_ASSERT_FATAL(sy_json_object_put(doc, obj, "null", sy_json_new_null(doc)));
	CU_ASSERT_FATAL(sy_json_object_put(doc, obj, "yes", sy_json_new_bool(doc, true)));
	CU_ASSERT_FATAL(sy_json_object_put(doc, obj, "no", sy_json_new_bool(doc, false)));
	CU_ASSERT_FATAL(sy_json_object_put(doc, obj, "s", sy_json_new_string(doc, "a\0b", 3)));
	CU_ASSERT_FATAL(sy_json_object_put(doc, obj, "c", sy_json_new_cstring(doc, "hi")));
	CU_ASSERT_FATAL(sy_json_object_putn(doc, obj, "k\0z", 3, sy_json_new_double(doc, 0.5)));
	sy_json_doc_set_root(doc, obj);
	CU_ASSERT_PTR_EQUAL(sy_json_doc_root(doc), obj);

	const sy_json *s = sy_json_get(obj, "s");
	CU_ASSERT(s != NULL && s->u.string.len == 3 && memcmp(s->u.string.data, "a\0b", 4) == 0);
	CU_ASSERT_EQUAL(sy_json_get(obj, "yes")->type, SY_JSON_TRUE);
	CU_ASSERT_EQUAL(obj->u.object.members[6].key_len, 3);

	sy_json *i = sy_json_new_int(doc, INT64_MIN);
	CU_ASSERT_STRING_EQUAL(i->u.number.text, "-9223372036854775808");
	CU_ASSERT(i->u.number.is_integer);
	sy_json *d = sy_json_new_double(doc, 0.1);
	CU_ASSERT_STRING_EQUAL(d->u.number.text, "0.1");
	CU_ASSERT(!d->u.number.is_integer);
	d = sy_json_new_double(doc, 3.0);
	CU_ASSERT_STRING_EQUAL(d->u.number.text, "3");
	CU_ASSERT(d->u.number.is_integer);
	d = sy_json_new_double(doc, 1e21);
	CU_ASSERT_STRING_EQUAL(d->u.number.text, "1e+21");
	CU_ASSERT(!d->u.number.is_integer);
	CU_ASSERT_PTR_NULL(sy_json_new_double(doc, NAN));
	CU_ASSERT_PTR_NULL(sy_json_new_double(doc, INFINITY));
	CU_ASSERT_PTR_NULL(sy_json_new_double(doc, -INFINITY));

	/* NULL propagates so a chain needs one check. */
	CU_ASSERT_PTR_NULL(sy_json_new_null(NULL));
	CU_ASSERT_PTR_NULL(sy_json_new_cstring(doc, NULL));
	CU_ASSERT_FALSE(sy_json_array_push(doc, arr, NULL));
	CU_ASSERT_FALSE(sy_json_array_push(doc, obj, sy_json_new_null(doc)));
	CU_ASSERT_FALSE(sy_json_object_put(doc, obj, "x", NULL));
	CU_ASSERT_FALSE(sy_json_object_put(doc, arr, "x", sy_json_new_null(doc)));
	CU_ASSERT_EQUAL(arr->u.array.count, 1000);
	CU_ASSERT_PTR_NULL(sy_json_copy(doc, NULL));

	/* Pushing onto parsed containers (exact-size storage) and deep copies. */
	sy_error err;
	sy_json_doc *parsed = parse("{\"a\":[1,2,3],\"b\":{\"x\":\"y\"},\"c\":1.50}", &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(parsed);
	sy_json *copy = sy_json_copy(doc, sy_json_doc_root(parsed));
	CU_ASSERT_PTR_NOT_NULL_FATAL(copy);
	sy_json *pa = (sy_json *)sy_json_get(sy_json_doc_root(parsed), "a");
	for (int k = 0; k < 10; k++)
		CU_ASSERT_FATAL(sy_json_array_push(parsed, pa, sy_json_new_int(parsed, 10 + k)));
	CU_ASSERT_EQUAL(pa->u.array.count, 13);
	CU_ASSERT_EQUAL(pa->u.array.items[2]->u.number.value, 3);
	CU_ASSERT_EQUAL(pa->u.array.items[12]->u.number.value, 19);
	sy_json *pb = (sy_json *)sy_json_get(sy_json_doc_root(parsed), "b");
	CU_ASSERT_FATAL(sy_json_object_put(parsed, pb, "z", sy_json_new_null(parsed)));
	CU_ASSERT_EQUAL(pb->u.object.count, 2);
	sy_json_doc_free(parsed);
	/* The copy survives its source. */
	CU_ASSERT_EQUAL(sy_json_get(copy, "a")->u.array.count, 3);
	CU_ASSERT_STRING_EQUAL(sy_json_get(sy_json_get(copy, "b"), "x")->u.string.data, "y");
	CU_ASSERT_STRING_EQUAL(sy_json_get(copy, "c")->u.number.text, "1.50");
	CU_ASSERT_FALSE(sy_json_get(copy, "c")->u.number.is_integer);

	/* A hand-made container (capacity 0) grows into the arena. */
	sy_json *items[2] = {sy_json_new_int(doc, 1), sy_json_new_int(doc, 2)};
	sy_json hand = {.type = SY_JSON_ARRAY, .u.array = {items, 2, 0}};
	CU_ASSERT_FATAL(sy_json_array_push(doc, &hand, sy_json_new_int(doc, 3)));
	CU_ASSERT_EQUAL(hand.u.array.count, 3);
	CU_ASSERT_PTR_NOT_EQUAL(hand.u.array.items, items);
	CU_ASSERT_EQUAL(hand.u.array.items[1]->u.number.value, 2);

	/* A hand-made number without text copies with a text of its own. */
	sy_json bare = {.type = SY_JSON_NUMBER};
	bare.u.number.value = 2.5;
	sy_json *bc = sy_json_copy(doc, &bare);
	CU_ASSERT(bc != NULL && bc->u.number.value == 2.5 &&
	          strcmp(bc->u.number.text, "2.5") == 0 && bc->u.number.text_len == 3);

	void *p = sy_json_doc_alloc(doc, 100);
	CU_ASSERT_PTR_NOT_NULL(p);
	CU_ASSERT_EQUAL((uintptr_t)p % _Alignof(max_align_t), 0);
	memset(p, 1, 100);
	p = sy_json_doc_alloc(doc, 1 << 20);
	CU_ASSERT_PTR_NOT_NULL(p);
	memset(p, 2, 1 << 20);
	CU_ASSERT_PTR_NULL(sy_json_doc_alloc(NULL, 1));
	sy_json_doc_free(doc);
}

/* ------------------------------------------------------------ failing allocations */

/* A document that needs several arena chunks and scratch growth. */
static char *nontrivial_document(void)
{
	sy_buf b = SY_BUF_INIT;
	CU_ASSERT_FATAL(sy_buf_puts(&b, "{\"rows\":["));
	for (int i = 0; i < 400; i++)
		CU_ASSERT_FATAL(sy_buf_printf(
		        &b,
		        "%s{\"id\":%d,\"name\":\"n\\u00e9%d\",\"v\":[%d.5,1e%d,true,null,{}],"
		        "\"deep\":[[[{\"k\":\"\\ud83d\\ude00\"}]]],\"a\":1,\"b\":2,\"c\":3,\"d\":4,"
		        "\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"i\":9,\"j\":10,\"k\":11,\"l\":12,\"m\":"
		        "13}",
		        i ? "," : "", i, i, i, i % 300));
	CU_ASSERT_FATAL(sy_buf_printf(&b, "],\"big\":\"%0*d\",\"colliding\":{", 5000, 7));
	static char names[420][16];
	colliding_names(names, 420); /* the sorting check allocates too */
	for (int i = 0; i < 420; i++)
		CU_ASSERT_FATAL(sy_buf_printf(&b, "%s\"%s\":%d", i ? "," : "", names[i], i));
	CU_ASSERT_FATAL(sy_buf_puts(&b, "}}"));
	return sy_buf_steal(&b, NULL);
}

void test_alloc_failure(void)
{
	char *text = nontrivial_document();
	size_t len = strlen(text);
	bool done = false;
	long n;
	for (n = 1; n < 100000 && !done; n++) {
		sy_test_alloc_install(n - 1, false);
		sy_error err;
		sy_error_clear(&err);
		sy_json_doc *doc = sy_json_parse(text, len, &err);
		if (doc != NULL) {
			done = true;
			CU_ASSERT(sy_test_alloc.calls <
			          n); /* it succeeded because nothing failed */
			CU_ASSERT_EQUAL(sy_json_get(sy_json_doc_root(doc), "rows")->u.array.count,
			                400);
		} else {
			CU_ASSERT_EQUAL(err.code, SY_ERR_NOMEM);
		}
		sy_json_doc_free(doc);
		sy_test_alloc_remove();
		if (sy_test_alloc.live != 0) {
			fprintf(stderr, "\n  failing allocation %ld leaks %ld blocks\n", n,
			        sy_test_alloc.live);
			CU_FAIL("leak after a failed allocation");
		}
	}
	CU_ASSERT(done);
	CU_ASSERT(n > 5); /* the document really needed several allocations */

	/* The builders: every failure is a NULL / false, never a crash. */
	done = false;
	for (n = 1; n < 10000 && !done; n++) {
		sy_test_alloc_install(n - 1, false);
		sy_json_doc *doc = sy_json_doc_new();
		sy_json *obj = sy_json_new_object(doc);
		bool ok = obj != NULL;
		for (int i = 0; i < 300 && ok; i++) {
			char key[32];
			snprintf(key, sizeof(key), "key-%d", i);
			sy_json *a = sy_json_new_array(doc);
			ok = sy_json_array_push(doc, a, sy_json_new_cstring(doc, key)) &&
			     sy_json_array_push(doc, a, sy_json_new_double(doc, i / 7.0)) &&
			     sy_json_object_put(doc, obj, key, a);
		}
		sy_json *c = ok ? sy_json_copy(doc, obj) : NULL;
		done = ok && c != NULL;
		sy_json_doc_free(doc);
		sy_test_alloc_remove();
		CU_ASSERT_EQUAL(sy_test_alloc.live, 0);
	}
	CU_ASSERT(done);
	free(text);
}
