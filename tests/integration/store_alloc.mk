# The store's connect, pull and rebuild handlers with each allocation failing in turn, against
# a throwaway PostgreSQL (tests/integration/with-pg). Included from Makefile.am.
if HAVE_PG_SERVER
check_PROGRAMS += tests/integration/test_store_alloc.pgt
TESTS += tests/integration/test_store_alloc.pgt
endif
tests_integration_test_store_alloc_pgt_SOURCES = tests/integration/test_store_alloc.c
nodist_tests_integration_test_store_alloc_pgt_SOURCES = src/store/sql_migrations.c
tests_integration_test_store_alloc_pgt_CFLAGS = $(PGT_CFLAGS)
tests_integration_test_store_alloc_pgt_LDADD = src/store/libsystore.la src/core/libsycore.la \
	$(PGT_LDADD) $(CRYPTO_LIBS) $(UUID_LIBS) -lm
