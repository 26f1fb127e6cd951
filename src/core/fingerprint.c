/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fingerprint.c: the SHA-256 fingerprints of batches and mutations, and row checksums.
 *
 * Layer: middle of src/core (doc/hacking.md).
 * Rules: doc/contract.md#fingerprints (batch and mutation fingerprints),
 * doc/contract.md#row-checksum (the checksum of a row).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synchro/alloc.h"
#include "synchro/fingerprint.h"
#include "synchro/jcs.h"
#include "synchro/octets.h"
#include "synchro/sha256.h"

/*
 * Where preimage bytes go: a buffer (preimages for vectors and diagnostics)
 * or straight into the digest, so a fingerprint never copies the normalized
 * mutations again. Both modes run the same writer, so the bytes hashed are
 * the bytes a preimage shows.
 */
typedef struct {
	sy_buf *buf;
	sy_sha256_ctx md; /* when buf is NULL */
} sink;

static bool nomem(sy_error *err)
{
	return sy_error_set(err, SY_ERR_NOMEM, "out of memory");
}

static bool sink_put(sink *s, const void *p, size_t n, sy_error *err)
{
	if (s->buf != NULL)
		return sy_buf_append(s->buf, p, n) || nomem(err);
	if (!sy_sha256_add(&s->md, p, n))
		return sy_error_set(err, SY_ERR_NOMEM, "SHA-256 digest failed");
	return true;
}

/* Starts SHA-256 over domain || 0x00; s->md, when used before, is a context to use again. */
static bool digest_begin(sink *s, const char *domain, sy_error *err)
{
	s->buf = NULL;
	if (!sy_sha256_begin(&s->md))
		return sy_error_set(err, SY_ERR_NOMEM, "SHA-256 digest failed");
	/* strlen + 1 hashes the NUL terminator: the 0x00 separator */
	return sink_put(s, domain, strlen(domain) + 1, err);
}

static bool digest_end(sink *s, uint8_t digest[SY_FP_DIGEST_LEN], sy_error *err)
{
	if (!sy_sha256_end(&s->md, digest))
		return sy_error_set(err, SY_ERR_NOMEM, "SHA-256 digest failed");
	return true;
}

static void digest_free(sink *s)
{
	sy_sha256_release(&s->md);
}

static void fp_init(sy_fingerprint *fp, const char *domain)
{
	fp->algorithm = SY_FP_ALGORITHM;
	fp->version = SY_FP_VERSION;
	fp->domain = domain;
}

/* Valid UTF-8 (shortest form, no surrogate, at most U+10FFFF) without C0, DEL or C1. */
static bool text_clean(const unsigned char *s, size_t len)
{
	size_t i = 0;
	while (i < len) {
		unsigned c = s[i];
		uint32_t cp;
		size_t n;
		if (c < 0x80) {
			cp = c;
			n = 1;
		} else if (c >= 0xC2 && c <= 0xDF) {
			cp = c & 0x1F;
			n = 2;
		} else if (c >= 0xE0 && c <= 0xEF) {
			cp = c & 0x0F;
			n = 3;
		} else if (c >= 0xF0 && c <= 0xF4) {
			cp = c & 0x07;
			n = 4;
		} else {
			return false;
		}
		if (len - i < n)
			return false;
		for (size_t k = 1; k < n; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3F);
		}
		if (n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)))
			return false;
		if (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))
			return false;
		if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))
			return false;
		i += n;
	}
	return true;
}

bool sy_fp_user_valid(const char *user, size_t len, sy_error *err)
{
	if (user == NULL || len == 0)
		return sy_error_set(err, SY_ERR_AUTH_REQUIRED, "user: empty");
	if (len > SY_FP_USER_MAX)
		return sy_error_set(err, SY_ERR_AUTH_REQUIRED, "user: longer than %d octets",
		                    SY_FP_USER_MAX);
	if (!text_clean((const unsigned char *)user, len))
		return sy_error_set(err, SY_ERR_AUTH_REQUIRED,
		                    "user: not UTF-8 text without control characters");
	return true;
}

