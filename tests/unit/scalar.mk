# CUnit suites owned by the scalar work; included from Makefile.am.
UNIT_TESTS += tests/unit/test_scalar
check_PROGRAMS += tests/unit/test_scalar
TESTS += tests/unit/test_scalar

tests_unit_test_scalar_SOURCES = tests/unit/test_scalar.c
tests_unit_test_scalar_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_scalar_LDADD = $(UNIT_LDADD)
