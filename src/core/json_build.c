/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * json_build.c: JSON values by hand (json.h): member lookup, the builders and the deep copy.
 *
 * Layer: middle of src/core (doc/hacking.md).
 * Rules: doc/contract.md#normalized-mutation (the normalized arrays are built here).
 * Notes: The server's responses are built with these calls too. Every value lives in the
 * document arena (json_arena.h). A NULL argument gives NULL, so a chain of builders needs
 * one check at its end.
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdalign.h>
#include <stdio.h>
#include <string.h>

#include "synchro/jcs.h"
#include "synchro/json.h"

#include "json_arena.h"

const sy_json *sy_json_get(const sy_json *object, const char *key)
{
	if (object == NULL || object->type != SY_JSON_OBJECT || key == NULL)
		return NULL;
	size_t klen = strlen(key);
	const sy_json_member *m = object->u.object.members;
	for (size_t i = 0; i < object->u.object.count; i++) {
		if (m[i].key_len == klen && memcmp(m[i].key, key, klen) == 0)
			return m[i].value;
	}
	return NULL;
}

const char *sy_json_type_name(sy_json_type t)
{
	switch (t) {
	case SY_JSON_NULL: return "null";
	case SY_JSON_FALSE:
	case SY_JSON_TRUE: return "boolean";
	case SY_JSON_NUMBER: return "number";
	case SY_JSON_STRING: return "string";
	case SY_JSON_ARRAY: return "array";
	case SY_JSON_OBJECT: return "object";
	}
	return "unknown";
}

/* ---------------------------------------------------------------- builders */

sy_json *sy_json_new_null(sy_json_doc *doc)
{
	return doc != NULL ? new_node(doc, SY_JSON_NULL) : NULL;
}

sy_json *sy_json_new_bool(sy_json_doc *doc, bool v)
{
	return doc != NULL ? new_node(doc, v ? SY_JSON_TRUE : SY_JSON_FALSE) : NULL;
}

static sy_json *new_number(sy_json_doc *doc, double value, const char *text, size_t len)
{
	sy_json *v = new_node(doc, SY_JSON_NUMBER);
	char *t = arena_strndup(doc, text, len);
	if (v == NULL || t == NULL)
		return NULL;
	v->u.number.value = value;
	v->u.number.text = t;
	v->u.number.text_len = len;
	v->u.number.is_integer = strpbrk(t, ".eE") == NULL;
	return v;
}

sy_json *sy_json_new_int(sy_json_doc *doc, int64_t v)
{
	if (doc == NULL)
		return NULL;
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%" PRId64, v);
	return new_number(doc, (double)v, buf, (size_t)n);
}

sy_json *sy_json_new_double(sy_json_doc *doc, double v)
{
	if (doc == NULL || !isfinite(v))
		return NULL;
	char buf[SY_JCS_NUMBER_MAX];
	size_t n = sy_jcs_format_number(buf, v);
	return new_number(doc, v, buf, n);
}

sy_json *sy_json_new_string(sy_json_doc *doc, const char *s, size_t len)
{
	if (doc == NULL || (s == NULL && len > 0))
		return NULL;
	sy_json *v = new_node(doc, SY_JSON_STRING);
	char *d = arena_strndup(doc, s, len);
	if (v == NULL || d == NULL)
		return NULL;
	v->u.string.data = d;
	v->u.string.len = len;
	return v;
}

sy_json *sy_json_new_cstring(sy_json_doc *doc, const char *s)
{
	if (s == NULL)
		return NULL;
	return sy_json_new_string(doc, s, strlen(s));
}

sy_json *sy_json_new_array(sy_json_doc *doc)
{
	return doc != NULL ? new_node(doc, SY_JSON_ARRAY) : NULL;
}

sy_json *sy_json_new_object(sy_json_doc *doc)
{
	return doc != NULL ? new_node(doc, SY_JSON_OBJECT) : NULL;
}

/* Storage outgrown in the arena stays there until the document is freed; doubling
 * keeps that waste below the final size. */
static void *grow_slots(sy_json_doc *doc, void *old, size_t count, size_t *capacity, size_t elem,
                        size_t align)
{
	if (count < *capacity)
		return old;
	size_t ncap = count < 4 ? 4 : count * 2;
	if (ncap > SIZE_MAX / elem)
		return NULL;
	void *np = arena_alloc(doc, ncap * elem, align);
	if (np == NULL)
		return NULL;
	if (count > 0)
		memcpy(np, old, count * elem);
	*capacity = ncap;
	return np;
}

