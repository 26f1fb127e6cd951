# CUnit suites owned by the matrix work; included from Makefile.am.
UNIT_TESTS += tests/unit/test_matrix tests/unit/test_outcome
check_PROGRAMS += tests/unit/test_matrix tests/unit/test_outcome
TESTS += tests/unit/test_matrix tests/unit/test_outcome

tests_unit_test_matrix_SOURCES = tests/unit/test_matrix.c
tests_unit_test_matrix_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_matrix_LDADD = $(UNIT_LDADD)

tests_unit_test_outcome_SOURCES = tests/unit/test_outcome.c tests/unit/test_outcome.h \
	tests/unit/test_outcome_encode.c tests/unit/test_outcome_validate.c
tests_unit_test_outcome_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_outcome_LDADD = $(UNIT_LDADD)
