# Unit suites of synchro-fcgi's parts (src/fcgi/local.mk builds the program).
UNIT_TESTS += tests/unit/test_inflight tests/unit/test_fcgi_man

# The gauge of pushes in flight across processes (fork, shared memory) and /metrics.
check_PROGRAMS += tests/unit/test_inflight
TESTS += tests/unit/test_inflight
tests_unit_test_inflight_SOURCES = tests/unit/test_inflight.c src/fcgi/inflight.c \
	src/fcgi/metrics.c src/fcgi/metrics_push.c
tests_unit_test_inflight_CFLAGS = $(UNIT_CFLAGS) $(LIBPQ_CFLAGS)
tests_unit_test_inflight_LDADD = $(UNIT_LDADD)

# synchro-fcgi(8) documents every [fcgi] option (the table is src/store/cfg.c).
check_PROGRAMS += tests/unit/test_fcgi_man
TESTS += tests/unit/test_fcgi_man
tests_unit_test_fcgi_man_SOURCES = tests/unit/test_fcgi_man.c
tests_unit_test_fcgi_man_CFLAGS = $(UNIT_CFLAGS) $(LIBPQ_CFLAGS)
tests_unit_test_fcgi_man_LDADD = src/store/libsystore.la $(UNIT_LDADD) $(LIBPQ_LIBS)
