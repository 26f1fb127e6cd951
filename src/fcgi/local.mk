# synchro-fcgi: the preforked FastCGI master and its responders (accept loop, the route
# table, the routes, the in-flight gauge, metrics). SQL lives in src/store only.
sbin_PROGRAMS += src/fcgi/synchro-fcgi
src_fcgi_synchro_fcgi_SOURCES = \
	src/fcgi/fcgi_main.c \
	src/fcgi/prefork.c src/fcgi/prefork.h \
	src/fcgi/http.c src/fcgi/http.h \
	src/fcgi/responder.c src/fcgi/responder.h \
	src/fcgi/accept_loop.c src/fcgi/accept_loop.h \
	src/fcgi/router.c src/fcgi/router.h \
	src/fcgi/route_clients.c \
	src/fcgi/route_ops.c \
	src/fcgi/route_push.c \
	src/fcgi/route_pull.c \
	src/fcgi/inflight.c src/fcgi/inflight.h \
	src/fcgi/metrics.c src/fcgi/metrics.h \
	src/fcgi/metrics_push.c src/fcgi/metrics_push.h
src_fcgi_synchro_fcgi_CFLAGS = $(AM_CFLAGS) $(LIBPQ_CFLAGS)
src_fcgi_synchro_fcgi_LDADD = src/common/libsycommon.la src/store/libsystore.la \
	src/core/libsycore.la $(FCGI_LIBS) $(LIBPQ_LIBS) $(CRYPTO_LIBS) $(UUID_LIBS) -lm

dist_man_MANS += doc/synchro-fcgi.8

# Examples installed with the documentation: the web server snippets; the systemd units
# go to $(systemdsystemunitdir) (configure --with-systemdsystemunitdir).
nginxexampledir = $(docdir)/examples/nginx
dist_nginxexample_DATA = conf/nginx/synchro.conf conf/nginx/synchro-live.conf \
	conf/nginx/synchro-bearer.conf \
	conf/nginx/synchro-bearer-endpoint.conf
apacheexampledir = $(docdir)/examples/apache
dist_apacheexample_DATA = conf/apache/synchro-proxy-fcgi.conf conf/apache/synchro-fcgid.conf \
	conf/apache/synchro-oidc.conf
fcgiunitdir = $(systemdsystemunitdir)
dist_fcgiunit_DATA = conf/systemd/synchro-fcgi.service conf/systemd/synchro-fcgi.socket