/*
 * JCS(normalized_batch), assembled from the JCS strings of its prefix and the
 * normalized mutation bytes that sy_push_parse() kept: JCS of an array is its
 * elements' JCS joined by commas, so nothing is serialized twice.
 */
static bool write_batch(sink *s, const sy_push_request *req, const char *user, size_t user_len,
                        sy_error *err)
{
	sy_buf pre = SY_BUF_INIT;
	char gen[24];
	int n = snprintf(gen, sizeof gen, "%" PRIu64, req->client_generation);
	bool ok = sy_buf_puts(&pre, req->atomic ? "[\"atomic-batch-v1\"," : "[\"batch-v1\",") &&
	          sy_jcs_write_string(&pre, user, user_len) && sy_buf_putc(&pre, ',') &&
	          sy_jcs_write_string(&pre, req->client_id, SY_UUID_LEN) &&
	          sy_buf_putc(&pre, ',') && sy_jcs_write_string(&pre, gen, (size_t)n) &&
	          sy_buf_putc(&pre, ',') && sy_jcs_write_string(&pre, req->batch_id, SY_UUID_LEN) &&
	          sy_buf_putc(&pre, ',') && sy_push_write_schema_ref(&pre, &req->schema) &&
	          sy_buf_puts(&pre, ",[");
	if (!ok) {
		nomem(err);
		goto fail;
	}
	if (!sink_put(s, pre.data, pre.len, err))
		goto fail;
	for (size_t i = 0; i < req->mutation_count; i++) {
		const sy_mutation *m = &req->mutations[i];
		if (i > 0 && !sink_put(s, ",", 1, err))
			goto fail;
		if (!sink_put(s, m->normalized, m->normalized_len, err))
			goto fail;
	}
	if (!sink_put(s, "]]", 2, err))
		goto fail;
	sy_buf_free(&pre);
	return true;
fail:
	sy_buf_free(&pre);
	return false;
}

/* JCS("mutation-scope-v1", user, client_id) prefix, up to and with the comma before m. */
static bool scope_prefix(sy_buf *pre, const sy_push_request *req, const char *user, size_t user_len,
                         sy_error *err)
{
	bool ok = sy_buf_puts(pre, "[\"mutation-scope-v1\",") &&
	          sy_jcs_write_string(pre, user, user_len) && sy_buf_putc(pre, ',') &&
	          sy_jcs_write_string(pre, req->client_id, SY_UUID_LEN) && sy_buf_putc(pre, ',');
	return ok || nomem(err);
}

static bool write_scope(sink *s, const sy_buf *pre, const sy_mutation *m, sy_error *err)
{
	return sink_put(s, pre->data, pre->len, err) &&
	       sink_put(s, m->normalized, m->normalized_len, err) && sink_put(s, "]", 1, err);
}

bool sy_fp_batch_preimage(const sy_push_request *req, const char *user, size_t user_len,
                          sy_buf *out, sy_error *err)
{
	sink s = {.buf = out};
	return sy_fp_user_valid(user, user_len, err) && write_batch(&s, req, user, user_len, err);
}

bool sy_fp_mutation_preimage(const sy_push_request *req, const sy_mutation *m, const char *user,
                             size_t user_len, sy_buf *out, sy_error *err)
{
	sink s = {.buf = out};
	sy_buf pre = SY_BUF_INIT;
	bool ok = sy_fp_user_valid(user, user_len, err) &&
	          scope_prefix(&pre, req, user, user_len, err) && write_scope(&s, &pre, m, err);
	sy_buf_free(&pre);
	return ok;
}

bool sy_fp_batch(const sy_push_request *req, const char *user, size_t user_len, sy_fingerprint *out,
                 sy_error *err)
{
	sink s = {.buf = NULL};
	bool ok = sy_fp_user_valid(user, user_len, err) &&
	          digest_begin(&s, SY_FP_BATCH_DOMAIN, err) &&
	          write_batch(&s, req, user, user_len, err) && digest_end(&s, out->digest, err);
	digest_free(&s);
	if (ok)
		fp_init(out, SY_FP_BATCH_DOMAIN);
	return ok;
}

