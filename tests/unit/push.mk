# CUnit suites owned by the push work; included from Makefile.am.
UNIT_TESTS += tests/unit/test_push tests/unit/test_fingerprint tests/unit/test_request_digest \
	tests/unit/test_sha256
check_PROGRAMS += tests/unit/test_push tests/unit/test_fingerprint tests/unit/test_request_digest \
	tests/unit/test_sha256
TESTS += tests/unit/test_push tests/unit/test_fingerprint tests/unit/test_request_digest \
	tests/unit/test_sha256
tests_unit_test_push_SOURCES = tests/unit/test_push.c
tests_unit_test_push_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_push_LDADD = $(UNIT_LDADD)
tests_unit_test_fingerprint_SOURCES = tests/unit/test_fingerprint.c
tests_unit_test_fingerprint_CFLAGS = $(UNIT_CFLAGS) $(CRYPTO_CFLAGS)
tests_unit_test_fingerprint_LDADD = $(UNIT_LDADD)
tests_unit_test_request_digest_SOURCES = tests/unit/test_request_digest.c
tests_unit_test_request_digest_CFLAGS = $(UNIT_CFLAGS) $(CRYPTO_CFLAGS)
tests_unit_test_request_digest_LDADD = $(UNIT_LDADD)
# The portable SHA-256 of the WebAssembly build, natively, against the same vectors.
tests_unit_test_sha256_SOURCES = tests/unit/test_sha256.c
tests_unit_test_sha256_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_sha256_LDADD = $(UNIT_LDADD)

# synchroctl canonicalize / fingerprint over the vectors (needs the built synchroctl).
TESTS += tests/unit/ctl_offline.sh
EXTRA_DIST += tests/unit/ctl_offline.sh tests/vectors/README tests/vectors/push
