# Unit suites of synchro-fcgi's parts (src/fcgi/local.mk builds the program).
UNIT_TESTS += tests/unit/test_admission tests/unit/test_fcgi_man

# Admission control across processes (fork, shared memory, racing announcers).
check_PROGRAMS += tests/unit/test_admission
TESTS += tests/unit/test_admission
tests_unit_test_admission_SOURCES = tests/unit/test_admission.c src/fcgi/admission.c \
	src/fcgi/metrics.c
tests_unit_test_admission_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_admission_LDADD = $(UNIT_LDADD)

# synchro-fcgi(8) documents every [fcgi] option (the table is src/store/cfg.c).
check_PROGRAMS += tests/unit/test_fcgi_man
TESTS += tests/unit/test_fcgi_man
tests_unit_test_fcgi_man_SOURCES = tests/unit/test_fcgi_man.c
tests_unit_test_fcgi_man_CFLAGS = $(UNIT_CFLAGS) $(LIBPQ_CFLAGS)
tests_unit_test_fcgi_man_LDADD = src/store/libsystore.la $(UNIT_LDADD) $(LIBPQ_LIBS)
