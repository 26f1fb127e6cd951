# CUnit suites of the rules the server module, the store and the programs share from the
# core (one implementation each): the dispatch order, the SQLSTATEs, the PostgreSQL types.
# Included from Makefile.am.
UNIT_TESTS += tests/unit/test_dispatch
check_PROGRAMS += tests/unit/test_dispatch
TESTS += tests/unit/test_dispatch
tests_unit_test_dispatch_SOURCES = tests/unit/test_dispatch.c
tests_unit_test_dispatch_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_dispatch_LDADD = $(UNIT_LDADD)
# The SQLSTATE table and the PostgreSQL type of each manifest type.
UNIT_TESTS += tests/unit/test_pg_rules
check_PROGRAMS += tests/unit/test_pg_rules
TESTS += tests/unit/test_pg_rules
tests_unit_test_pg_rules_SOURCES = tests/unit/test_pg_rules.c
tests_unit_test_pg_rules_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_pg_rules_LDADD = $(UNIT_LDADD)
