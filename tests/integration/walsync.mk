# Tests of synchro-walsync (included after tests/unit/local.mk and tests/integration/local.mk,
# whose variables they use).
# The stream's bytes and the messages' JSON, without a database.
UNIT_TESTS += tests/unit/test_pgoutput
check_PROGRAMS += tests/unit/test_pgoutput
TESTS += tests/unit/test_pgoutput
tests_unit_test_pgoutput_SOURCES = tests/unit/test_pgoutput.c src/walsync/pgoutput.c \
	src/walsync/walsync_fences.c
tests_unit_test_pgoutput_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_pgoutput_LDADD = $(UNIT_LDADD)
# The scope mirror in memory.
UNIT_TESTS += tests/unit/test_walsync_scopes
check_PROGRAMS += tests/unit/test_walsync_scopes
TESTS += tests/unit/test_walsync_scopes
tests_unit_test_walsync_scopes_SOURCES = tests/unit/test_walsync_scopes.c \
	src/walsync/walsync_scopes.c
tests_unit_test_walsync_scopes_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_walsync_scopes_LDADD = $(UNIT_LDADD)

# synchro-walsync processes against a throwaway PostgreSQL: changelog contents and order,
# epochs, takeover after kill -9 and SIGSTOP, crash before the flush confirmation.
check_PROGRAMS += tests/integration/test_walsync.pgt
TESTS += tests/integration/test_walsync.pgt
tests_integration_test_walsync_pgt_SOURCES = tests/integration/test_walsync.c \
	tests/integration/test_walsync_changelog.c tests/integration/test_walsync_lease.c \
	tests/integration/test_walsync_slot.c tests/integration/test_walsync_clock.c \
	tests/integration/test_walsync_scopes.c \
	tests/integration/walsync_suite.h
tests_integration_test_walsync_pgt_CFLAGS = $(PGT_CFLAGS)
tests_integration_test_walsync_pgt_LDADD = src/store/libsystore.la src/core/libsycore.la \
	$(PGT_LDADD) $(CRYPTO_LIBS) -lm
