/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sha256.h: SHA-256 for the core and the client (src/core/sha256.c). It is a private header
 * of libsynchro and libsynchro-client, not installed.
 *
 * Notes: Natively it is OpenSSL's. Built with SY_SHA256_PORTABLE, it is the portable
 * implementation below. The WebAssembly build uses that, since it has no OpenSSL. The
 * portable functions are always built. So the native unit tests check them against the
 * same vectors (tests/unit/test_sha256.c).
 */
#ifndef SYNCHRO_SHA256_H
#define SYNCHRO_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SY_SHA256_LEN 32

/* FIPS 180-4 SHA-256 state of the portable implementation. */
typedef struct {
	uint32_t h[8];
	uint64_t bytes;         /* message length so far */
	unsigned char blk[64];  /* the partial block */
	size_t fill;            /* octets in blk */
} sy_sha256_portable;

void sy_sha256_portable_begin(sy_sha256_portable *s);
void sy_sha256_portable_add(sy_sha256_portable *s, const void *p, size_t n);
void sy_sha256_portable_end(sy_sha256_portable *s, uint8_t out[SY_SHA256_LEN]);

/*
 * The digest the build selected. Zero-initialize a context (SY_SHA256_INIT) before its
 * first begin; begin again reuses it for a new digest; release frees what it holds.
 * begin, add and end return false only when OpenSSL failed (out of memory).
 */
typedef struct {
	void *evp; /* EVP_MD_CTX, natively; NULL in the portable build */
	sy_sha256_portable p;
} sy_sha256_ctx;
#define SY_SHA256_INIT {0}

bool sy_sha256_begin(sy_sha256_ctx *s);
bool sy_sha256_add(sy_sha256_ctx *s, const void *p, size_t n);
bool sy_sha256_end(sy_sha256_ctx *s, uint8_t out[SY_SHA256_LEN]);
void sy_sha256_release(sy_sha256_ctx *s);
/* SHA-256 of one buffer. */
bool sy_sha256(const void *p, size_t n, uint8_t out[SY_SHA256_LEN]);

#endif
