# The ledger's guards in the server module (migration 17, src/pg/ledger_guards.c) at the SQL
# level, against a throwaway PostgreSQL (tests/integration/with-pg): the row rules equal the
# CHECK constraints they replace, refusals name their rule, the epoch message's bytes, and
# search_path proofing of the triggers.
if HAVE_PG_SERVER
check_PROGRAMS += tests/integration/test_ledger_guards.pgt
TESTS += tests/integration/test_ledger_guards.pgt
endif
tests_integration_test_ledger_guards_pgt_SOURCES = tests/integration/test_ledger_guards.c
nodist_tests_integration_test_ledger_guards_pgt_SOURCES = src/store/sql_migrations.c
tests_integration_test_ledger_guards_pgt_CFLAGS = $(PGT_CFLAGS)
tests_integration_test_ledger_guards_pgt_LDADD = $(PGT_LDADD)
