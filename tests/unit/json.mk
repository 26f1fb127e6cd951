# CUnit suites owned by the json work; included from Makefile.am.
# test_json cross-checks values against json-c (tests only; libsynchro never links it).
UNIT_TESTS += tests/unit/test_json tests/unit/test_jcs tests/unit/test_jcs_exact
check_PROGRAMS += tests/unit/test_json tests/unit/test_jcs tests/unit/test_jcs_exact
TESTS += tests/unit/test_json tests/unit/test_jcs tests/unit/test_jcs_exact

tests_unit_test_json_SOURCES = tests/unit/test_json.c tests/unit/test_json.h \
	tests/unit/test_json_structure.c tests/unit/test_json_scalars.c tests/unit/test_json_build.c
tests_unit_test_json_CFLAGS = $(UNIT_CFLAGS) $(JSONC_CFLAGS)
tests_unit_test_json_LDADD = $(UNIT_LDADD) $(JSONC_LIBS)

tests_unit_test_jcs_SOURCES = tests/unit/test_jcs.c
tests_unit_test_jcs_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_jcs_LDADD = $(UNIT_LDADD)

# Compiles src/core/decimal.c itself (public names renamed) to reach its static helpers.
tests_unit_test_jcs_exact_SOURCES = tests/unit/test_jcs_exact.c
tests_unit_test_jcs_exact_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_jcs_exact_LDADD = $(UNIT_LDADD)

EXTRA_DIST += tests/vectors/jcs/numbers.txt tests/vectors/jcs/gen-numbers.js
