/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sha256.c: SHA-256 (synchro/sha256.h). It holds a portable FIPS 180-4 implementation and
 * the digest the build selects.
 *
 * Layer: base of src/core (doc/hacking.md).
 * Notes: A native build uses OpenSSL's EVP, fetched once per process. SY_SHA256_PORTABLE
 * selects the portable one. The WebAssembly build uses it, since it has no OpenSSL.
 */
#include "config.h"

#include <string.h>

#include "synchro/sha256.h"

#ifndef SY_SHA256_PORTABLE
#include <openssl/evp.h>
#include <stdatomic.h>
#endif

static const uint32_t K[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2};

static uint32_t ror(uint32_t x, unsigned n)
{
	return x >> n | x << (32 - n);
}

static void compress(uint32_t h[8], const unsigned char *b)
{
	uint32_t w[64];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
		       (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ w[i - 15] >> 3;
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ w[i - 2] >> 10;
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	uint32_t a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] +
		              w[i];
		uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & bb) ^ (a & c) ^ (bb & c));
		hh = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = bb;
		bb = a;
		a = t1 + t2;
	}
	h[0] += a;
	h[1] += bb;
	h[2] += c;
	h[3] += d;
	h[4] += e;
	h[5] += f;
	h[6] += g;
	h[7] += hh;
}

void sy_sha256_portable_begin(sy_sha256_portable *s)
{
	static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	memcpy(s->h, iv, sizeof iv);
	s->bytes = 0;
	s->fill = 0;
}

void sy_sha256_portable_add(sy_sha256_portable *s, const void *p, size_t n)
{
	const unsigned char *in = p;
	s->bytes += n;
	if (s->fill > 0) {
		size_t take = 64 - s->fill < n ? 64 - s->fill : n;
		memcpy(s->blk + s->fill, in, take);
		s->fill += take;
		in += take;
		n -= take;
		if (s->fill < 64)
			return;
		compress(s->h, s->blk);
		s->fill = 0;
	}
	for (; n >= 64; in += 64, n -= 64)
		compress(s->h, in);
	if (n > 0)
		memcpy(s->blk, in, n);
	s->fill = n;
}

void sy_sha256_portable_end(sy_sha256_portable *s, uint8_t out[SY_SHA256_LEN])
{
	uint64_t bits = s->bytes * 8;
	s->blk[s->fill++] = 0x80;
	if (s->fill > 56) {
		memset(s->blk + s->fill, 0, 64 - s->fill);
		compress(s->h, s->blk);
		s->fill = 0;
	}
	memset(s->blk + s->fill, 0, 56 - s->fill);
	for (int i = 0; i < 8; i++)
		s->blk[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
	compress(s->h, s->blk);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(s->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)s->h[i];
	}
}

#ifdef SY_SHA256_PORTABLE

bool sy_sha256_begin(sy_sha256_ctx *s)
{
	sy_sha256_portable_begin(&s->p);
	return true;
}

bool sy_sha256_add(sy_sha256_ctx *s, const void *p, size_t n)
{
	sy_sha256_portable_add(&s->p, p, n);
	return true;
}

bool sy_sha256_end(sy_sha256_ctx *s, uint8_t out[SY_SHA256_LEN])
{
	sy_sha256_portable_end(&s->p, out);
	return true;
}

void sy_sha256_release(sy_sha256_ctx *s)
{
	(void)s;
}

#else

/*
 * The implementation, fetched once per process. With OpenSSL 3, initializing a digest
 * from EVP_sha256() fetches the implementation again each time (a locked lookup in the
 * provider store), which cost more than hashing a whole mutation; a request hashes one
 * digest per mutation.
 */
static const EVP_MD *sha256_md(void)
{
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
	static _Atomic(EVP_MD *) fetched;
	EVP_MD *md = atomic_load(&fetched);
	if (md != NULL)
		return md;
	md = EVP_MD_fetch(NULL, "SHA256", NULL);
	if (md == NULL)
		return EVP_sha256();
	EVP_MD *none = NULL;
	if (!atomic_compare_exchange_strong(&fetched, &none, md)) {
		EVP_MD_free(md);
		return none;
	}
	return md;
#else
	return EVP_sha256();
#endif
}

bool sy_sha256_begin(sy_sha256_ctx *s)
{
	if (s->evp == NULL)
		s->evp = EVP_MD_CTX_new();
	return s->evp != NULL && EVP_DigestInit_ex(s->evp, sha256_md(), NULL) == 1;
}

bool sy_sha256_add(sy_sha256_ctx *s, const void *p, size_t n)
{
	return EVP_DigestUpdate(s->evp, p, n) == 1;
}

bool sy_sha256_end(sy_sha256_ctx *s, uint8_t out[SY_SHA256_LEN])
{
	unsigned int n = 0;
	return EVP_DigestFinal_ex(s->evp, out, &n) == 1 && n == SY_SHA256_LEN;
}

void sy_sha256_release(sy_sha256_ctx *s)
{
	EVP_MD_CTX_free(s->evp);
	s->evp = NULL;
}

#endif

bool sy_sha256(const void *p, size_t n, uint8_t out[SY_SHA256_LEN])
{
	sy_sha256_ctx s = SY_SHA256_INIT;
	bool ok = sy_sha256_begin(&s) && sy_sha256_add(&s, p, n) && sy_sha256_end(&s, out);
	sy_sha256_release(&s);
	return ok;
}
