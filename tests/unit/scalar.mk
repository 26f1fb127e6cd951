# CUnit suites owned by the scalar work; included from Makefile.am.
UNIT_TESTS += tests/unit/test_scalar tests/unit/test_types
check_PROGRAMS += tests/unit/test_scalar tests/unit/test_types
TESTS += tests/unit/test_scalar tests/unit/test_types

tests_unit_test_scalar_SOURCES = tests/unit/test_scalar.c
tests_unit_test_scalar_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_scalar_LDADD = $(UNIT_LDADD)

tests_unit_test_types_SOURCES = tests/unit/test_types.c tests/unit/test_types.h \
	tests/unit/test_types_pg.c
tests_unit_test_types_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_types_LDADD = $(UNIT_LDADD)
