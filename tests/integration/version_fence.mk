# The version fence in C (migration 20, src/pg/version_fence.c) beside the plpgsql function it
# replaced, over generated writes in two databases of a throwaway PostgreSQL
# (tests/integration/with-pg): the same errors, fences and decoded WAL, byte for byte.
if HAVE_PG_SERVER
check_PROGRAMS += tests/integration/test_version_fence.pgt
TESTS += tests/integration/test_version_fence.pgt
endif
tests_integration_test_version_fence_pgt_SOURCES = tests/integration/test_version_fence.c
nodist_tests_integration_test_version_fence_pgt_SOURCES = src/store/sql_migrations.c
tests_integration_test_version_fence_pgt_CFLAGS = $(PGT_CFLAGS)
tests_integration_test_version_fence_pgt_LDADD = $(PGT_LDADD)

# The fence's write when another transaction holds or writes the same fence: the same waits
# and refusals with the fence table as migrated (written directly) and with a statement
# trigger on it (the upsert statement).
if HAVE_PG_SERVER
check_PROGRAMS += tests/integration/test_version_fence_locks.pgt
TESTS += tests/integration/test_version_fence_locks.pgt
endif
tests_integration_test_version_fence_locks_pgt_SOURCES = tests/integration/test_version_fence_locks.c
nodist_tests_integration_test_version_fence_locks_pgt_SOURCES = src/store/sql_migrations.c
tests_integration_test_version_fence_locks_pgt_CFLAGS = $(PGT_CFLAGS)
tests_integration_test_version_fence_locks_pgt_LDADD = $(PGT_LDADD)
