# Integration suites against a throwaway PostgreSQL: every *.pgt test runs under
# tests/integration/with-pg (PGT_LOG_COMPILER), which exits 77 (skip) without a server.
# Suites link PGT_LDADD (pgtest.h helpers + the CUnit runner of tests/unit) and use PGT_CFLAGS.
noinst_LTLIBRARIES += tests/integration/libpgtest.la
tests_integration_libpgtest_la_SOURCES = tests/integration/pgtest.c tests/integration/pgtest.h
tests_integration_libpgtest_la_CFLAGS = $(AM_CFLAGS) $(LIBPQ_CFLAGS) $(CUNIT_CFLAGS)

PGT_CFLAGS = $(AM_CFLAGS) $(LIBPQ_CFLAGS) $(CUNIT_CFLAGS) \
	-I$(top_srcdir)/tests/unit -I$(top_srcdir)/tests/integration
PGT_LDADD = tests/integration/libpgtest.la tests/unit/libsytest.la $(LIBPQ_LIBS) $(CUNIT_LIBS)

EXTRA_DIST += tests/integration/with-pg contrib/example/schema.sql contrib/example/manifest.json

# The database contract itself: migrations, fences, messages, grants, retirement.
check_PROGRAMS += tests/integration/test_sql.pgt
TESTS += tests/integration/test_sql.pgt
tests_integration_test_sql_pgt_SOURCES = tests/integration/test_sql.c \
	tests/integration/test_sql_fences.c tests/integration/test_sql_roles.c \
	tests/integration/sql_suite.h
nodist_tests_integration_test_sql_pgt_SOURCES = src/store/sql_migrations.c
tests_integration_test_sql_pgt_CFLAGS = $(PGT_CFLAGS)
tests_integration_test_sql_pgt_LDADD = $(PGT_LDADD)

# Migration 18 refuses a server module older than itself (synchro.module_abi), changing nothing.
if HAVE_PG_SERVER
TESTS += tests/integration/test_module_abi.pgt
endif
EXTRA_DIST += tests/integration/test_module_abi.pgt

# Membership scopes at publish: catalog refusals, scope triggers, their messages, the mirror.
if HAVE_PG_SERVER
TESTS += tests/integration/test_scopes.pgt
endif
EXTRA_DIST += tests/integration/test_scopes.pgt