/* mutation_fingerprint of m with a prefix from scope_prefix(), in the digest context of s. */
static bool mutation_fp(sink *s, const sy_buf *pre, const sy_mutation *m, sy_fingerprint *out,
                        sy_error *err)
{
	bool ok = digest_begin(s, SY_FP_MUTATION_DOMAIN, err) && write_scope(s, pre, m, err) &&
	          digest_end(s, out->digest, err);
	if (ok)
		fp_init(out, SY_FP_MUTATION_DOMAIN);
	return ok;
}

bool sy_fp_mutation(const sy_push_request *req, const sy_mutation *m, const char *user,
                    size_t user_len, sy_fingerprint *out, sy_error *err)
{
	sy_buf pre = SY_BUF_INIT;
	sink s = {.buf = NULL};
	bool ok = sy_fp_user_valid(user, user_len, err) &&
	          scope_prefix(&pre, req, user, user_len, err) &&
	          mutation_fp(&s, &pre, m, out, err);
	digest_free(&s);
	sy_buf_free(&pre);
	return ok;
}

bool sy_fp_push(const sy_push_request *req, const char *user, size_t user_len,
                sy_fingerprint *batch, sy_fingerprint *mutations, sy_error *err)
{
	return sy_fp_batch(req, user, user_len, batch, err) &&
	       sy_fp_mutations(req, user, user_len, mutations, err);
}

bool sy_fp_mutations(const sy_push_request *req, const char *user, size_t user_len,
                     sy_fingerprint *mutations, sy_error *err)
{
	sy_buf pre = SY_BUF_INIT;
	sink s = {.buf = NULL};
	bool ok = sy_fp_user_valid(user, user_len, err) &&
	          scope_prefix(&pre, req, user, user_len, err);
	/* One digest context for every mutation: a context costs an allocation and a free. */
	for (size_t i = 0; ok && i < req->mutation_count; i++)
		ok = mutation_fp(&s, &pre, &req->mutations[i], &mutations[i], err);
	digest_free(&s);
	sy_buf_free(&pre);
	return ok;
}

void sy_fp_hex(const uint8_t digest[SY_FP_DIGEST_LEN], char hex[SY_FP_HEX_LEN + 1])
{
	sy_hex_encode(hex, digest, SY_FP_DIGEST_LEN);
	hex[SY_FP_HEX_LEN] = '\0';
}

