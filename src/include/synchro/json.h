/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * json.h: the strict JSON reader, and the document arena its values live in.
 *
 * Notes: The reader takes RFC 8259 exactly. It validates UTF-8 and refuses escaped lone
 * surrogates. It refuses duplicate member names at every depth. Nesting goes at most
 * SY_JSON_MAX_DEPTH deep. Only whitespace may follow the value. The document owns every
 * value and string in it, each borrowed from it. sy_json_doc_free() releases them together.
 */
#ifndef SYNCHRO_JSON_H
#define SYNCHRO_JSON_H

#include "synchro/common.h"

#define SY_JSON_MAX_DEPTH 64

typedef enum {
	SY_JSON_NULL,
	SY_JSON_FALSE,
	SY_JSON_TRUE,
	SY_JSON_NUMBER,
	SY_JSON_STRING,
	SY_JSON_ARRAY,
	SY_JSON_OBJECT
} sy_json_type;

typedef struct sy_json sy_json;

typedef struct {
	const char *key; /* decoded UTF-8, NUL-terminated; may hold U+0000 (see key_len) */
	size_t key_len;
	sy_json *value; /* borrowed from the document, as key is */
} sy_json_member;

struct sy_json {
	sy_json_type type;
	union {
		struct {
			double value;     /* nearest double; +-HUGE_VAL when it overflows */
			bool is_integer;  /* the literal has no fraction and no exponent */
			const char *text; /* the literal exactly as written (NUL-terminated) */
			size_t text_len;
		} number;
		struct {
			const char *data; /* decoded UTF-8, NUL-terminated; may hold U+0000 */
			size_t len;
		} string;
		struct {
			sy_json **items;
			size_t count;
			size_t capacity; /* slots allocated (builders); 0 for a hand-made value */
		} array;
		struct {
			sy_json_member *members; /* in document order */
			size_t count;
			size_t capacity; /* slots allocated (builders); 0 for a hand-made value */
		} object;
	} u;
};

typedef struct sy_json_doc sy_json_doc;

/*
 * Parses exactly one JSON value from text[0..len) (text need not be
 * NUL-terminated). Messages read "invalid JSON at byte N: <reason>", N counting
 * from 0. Numbers are converted as strtod would in the C locale: the library
 * never calls setlocale, and a host locale with another decimal point is
 * compensated for (it reads localeconv() once per call, so a thread changing the
 * locale concurrently is the caller's problem). text is borrowed for the call:
 * the document copies what it keeps. Returns a new document
 * (sy_json_doc_free()); NULL with *err set (SY_ERR_INVALID_REQUEST with a
 * message naming the byte offset, or SY_ERR_NOMEM).
 */
SY_MUST_CHECK sy_json_doc *sy_json_parse(const char *text, size_t len, sy_error *err);
/* Releases doc and every value in it; accepts NULL. */
void sy_json_doc_free(sy_json_doc *doc);
/* The root value, borrowed from doc; NULL for NULL or a document without one. */
const sy_json *sy_json_doc_root(const sy_json_doc *doc);
/* Makes root (borrowed from doc: built in it) the value sy_json_doc_root() returns. */
void sy_json_doc_set_root(sy_json_doc *doc, sy_json *root);

/* Member lookup by exact name (linear scan; a name holding U+0000 cannot be
 * looked up this way): the value, borrowed from object's document; NULL when
 * absent or when object is not an object. */
const sy_json *sy_json_get(const sy_json *object, const char *key);
/* "null", "boolean", "number", ... (borrowed, static). */
const char *sy_json_type_name(sy_json_type t);

/*
 * Builders for values the server creates (responses, normalized arrays).
 * They allocate in doc's arena: every value they return is borrowed from doc,
 * and so is any value linked into one (items, member values: they must be in
 * doc too). doc may be an empty document from sy_json_doc_new() (a new
 * document, sy_json_doc_free()). Every builder returns NULL when memory runs out, and
 * accepts NULL arguments by returning NULL, so a chain of builders needs one
 * check at its end. Strings and names are copied as given: they must be valid
 * UTF-8 for the canonical writer's output to be JSON.
 */
SY_MUST_CHECK sy_json_doc *sy_json_doc_new(void);
sy_json *sy_json_new_null(sy_json_doc *doc);
sy_json *sy_json_new_bool(sy_json_doc *doc, bool v);
/* An integer-valued number (is_integer true, text exact); beyond 2^53 its value,
 * and so its JCS form, is the nearest double, as for any JSON number. */
sy_json *sy_json_new_int(sy_json_doc *doc, int64_t v);
/* A finite double; NULL when not finite. Its text is the JCS form of v and
 * is_integer tells whether that text has neither fraction nor exponent. */
sy_json *sy_json_new_double(sy_json_doc *doc, double v);
/* Copies s[0..len) (borrowed for the call). */
sy_json *sy_json_new_string(sy_json_doc *doc, const char *s, size_t len);
sy_json *sy_json_new_cstring(sy_json_doc *doc, const char *s);
sy_json *sy_json_new_array(sy_json_doc *doc);
sy_json *sy_json_new_object(sy_json_doc *doc);
/* Appends an item; returns false (and leaves arr unchanged) on NULL or no memory. */
SY_MUST_CHECK bool sy_json_array_push(sy_json_doc *doc, sy_json *arr, sy_json *item);
/* Appends a member (key copied, value borrowed from doc); no duplicate check. False on
 * NULL, a non-object or no memory. */
SY_MUST_CHECK bool sy_json_object_put(sy_json_doc *doc, sy_json *obj, const char *key,
                                      sy_json *value);
/* The same with a counted key, which may hold U+0000. */
SY_MUST_CHECK bool sy_json_object_putn(sy_json_doc *doc, sy_json *obj, const char *key,
                                       size_t key_len, sy_json *value);
/* Deep copy of v (borrowed for the call; it may belong to another document) into doc. */
sy_json *sy_json_copy(sy_json_doc *doc, const sy_json *v);
/* n octets (maximally aligned) borrowed from doc, freed with it; NULL on no memory. */
void *sy_json_doc_alloc(sy_json_doc *doc, size_t n);

#endif
