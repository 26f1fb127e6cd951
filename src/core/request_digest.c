/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * request_digest.c: the exact request octets as a replay key (request_digest.h). It
 * computes their digest. It peeks at the client_id and batch_id of the top-level object
 * without building a tree.
 *
 * Layer: middle of src/core (doc/hacking.md).
 * Notes: The peek is only a hint for finding the batch row. The digest comparison decides.
 * A wrong peek can only lose the short way. It never answers a request wrongly.
 */
#include "config.h"

#include <string.h>

#include "synchro/octets.h"
#include "synchro/request_digest.h"
#include "synchro/sha256.h"
#include "json_scan.h"

bool sy_request_digest(const char *user, size_t user_len, const char *body, size_t len,
                       uint8_t out[SY_FP_DIGEST_LEN], sy_error *err)
{
	unsigned char ulen[4];
	sy_sha256_ctx md = SY_SHA256_INIT;
	bool ok = false;

	if (user_len > UINT32_MAX)
		return sy_error_set(err, SY_ERR_AUTH_REQUIRED, "authenticated user id too long");
	sy_be_put(ulen, user_len, 4);
	/* sizeof includes the NUL terminator: the 0x00 after the domain */
	ok = sy_sha256_begin(&md) &&
	     sy_sha256_add(&md, SY_REQUEST_DIGEST_DOMAIN, sizeof SY_REQUEST_DIGEST_DOMAIN) &&
	     sy_sha256_add(&md, ulen, sizeof ulen) && sy_sha256_add(&md, user, user_len) &&
	     sy_sha256_add(&md, body, len) && sy_sha256_end(&md, out);
	sy_sha256_release(&md);
	if (!ok)
		return sy_error_set(err, SY_ERR_NOMEM, "SHA-256 digest failed");
	return true;
}

/* ---- the peek ---- */

typedef struct {
	const unsigned char *p;
	size_t i, n;
} cursor;

static void ws(cursor *c)
{
	while (c->i < c->n && (c->p[c->i] == ' ' || c->p[c->i] == '\t' || c->p[c->i] == '\n' ||
	                       c->p[c->i] == '\r'))
		c->i++;
}

static bool take(cursor *c, unsigned char ch)
{
	ws(c);
	if (c->i >= c->n || c->p[c->i] != ch)
		return false;
	c->i++;
	return true;
}

/* Past a string whose opening quote is at c->i; its escapes are skipped, not decoded. *plain:
 * it had none. */
static bool skip_string(cursor *c, bool *plain)
{
	*plain = true;
	c->i++;
	for (;;) {
		c->i = sy_scan_plain(c->p, c->i, c->n, false);
		if (c->i >= c->n)
			return false;
		unsigned char ch = c->p[c->i];
		if (ch == '"') {
			c->i++;
			return true;
		}
		if (ch != '\\')
			return false; /* a raw control character: invalid JSON */
		*plain = false;
		c->i += 2;
		if (c->i > c->n)
			return false;
	}
}

/* Past one value of any kind: strings as above, containers by their depth, scalars to the
 * next delimiter. Not a validation: anything odd ends the scan. */
static bool skip_value(cursor *c)
{
	size_t depth = 0;
	bool plain;
	ws(c);
	do {
		if (c->i >= c->n)
			return false;
		unsigned char ch = c->p[c->i];
		if (ch == '"') {
			if (!skip_string(c, &plain))
				return false;
		} else if (ch == '{' || ch == '[') {
			depth++;
			c->i++;
		} else if (ch == '}' || ch == ']') {
			if (depth == 0)
				return false;
			depth--;
			c->i++;
		} else if (depth > 0) {
			c->i++; /* ',', ':', whitespace, scalars inside a container */
		} else {
			size_t at = c->i;
			while (c->i < c->n && strchr(",}] \t\n\r", c->p[c->i]) == NULL)
				c->i++;
			if (c->i == at)
				return false;
		}
	} while (depth > 0);
	return true;
}

/* A member's string value that must be a UUID, into out. */
static bool uuid_value(cursor *c, char out[SY_UUID_LEN + 1])
{
	bool plain;
	ws(c);
	if (c->i >= c->n || c->p[c->i] != '"')
		return false;
	size_t at = c->i + 1;
	if (!skip_string(c, &plain) || !plain || c->i - 1 - at != SY_UUID_LEN ||
	    !sy_uuid_valid((const char *)c->p + at, SY_UUID_LEN))
		return false;
	memcpy(out, c->p + at, SY_UUID_LEN);
	out[SY_UUID_LEN] = '\0';
	return true;
}

static bool key_is(const cursor *c, size_t at, size_t len, const char *name)
{
	return len == strlen(name) && memcmp(c->p + at, name, len) == 0;
}

bool sy_request_peek_ids(const char *body, size_t len, char client_id[SY_UUID_LEN + 1],
                         char batch_id[SY_UUID_LEN + 1])
{
	cursor c = {(const unsigned char *)body, 0, len};
	bool have_client = false, have_batch = false, plain;

	if (body == NULL || !take(&c, '{'))
		return false;
	ws(&c);
	if (c.i < c.n && c.p[c.i] == '}')
		return false;
	for (;;) {
		ws(&c);
		if (c.i >= c.n || c.p[c.i] != '"')
			return false;
		size_t at = c.i + 1;
		if (!skip_string(&c, &plain) || !plain)
			return false;
		size_t klen = c.i - 1 - at;
		if (!take(&c, ':'))
			return false;
		if (key_is(&c, at, klen, "client_id")) {
			if (have_client || !uuid_value(&c, client_id))
				return false;
			have_client = true;
		} else if (key_is(&c, at, klen, "batch_id")) {
			if (have_batch || !uuid_value(&c, batch_id))
				return false;
			have_batch = true;
		} else if (!skip_value(&c)) {
			return false;
		}
		if (have_client && have_batch)
			return true;
		if (!take(&c, ','))
			return false;
	}
}
