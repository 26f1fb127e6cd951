# The PostgreSQL server module: synchro.so, behind the SQL function synchro.synchro_push
# (migration 13). Compiled against pg_config's server headers (as system headers: their
# warnings are PostgreSQL's), linked with the pure core. Installed into pgmoduledir
# (configure: pg_config --pkglibdir unless --with-pgmoduledir); make check loads it from
# the build tree (tests/integration/with-pg copies it into each throwaway cluster).
pgmodule_LTLIBRARIES = src/pg/synchro.la
src_pg_synchro_la_SOURCES = \
	src/pg/push_module.h \
	src/pg/push_entry.c \
	src/pg/push_errors.c \
	src/pg/push_memory.c \
	src/pg/push_statements.c \
	src/pg/push_schemas.c \
	src/pg/push_gates.c \
	src/pg/push_replay.c \
	src/pg/push_admission.c \
	src/pg/push_subxact.c \
	src/pg/push_terminal.c \
	src/pg/push_cas.c \
	src/pg/push_scope.c \
	src/pg/push_row_read.c \
	src/pg/push_unit.c \
	src/pg/push_atomic_group.c \
	src/pg/push_ledger.c \
	src/pg/ledger_insert.c \
	src/pg/ledger_guards.c \
	src/pg/version_fence.c \
	src/pg/scope_trigger.c \
	src/pg/fence_store.c \
	src/pg/push_index_probe.c
src_pg_synchro_la_CPPFLAGS = -D_GNU_SOURCE -I$(top_srcdir)/src/include -I$(top_srcdir)/src/pg \
	-isystem $(PG_INCLUDEDIR_SERVER)
# The core is compiled again for the module, without the sanitizers (SANITIZE_CFLAGS):
# postgres is not instrumented, and an instrumented library cannot be loaded into it.
src_pg_synchro_la_SOURCES += $(src_core_libsycore_la_SOURCES)
src_pg_synchro_la_CFLAGS = $(WARN_CFLAGS) $(CRYPTO_CFLAGS)
src_pg_synchro_la_LDFLAGS = -module -avoid-version -shared -no-undefined -Wl,--allow-shlib-undefined
src_pg_synchro_la_LIBADD = $(CRYPTO_LIBS) -lm
