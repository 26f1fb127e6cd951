# CUnit suites of the pure core (no database). One program per module.
noinst_LTLIBRARIES += tests/unit/libsytest.la
tests_unit_libsytest_la_SOURCES = tests/unit/testutil.c tests/unit/testutil.h \
	tests/unit/testalloc.c
tests_unit_libsytest_la_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)

UNIT_LDADD = tests/unit/libsytest.la src/core/libsycore.la $(CUNIT_LIBS) $(CRYPTO_LIBS) -lm
UNIT_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS) -I$(top_srcdir)/tests/unit

# UNIT_TESTS: the suites contrib/check --valgrind runs under valgrind; every
# fragment appends its own to UNIT_TESTS, check_PROGRAMS and TESTS.
UNIT_TESTS += tests/unit/test_errors tests/unit/test_config
check_PROGRAMS += tests/unit/test_errors
TESTS += tests/unit/test_errors

tests_unit_test_errors_SOURCES = tests/unit/test_errors.c
tests_unit_test_errors_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_errors_LDADD = $(UNIT_LDADD)

UNIT_TESTS += tests/unit/test_buf
check_PROGRAMS += tests/unit/test_buf
TESTS += tests/unit/test_buf
tests_unit_test_buf_SOURCES = tests/unit/test_buf.c
tests_unit_test_buf_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_buf_LDADD = $(UNIT_LDADD)
