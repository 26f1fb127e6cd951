# synchro-fcgi: the preforked FastCGI master and its responders (router, routes, push,
# admission control, metrics). SQL lives in src/store only.
sbin_PROGRAMS += src/fcgi/synchro-fcgi
src_fcgi_synchro_fcgi_SOURCES = \
	src/fcgi/main.c \
	src/fcgi/prefork.c src/fcgi/prefork.h \
	src/fcgi/http.c src/fcgi/http.h \
	src/fcgi/responder.c src/fcgi/responder.h \
	src/fcgi/router.c \
	src/fcgi/routes.c \
	src/fcgi/push.c \
	src/fcgi/admission.c src/fcgi/admission.h \
	src/fcgi/metrics.c src/fcgi/metrics.h
src_fcgi_synchro_fcgi_CFLAGS = $(AM_CFLAGS) $(LIBPQ_CFLAGS)
src_fcgi_synchro_fcgi_LDADD = src/common/libsycommon.la src/store/libsystore.la \
	src/core/libsycore.la $(FCGI_LIBS) $(LIBPQ_LIBS) $(CRYPTO_LIBS) $(UUID_LIBS) -lm

# Admission control across processes (fork, shared memory, racing announcers).
check_PROGRAMS += tests/unit/test_admission
TESTS += tests/unit/test_admission
tests_unit_test_admission_SOURCES = tests/unit/test_admission.c src/fcgi/admission.c \
	src/fcgi/metrics.c
tests_unit_test_admission_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_admission_LDADD = $(UNIT_LDADD)

# synchro-fcgi(8) documents every [fcgi] option (the table is src/store/config.c).
check_PROGRAMS += tests/unit/test_fcgi_man
TESTS += tests/unit/test_fcgi_man
tests_unit_test_fcgi_man_SOURCES = tests/unit/test_fcgi_man.c
tests_unit_test_fcgi_man_CFLAGS = $(UNIT_CFLAGS) $(LIBPQ_CFLAGS)
tests_unit_test_fcgi_man_LDADD = src/store/libsystore.la $(UNIT_LDADD) $(LIBPQ_LIBS)

dist_man_MANS += doc/synchro-fcgi.8

# Examples installed with the documentation: the web server snippets; the systemd units
# go to $(systemdsystemunitdir) (configure --with-systemdsystemunitdir).
nginxexampledir = $(docdir)/examples/nginx
dist_nginxexample_DATA = conf/nginx/synchro.conf
apacheexampledir = $(docdir)/examples/apache
dist_apacheexample_DATA = conf/apache/synchro-proxy-fcgi.conf conf/apache/synchro-fcgid.conf
fcgiunitdir = $(systemdsystemunitdir)
dist_fcgiunit_DATA = conf/systemd/synchro-fcgi.service conf/systemd/synchro-fcgi.socket
