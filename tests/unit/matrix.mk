# CUnit suites owned by the matrix work; included from Makefile.am.
UNIT_TESTS += tests/unit/test_matrix
check_PROGRAMS += tests/unit/test_matrix
TESTS += tests/unit/test_matrix

tests_unit_test_matrix_SOURCES = tests/unit/test_matrix.c
tests_unit_test_matrix_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_matrix_LDADD = $(UNIT_LDADD)
