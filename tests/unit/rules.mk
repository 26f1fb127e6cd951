# CUnit suites of the rules the server module, the store and the programs share from the
# core (one implementation each): the dispatch order. Included from Makefile.am.
UNIT_TESTS += tests/unit/test_dispatch
check_PROGRAMS += tests/unit/test_dispatch
TESTS += tests/unit/test_dispatch
tests_unit_test_dispatch_SOURCES = tests/unit/test_dispatch.c
tests_unit_test_dispatch_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_dispatch_LDADD = $(UNIT_LDADD)
