# End-to-end suites: synchro-fcgi behind real nginx and Apache, driven over HTTP, each run
# inside a throwaway PostgreSQL by tests/integration/with-pg (the .pgt extension). They skip
# (exit 77) without a PostgreSQL server or nginx; the Apache cases skip without apache2.
# tests/e2e/synchro_e2e.py is the shared stack harness.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_server.pgt
endif
EXTRA_DIST += tests/e2e/synchro_e2e.py tests/e2e/test_server.pgt

# Pull and rebuild (PROTOCOL.md §7-8) with synchro-walsync running: direct writes, push echoes,
# commit order, convergence for alice and bob, rebuild invalidation, the gates, changelog compact.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_pull.pgt
endif
EXTRA_DIST += tests/e2e/test_pull.pgt

# Push (ADR 002) through nginx and through Apache: the operation x row-state matrix, every HTTP
# dispatch row, replay after response loss, concurrency, atomic groups, schema evolution.
# tests/e2e/push_check.py: RFC 8785 and the ADR's outcome field table (validator).
if HAVE_PG_SERVER
TESTS += tests/e2e/test_push.pgt
endif
EXTRA_DIST += tests/e2e/push_check.py tests/e2e/test_push.pgt

# The stack as production runs it: least-privilege login roles (contrib/example/roles.sql),
# PgBouncer in transaction pooling between the responders and PostgreSQL, no value in a log.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_stack.pgt
endif
EXTRA_DIST += tests/e2e/test_stack.pgt contrib/example/roles.sql contrib/example/grants.sql
