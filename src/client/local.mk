# libsynchro-client and synchro-cli; see src/client/*.c and doc/client.md.
# The sources go into a convenience library the unit tests link statically (no
# libtool wrappers, so valgrind sees the real binary); the shared library
# exports only the public sy_client_* names of synchro/client.h.
noinst_LTLIBRARIES += src/client/libsyclient.la
src_client_libsyclient_la_SOURCES = \
	src/client/client_internal.h \
	src/client/client.c \
	src/client/client_store.c \
	src/client/client_rows.c \
	src/client/client_events.c \
	src/client/client_intent.c \
	src/client/client_normalize.c \
	src/client/client_seal.c \
	src/client/client_request.c \
	src/client/client_token.c \
	src/client/client_reconcile.c \
	src/client/client_pull.c \
	src/client/client_sync.c \
	src/client/client_inspect.c \
	src/client/client_query.c \
	src/client/client_visible.c \
	src/client/client_resolve.c \
	src/client/client_json.h \
	src/client/client_json.c \
	src/client/client_transport.c \
	src/client/client_live.c \
	src/client/client_curl.c
src_client_libsyclient_la_CFLAGS = $(AM_CFLAGS) $(SQLITE_CFLAGS) $(CURL_CFLAGS) \
	$(UUID_CFLAGS) $(CRYPTO_CFLAGS)
CLIENT_LIBS = src/client/libsyclient.la src/core/libsycore.la $(SQLITE_LIBS) $(CURL_LIBS) \
	$(UUID_LIBS) $(CRYPTO_LIBS) -lm

lib_LTLIBRARIES += src/libsynchro-client.la
src_libsynchro_client_la_SOURCES =
src_libsynchro_client_la_LIBADD = $(CLIENT_LIBS)
src_libsynchro_client_la_LDFLAGS = -version-info 0:0:0 -export-symbols-regex '^sy_client_'
pkginclude_HEADERS += src/include/synchro/client.h
pkgconfig_DATA += src/libsynchro-client.pc

# synchro-cli: over the same objects (linked statically, like the other programs).
bin_PROGRAMS += src/client/synchro-cli
src_client_synchro_cli_SOURCES = src/client/cli.c src/client/cli_read.c src/client/cli.h
src_client_synchro_cli_LDADD = $(CLIENT_LIBS)

# The example program of doc/client.md, linked against the shared library as an app
# would; tests/e2e/test_client.pgt runs it, tests/unit/test_client_doc checks the doc quotes it.
check_PROGRAMS += src/client/example_todo
src_client_example_todo_SOURCES = src/client/example_todo.c
src_client_example_todo_CFLAGS = $(AM_CFLAGS) $(UUID_CFLAGS)
src_client_example_todo_LDADD = src/libsynchro-client.la $(UUID_LIBS)
dist_man_MANS += doc/synchro-cli.1 doc/libsynchro-client.3
dist_doc_DATA += doc/client.md

