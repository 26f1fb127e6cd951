# CUnit suites of libsynchro-client: the library against a fake server
# behind its transport hook (tests/unit/client_fake.c), no network.
UNIT_TESTS += tests/unit/test_client tests/unit/test_client_sync
check_PROGRAMS += tests/unit/test_client tests/unit/test_client_sync
TESTS += tests/unit/test_client tests/unit/test_client_sync
CLIENT_TEST_SOURCES = tests/unit/client_fake.c tests/unit/client_fake.h \
	tests/unit/client_harness.c tests/unit/client_harness.h
tests_unit_test_client_SOURCES = tests/unit/test_client.c $(CLIENT_TEST_SOURCES)
tests_unit_test_client_CFLAGS = $(UNIT_CFLAGS) $(SQLITE_CFLAGS)
tests_unit_test_client_LDADD = tests/unit/libsytest.la $(CLIENT_LIBS) $(CUNIT_LIBS)
tests_unit_test_client_sync_SOURCES = tests/unit/test_client_sync.c $(CLIENT_TEST_SOURCES)
tests_unit_test_client_sync_CFLAGS = $(UNIT_CFLAGS) $(SQLITE_CFLAGS)
tests_unit_test_client_sync_LDADD = tests/unit/libsytest.la $(CLIENT_LIBS) $(CUNIT_LIBS)

# The visible tables and the app's queries.
UNIT_TESTS += tests/unit/test_client_query
check_PROGRAMS += tests/unit/test_client_query
TESTS += tests/unit/test_client_query
tests_unit_test_client_query_SOURCES = tests/unit/test_client_query.c $(CLIENT_TEST_SOURCES)
tests_unit_test_client_query_CFLAGS = $(UNIT_CFLAGS) $(SQLITE_CFLAGS)
tests_unit_test_client_query_LDADD = tests/unit/libsytest.la $(CLIENT_LIBS) $(CUNIT_LIBS)

# doc/client.md and synchro-cli(1) in step with the code.
UNIT_TESTS += tests/unit/test_client_doc
check_PROGRAMS += tests/unit/test_client_doc
TESTS += tests/unit/test_client_doc
tests_unit_test_client_doc_SOURCES = tests/unit/test_client_doc.c
tests_unit_test_client_doc_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_client_doc_LDADD = tests/unit/libsytest.la $(CLIENT_LIBS) $(CUNIT_LIBS)

# Each allocation of a write-and-sync round fails in turn.
UNIT_TESTS += tests/unit/test_client_alloc
check_PROGRAMS += tests/unit/test_client_alloc
TESTS += tests/unit/test_client_alloc
tests_unit_test_client_alloc_SOURCES = tests/unit/test_client_alloc.c $(CLIENT_TEST_SOURCES)
tests_unit_test_client_alloc_CFLAGS = $(UNIT_CFLAGS) $(SQLITE_CFLAGS)
tests_unit_test_client_alloc_LDADD = tests/unit/libsytest.la $(CLIENT_LIBS) $(CUNIT_LIBS)
