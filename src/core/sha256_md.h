/* SPDX-License-Identifier: BSD-2-Clause */
/* The core's one SHA-256 implementation handle (fingerprint.c). Private to the core. */
#ifndef SY_CORE_SHA256_MD_H
#define SY_CORE_SHA256_MD_H

#include <openssl/evp.h>

/*
 * SHA-256, fetched once per process and kept (borrowed: never freed). With OpenSSL 3,
 * initializing a digest from EVP_sha256() fetches the implementation again each time.
 */
const EVP_MD *sy_core_sha256(void);

#endif
