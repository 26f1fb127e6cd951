# The store: the only code that speaks SQL (libpq), and synchro.conf (one table of options).
# Programs link src/store/libsystore.la and src/core/libsycore.la.
noinst_LTLIBRARIES += src/store/libsystore.la
src_store_libsystore_la_SOURCES = \
	src/store/store.c src/store/store.h \
	src/store/cfg.c src/store/cfg.h \
	src/store/conn.c src/store/conn.h \
	src/store/migrate.c src/store/migrate.h \
	src/store/schema.c src/store/schema.h \
	src/store/schema_pull_effect.c src/store/schema_pull_effect.h \
	src/store/schema_scopes.c src/store/schema_scopes.h \
	src/store/clients.c src/store/clients.h \
	src/store/ledger.c src/store/ledger.h \
	src/store/prepared.c src/store/prepared.h \
	src/store/session.c src/store/session.h \
	src/store/pull.h src/store/pull_internal.h \
	src/store/pull_cursor.c src/store/pull_cache.c src/store/pull_gates.c \
	src/store/pull_answer.c src/store/pull_page.c src/store/pull_statements.c src/store/rebuild.c \
	src/store/pull_broken.c src/store/pull_broken.h \
	src/store/changelog_compact.c \
	src/store/push_call.c src/store/push_call.h \
	src/store/read_target.c src/store/read_target.h \
	src/store/overview.c src/store/overview.h
# Generated from sql/migrations by sql/embed.sh (rule in sql/local.mk).
nodist_src_store_libsystore_la_SOURCES = src/store/sql_migrations.c
src_store_libsystore_la_CFLAGS = $(AM_CFLAGS) $(LIBPQ_CFLAGS)
# The store keeps time by src/common's one monotonic clock (src/common/clock.c).
src_store_libsystore_la_LIBADD = src/common/libsycommon.la $(LIBPQ_LIBS)

# The option table against synchro.conf(5) and conf/synchro.conf.sample, and the ini reader.
check_PROGRAMS += tests/unit/test_config
TESTS += tests/unit/test_config
tests_unit_test_config_SOURCES = tests/unit/test_config.c
tests_unit_test_config_CFLAGS = $(UNIT_CFLAGS) $(LIBPQ_CFLAGS)
tests_unit_test_config_LDADD = src/store/libsystore.la $(UNIT_LDADD) $(LIBPQ_LIBS)

dist_man_MANS += doc/synchroctl.1 doc/synchro.conf.5
sysconfexampledir = $(docdir)/examples
dist_sysconfexample_DATA = conf/synchro.conf.sample conf/walsync.conf.sample \
	conf/synchroctl.conf.sample

# synchroctl against a throwaway PostgreSQL (tests/integration/with-pg). The stub module
# stands in for an earlier release's server module (synchro_module_abi answers 19).
if HAVE_PG_SERVER
TESTS += tests/integration/test_ctl.pgt
check_LTLIBRARIES += tests/integration/module_abi_stub.la
tests_integration_module_abi_stub_la_SOURCES = tests/integration/module_abi_stub.c
tests_integration_module_abi_stub_la_CPPFLAGS = -D_GNU_SOURCE -isystem $(PG_INCLUDEDIR_SERVER)
tests_integration_module_abi_stub_la_CFLAGS = $(WARN_CFLAGS)
tests_integration_module_abi_stub_la_LDFLAGS = -module -avoid-version -shared -rpath $(abs_builddir) \
	-Wl,--allow-shlib-undefined
endif
EXTRA_DIST += tests/integration/test_ctl.pgt

# The push (synchro_push, src/pg, called by src/store/push_call.c) against a throwaway
# PostgreSQL, as the responders' role.
if HAVE_PG_SERVER
check_PROGRAMS += tests/integration/test_push.pgt
TESTS += tests/integration/test_push.pgt
endif
tests_integration_test_push_pgt_SOURCES = tests/integration/test_push.c \
	tests/integration/test_push_matrix.c tests/integration/test_push_replay.c \
	tests/integration/test_push_rules.c tests/integration/test_push_races.c \
	tests/integration/test_push_history.c tests/integration/push_suite.h \
	tests/integration/push_request.c tests/integration/push_request.h
nodist_tests_integration_test_push_pgt_SOURCES = src/store/sql_migrations.c
tests_integration_test_push_pgt_CFLAGS = $(PGT_CFLAGS)
tests_integration_test_push_pgt_LDADD = src/store/libsystore.la src/core/libsycore.la \
	$(PGT_LDADD) $(CRYPTO_LIBS) $(UUID_LIBS) -lm

# Pull cursors and rebuild page tokens (src/store/pull_cursor.c), no database.
UNIT_TESTS += tests/unit/test_pull_codec
check_PROGRAMS += tests/unit/test_pull_codec
TESTS += tests/unit/test_pull_codec
tests_unit_test_pull_codec_SOURCES = tests/unit/test_pull_codec.c
tests_unit_test_pull_codec_CFLAGS = $(UNIT_CFLAGS) $(LIBPQ_CFLAGS)
tests_unit_test_pull_codec_LDADD = src/store/libsystore.la $(UNIT_LDADD) $(LIBPQ_LIBS)
