# The store behind a transaction pool ([database] pooler = transaction) against a throwaway
# PostgreSQL (tests/integration/with-pg): the store's settings with every statement, none left
# on the session, no prepared statement, the client_encoding guard, failures, a lost backend.
if HAVE_PG_SERVER
check_PROGRAMS += tests/integration/test_pooled.pgt
TESTS += tests/integration/test_pooled.pgt
endif
tests_integration_test_pooled_pgt_SOURCES = tests/integration/test_pooled.c
tests_integration_test_pooled_pgt_CFLAGS = $(PGT_CFLAGS)
tests_integration_test_pooled_pgt_LDADD = src/store/libsystore.la src/core/libsycore.la \
	$(PGT_LDADD) $(CRYPTO_LIBS) $(UUID_LIBS) -lm
