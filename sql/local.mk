# The database side: numbered migrations, the install script kept in step with them, and the
# C table of migrations synchroctl embeds (src/store/migrations.h), generated into the build
# tree by sql/embed.sh.
SQL_MIGRATIONS = \
	sql/migrations/0001_init.sql \
	sql/migrations/0002_version_fence.sql \
	sql/migrations/0003_publication.sql \
	sql/migrations/0004_push.sql \
	sql/migrations/0005_walsync.sql \
	sql/migrations/0006_pull.sql \
	sql/migrations/0007_push_lookup.sql \
	sql/migrations/0008_cheaper_checks.sql \
	sql/migrations/0009_client_progress.sql \
	sql/migrations/0010_response_lz4.sql \
	sql/migrations/0011_ledger_batch_check.sql \
	sql/migrations/0012_ledger_batch_check_once.sql \
	sql/migrations/0013_push_function.sql \
	sql/migrations/0014_stream_continuity.sql \
	sql/migrations/0015_verified_messages.sql \
	sql/migrations/0016_fence_owner_column.sql \
	sql/migrations/0017_ledger_guards_in_module.sql \
	sql/migrations/0018_push_counts.sql \
	sql/migrations/0019_request_digest.sql \
	sql/migrations/0020_version_fence_in_c.sql \
	sql/migrations/0021_fence_rules_in_module.sql \
	sql/migrations/0022_scopes.sql \
	sql/migrations/0023_verified_scope_changes.sql

# Link (as nodist_*_SOURCES) into whatever runs the migrations.
SQL_MIGRATIONS_C = src/store/sql_migrations.c

EXTRA_DIST += sql/embed.sh sql/check-install.sh $(SQL_MIGRATIONS)
BUILT_SOURCES += $(SQL_MIGRATIONS_C)
CLEANFILES += $(SQL_MIGRATIONS_C)
noinst_HEADERS += src/store/migrations.h

$(SQL_MIGRATIONS_C): $(srcdir)/sql/local.mk $(srcdir)/sql/embed.sh $(SQL_MIGRATIONS:%=$(srcdir)/%)
	$(AM_V_GEN)$(MKDIR_P) src/store && \
	$(SHELL) $(srcdir)/sql/embed.sh $(SQL_MIGRATIONS:%=$(srcdir)/%) >$@.tmp && mv $@.tmp $@

# For psql users and packagers: $(pkgdatadir)/sql/install.sql; doc/operations.md says how.
sqldir = $(pkgdatadir)/sql
dist_sql_DATA = sql/install.sql
dist_doc_DATA += doc/operations.md

# sql/install.sql is kept in the source tree (packagers ship it for psql); this rebuilds it
# after a migration changes, and sql/check-install.sh (a test) fails while it is stale.
update-install-sql:
	$(SHELL) $(srcdir)/sql/embed.sh --install $(SQL_MIGRATIONS:%=$(srcdir)/%) \
	  >$(srcdir)/sql/install.sql
.PHONY: update-install-sql

TESTS += sql/check-install.sh
