/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * contrib/bench/core: reads, validates, canonicalizes and fingerprints a
 * 1,000-mutation push request of about 1 MiB, the way /v3/push does before it
 * touches the database, and reports MB/s of request bytes on one core.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "synchro/buf.h"
#include "synchro/fingerprint.h"
#include "synchro/jcs.h"
#include "synchro/manifest.h"
#include "synchro/push.h"

#include "../bench.h"

/* A deterministic pseudo-random uuid-shaped string. */
static void fake_uuid(unsigned long long seed, char out[37])
{
	unsigned long long x = seed * 0x9E3779B97F4A7C15ULL + 0x1234567ULL;
	static const char hex[] = "0123456789abcdef";
	int pos = 0;
	for (int i = 0; i < 32; i++) {
		if (i == 8 || i == 12 || i == 16 || i == 20)
			out[pos++] = '-';
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		out[pos++] = hex[x & 15];
	}
	out[14] = '4';
	out[pos] = '\0';
}

static bool build_request(sy_buf *b, size_t mutations, size_t label_len)
{
	const char *hash = "4f1c0b7d6e5a49382716afbecd0123456789abcdef0123456789abcdef012345";
	char id[37];
	fake_uuid(1, id);
	sy_buf_printf(b, "{\"client_id\":\"%s\",\"client_generation\":7,", id);
	fake_uuid(2, id);
	sy_buf_printf(
	        b, "\"batch_id\":\"%s\",\"schema\":{\"version\":3,\"hash\":\"%s\"},\"mutations\":[",
	        id, hash);
	char *label = malloc(label_len + 1);
	if (label == NULL)
		return false;
	for (size_t i = 0; i < label_len; i++)
		label[i] = (char)('a' + i % 26);
	label[label_len] = '\0';
	for (size_t i = 0; i < mutations; i++) {
		fake_uuid(100 + i, id);
		sy_buf_printf(
		        b,
		        "%s{\"mutation_id\":\"%s\",\"table\":\"item\",\"pk\":{\"field\":\"id\","
		        "\"value\":\"%zu\"},\"authored_schema\":{\"version\":3,\"hash\":\"%s\"},"
		        "\"operation\":\"insert\",\"client_version\":\"2026-11-29T10:11:12.123Z\","
		        "\"columns\":{\"label\":\"%s %zu\",\"qty\":%zu,\"price\":\"%zu.25\","
		        "\"weight\":%zu.5,\"due\":\"2026-12-01\",\"seen_at\":"
		        "\"2026-11-29T10:11:12.123456Z\",\"tags\":\"{\\\"a\\\":[1,2,3],\\\"b\\\":"
		        "\\\"x\\\"}\",\"blob\":\"AAECAwQFBgcICQ==\",\"ref\":\"%s\",\"ünïcødé\":"
		        "null}}",
		        i ? "," : "", id, i + 1, hash, label, i, i % 1000, i, i, id);
	}
	sy_buf_puts(b, "]}");
	free(label);
	return !b->failed;
}

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? atoi(argv[1]) : 200;
	sy_buf req = SY_BUF_INIT;
	if (!build_request(&req, 1000, 480)) {
		fputs("bench_core: out of memory\n", stderr);
		return 1;
	}
	sy_error err;
	sy_fingerprint batch;
	sy_fingerprint *muts = calloc(1000, sizeof *muts);
	double best = 1e9, total = 0;
	size_t canonical = 0;
	for (int it = 0; it < iterations; it++) {
		double t0 = bench_mono();
		sy_push_request *r = sy_push_parse(req.data, req.len, &err);
		if (r == NULL) {
			fprintf(stderr, "bench_core: request of %zu octets refused: %s\n", req.len,
			        err.message);
			return 1;
		}
		if (!sy_fp_push(r, "alice", 5, &batch, muts, &err)) {
			fprintf(stderr, "bench_core: fingerprint failed: %s\n", err.message);
			return 1;
		}
		if (it == 0) { /* the canonical size, outside the timed part */
			double t1 = bench_mono();
			sy_buf jcs = SY_BUF_INIT;
			if (!sy_jcs_write(&jcs, sy_json_doc_root(r->doc), &err)) {
				fprintf(stderr, "bench_core: JCS failed: %s\n", err.message);
				return 1;
			}
			canonical = jcs.len;
			sy_buf_free(&jcs);
			t0 += bench_mono() - t1;
		}
		sy_push_request_free(r);
		double dt = bench_mono() - t0;
		total += dt;
		if (dt < best)
			best = dt;
	}
	char hex[65];
	sy_fp_hex(batch.digest, hex);
	double mb = (double)req.len / 1e6;
	printf("request: %zu octets raw, %zu canonical, 1000 mutations\n", req.len, canonical);
	printf("iterations: %d\n", iterations);
	printf("best: %.3f ms per request = %.1f MB/s\n", best * 1e3, mb / best);
	printf("mean: %.3f ms per request = %.1f MB/s\n", total / iterations * 1e3,
	       mb / (total / iterations));
	printf("batch fingerprint: %s\n", hex);
	free(muts);
	sy_buf_free(&req);
	return 0;
}