bool sy_json_array_push(sy_json_doc *doc, sy_json *arr, sy_json *item)
{
	if (doc == NULL || arr == NULL || item == NULL || arr->type != SY_JSON_ARRAY)
		return false;
	size_t cap = arr->u.array.capacity;
	sy_json **items = grow_slots(doc, arr->u.array.items, arr->u.array.count, &cap,
	                             sizeof(sy_json *), alignof(sy_json *));
	if (items == NULL)
		return false;
	items[arr->u.array.count] = item;
	arr->u.array.items = items;
	arr->u.array.capacity = cap;
	arr->u.array.count++;
	return true;
}

bool sy_json_object_put(sy_json_doc *doc, sy_json *obj, const char *key, sy_json *value)
{
	if (doc == NULL || obj == NULL || key == NULL || value == NULL ||
	    obj->type != SY_JSON_OBJECT)
		return false;
	return sy_json_object_putn(doc, obj, key, strlen(key), value);
}

bool sy_json_object_putn(sy_json_doc *doc, sy_json *obj, const char *key, size_t key_len,
                         sy_json *value)
{
	if (doc == NULL || obj == NULL || (key == NULL && key_len > 0) || value == NULL ||
	    obj->type != SY_JSON_OBJECT)
		return false;
	char *k = arena_strndup(doc, key, key_len);
	if (k == NULL)
		return false;
	size_t cap = obj->u.object.capacity;
	sy_json_member *m = grow_slots(doc, obj->u.object.members, obj->u.object.count, &cap,
	                               sizeof(sy_json_member), alignof(sy_json_member));
	if (m == NULL)
		return false;
	m[obj->u.object.count].key = k;
	m[obj->u.object.count].key_len = key_len;
	m[obj->u.object.count].value = value;
	obj->u.object.members = m;
	obj->u.object.capacity = cap;
	obj->u.object.count++;
	return true;
}

sy_json *sy_json_copy(sy_json_doc *doc, const sy_json *v)
{
	if (doc == NULL || v == NULL)
		return NULL;
	switch (v->type) {
	case SY_JSON_NULL:
	case SY_JSON_FALSE:
	case SY_JSON_TRUE: return new_node(doc, v->type);
	case SY_JSON_NUMBER: {
		sy_json *c;
		if (v->u.number.text != NULL) {
			c = new_number(doc, v->u.number.value, v->u.number.text,
			               v->u.number.text_len);
		} else { /* a hand-made number without its literal */
			char buf[SY_JCS_NUMBER_MAX];
			size_t n = sy_jcs_format_number(buf, v->u.number.value);
			c = new_number(doc, v->u.number.value, buf, n);
		}
		if (c != NULL)
			c->u.number.is_integer = v->u.number.is_integer;
		return c;
	}
	case SY_JSON_STRING: return sy_json_new_string(doc, v->u.string.data, v->u.string.len);
	case SY_JSON_ARRAY: {
		size_t n = v->u.array.count;
		sy_json *c = new_node(doc, SY_JSON_ARRAY);
		if (c == NULL)
			return NULL;
		if (n == 0)
			return c;
		if (n > SIZE_MAX / sizeof(sy_json *))
			return NULL;
		sy_json **items = arena_alloc(doc, n * sizeof(*items), alignof(sy_json *));
		if (items == NULL)
			return NULL;
		for (size_t i = 0; i < n; i++) {
			items[i] = sy_json_copy(doc, v->u.array.items[i]);
			if (items[i] == NULL)
				return NULL;
		}
		c->u.array.items = items;
		c->u.array.count = n;
		c->u.array.capacity = n;
		return c;
	}
	case SY_JSON_OBJECT: {
		size_t n = v->u.object.count;
		sy_json *c = new_node(doc, SY_JSON_OBJECT);
		if (c == NULL)
			return NULL;
		if (n == 0)
			return c;
		if (n > SIZE_MAX / sizeof(sy_json_member))
			return NULL;
		sy_json_member *m = arena_alloc(doc, n * sizeof(*m), alignof(sy_json_member));
		if (m == NULL)
			return NULL;
		for (size_t i = 0; i < n; i++) {
			const sy_json_member *src = &v->u.object.members[i];
			m[i].key = arena_strndup(doc, src->key, src->key_len);
			m[i].key_len = src->key_len;
			m[i].value = sy_json_copy(doc, src->value);
			if (m[i].key == NULL || m[i].value == NULL)
				return NULL;
		}
		c->u.object.members = m;
		c->u.object.count = n;
		c->u.object.capacity = n;
		return c;
	}
	}
	return NULL;
}
