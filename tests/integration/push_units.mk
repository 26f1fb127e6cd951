# synchro.synchro_push's push units at the SQL level (doc/contract.md#push-units,
# doc/protocol.md), against a throwaway PostgreSQL (tests/integration/with-pg):
# 25000, trigger authority, unit modes, the row after its unit, no redo, deferred fences,
# deferrable pks, killed backends, grants, the pk rule of schema publish, the server log, the
# ledger rows written without an INSERT.
if HAVE_PG_SERVER
check_PROGRAMS += tests/integration/test_push_units.pgt
TESTS += tests/integration/test_push_units.pgt
endif
tests_integration_test_push_units_pgt_SOURCES = tests/integration/test_push_units.c \
	tests/integration/test_push_units_txn.c tests/integration/test_push_units_rows.c \
	tests/integration/test_push_units_races.c tests/integration/test_push_units_publish.c \
	tests/integration/test_push_units_direct.c \
	tests/integration/push_units_suite.h tests/integration/push_request.c \
	tests/integration/push_request.h
nodist_tests_integration_test_push_units_pgt_SOURCES = src/store/sql_migrations.c
tests_integration_test_push_units_pgt_CFLAGS = $(PGT_CFLAGS)
tests_integration_test_push_units_pgt_LDADD = src/store/libsystore.la src/core/libsycore.la \
	$(PGT_LDADD) $(CRYPTO_LIBS) $(UUID_LIBS) -lm
