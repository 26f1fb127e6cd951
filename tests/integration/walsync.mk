# Tests of synchro-walsync (included after tests/unit/local.mk and tests/integration/local.mk,
# whose variables they use).
# The stream's bytes and the messages' JSON, without a database.
UNIT_TESTS += tests/unit/test_pgoutput
check_PROGRAMS += tests/unit/test_pgoutput
TESTS += tests/unit/test_pgoutput
tests_unit_test_pgoutput_SOURCES = tests/unit/test_pgoutput.c src/walsync/pgoutput.c
tests_unit_test_pgoutput_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_pgoutput_LDADD = $(UNIT_LDADD)