bool sy_fp_from_hex(const char *hex, size_t len, uint8_t digest[SY_FP_DIGEST_LEN])
{
	if (hex == NULL || len != SY_FP_HEX_LEN)
		return false;
	for (size_t i = 0; i < SY_FP_DIGEST_LEN; i++) {
		int hi = sy_hex_digit(hex[2 * i]), lo = sy_hex_digit(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		digest[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

bool sy_fp_matches(const sy_fingerprint *fp, const char *algorithm, int version, const char *domain,
                   const uint8_t *digest, size_t digest_len)
{
	return algorithm != NULL && domain != NULL && digest != NULL &&
	       strcmp(fp->algorithm, algorithm) == 0 && fp->version == version &&
	       strcmp(fp->domain, domain) == 0 && digest_len == SY_FP_DIGEST_LEN &&
	       memcmp(fp->digest, digest, SY_FP_DIGEST_LEN) == 0;
}

bool sy_fp_equal(const sy_fingerprint *a, const sy_fingerprint *b)
{
	return sy_fp_matches(a, b->algorithm, b->version, b->domain, b->digest, SY_FP_DIGEST_LEN);
}

static int compare_members(const void *pa, const void *pb)
{
	const sy_json_member *a = *(const sy_json_member *const *)pa;
	const sy_json_member *b = *(const sy_json_member *const *)pb;
	return sy_manifest_name_compare(a->key, a->key_len, b->key, b->key_len);
}

bool sy_fp_row_preimage(const sy_schema_ref *outcome_schema, const char *table_id, size_t table_len,
                        const char *pk_field, size_t pk_field_len, const sy_json *pk_value,
                        const sy_json *server_row, sy_buf *out, sy_error *err)
{
	const sy_json_member **fields = NULL;
	if (server_row == NULL || server_row->type != SY_JSON_OBJECT)
		return sy_error_set(err, SY_ERR_INVALID_REQUEST,
		                    "row: server_row is not an object");
	if (pk_value == NULL ||
	    (pk_value->type != SY_JSON_STRING && pk_value->type != SY_JSON_NUMBER))
		return sy_error_set(err, SY_ERR_INVALID_REQUEST,
		                    "row: pk value is not a string or a number");
	size_t n = server_row->u.object.count;
	if (n > 0) {
		fields = sy_calloc(n, sizeof *fields);
		if (fields == NULL)
			return nomem(err);
		for (size_t i = 0; i < n; i++)
			fields[i] = &server_row->u.object.members[i];
		/* doc/contract.md#row-checksum: fields sorted by UTF-8 bytes, not JCS's UTF-16
		 * member order */
		qsort(fields, n, sizeof *fields, compare_members);
	}
	for (size_t i = 0; i < n; i++) {
		const sy_json_member *f = fields[i];
		if (i > 0 && compare_members(&fields[i - 1], &fields[i]) == 0) {
			sy_error_set(err, SY_ERR_INVALID_REQUEST, "row: field repeated");
			goto fail;
		}
		if (f->key_len == pk_field_len && memcmp(f->key, pk_field, pk_field_len) == 0) {
			sy_error_set(err, SY_ERR_INVALID_REQUEST,
			             "row: server_row holds the pk field");
			goto fail;
		}
	}
	if (!sy_buf_puts(out, "[\"row-v1\",") || !sy_push_write_schema_ref(out, outcome_schema) ||
	    !sy_buf_putc(out, ',') || !sy_jcs_write_string(out, table_id, table_len) ||
	    !sy_buf_puts(out, ",[") || !sy_jcs_write_string(out, pk_field, pk_field_len) ||
	    !sy_buf_putc(out, ',')) {
		nomem(err);
		goto fail;
	}
	if (!sy_jcs_write(out, pk_value, err))
		goto fail;
	if (!sy_buf_puts(out, "],[")) {
		nomem(err);
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		const sy_json_member *f = fields[i];
		if ((i > 0 && !sy_buf_putc(out, ',')) || !sy_buf_putc(out, '[') ||
		    !sy_jcs_write_string(out, f->key, f->key_len) || !sy_buf_putc(out, ',')) {
			nomem(err);
			goto fail;
		}
		if (!sy_jcs_write(out, f->value, err))
			goto fail;
		if (!sy_buf_putc(out, ']')) {
			nomem(err);
			goto fail;
		}
	}
	if (!sy_buf_puts(out, "]]")) {
		nomem(err);
		goto fail;
	}
	sy_free(fields);
	return true;
fail:
	sy_free(fields);
	return false;
}

bool sy_fp_row_checksum(const sy_schema_ref *outcome_schema, const char *table_id, size_t table_len,
                        const char *pk_field, size_t pk_field_len, const sy_json *pk_value,
                        const sy_json *server_row, char hex[SY_FP_HEX_LEN + 1], sy_error *err)
{
	sy_buf pre = SY_BUF_INIT;
	sink s = {.buf = NULL};
	uint8_t digest[SY_FP_DIGEST_LEN];
	bool ok = sy_fp_row_preimage(outcome_schema, table_id, table_len, pk_field, pk_field_len,
	                             pk_value, server_row, &pre, err) &&
	          digest_begin(&s, SY_FP_ROW_DOMAIN, err) && sink_put(&s, pre.data, pre.len, err) &&
	          digest_end(&s, digest, err);
	digest_free(&s);
	sy_buf_free(&pre);
	if (ok)
		sy_fp_hex(digest, hex);
	return ok;
}
