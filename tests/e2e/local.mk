# End-to-end suites: synchro-fcgi behind real nginx and Apache, driven over HTTP, each run
# inside a throwaway PostgreSQL by tests/integration/with-pg (the .pgt extension). They skip
# (exit 77) without a PostgreSQL server or nginx; the Apache cases skip without apache2.
# tests/e2e/synchro_e2e.py is the shared stack harness.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_server.pgt
endif
EXTRA_DIST += tests/e2e/synchro_e2e.py tests/e2e/test_server.pgt

# Live updates through nginx's nchan module (conf/nginx/synchro-live.conf): who hears what,
# the publisher's address, walsync's publishing and its metrics. Skips without nchan.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_live.pgt
endif
EXTRA_DIST += tests/e2e/test_live.pgt tests/e2e/live_stack.py

# Identity (conf/nginx, conf/apache): the user from SYNCHRO_USER alone, set once by the web
# server; the parameter twice, a Synchro-User header, auth_request beside a Basic header, and
# the caller's Authorization header (an echo responder shows what reaches the responders).
if HAVE_PG_SERVER
TESTS += tests/e2e/test_identity.pgt
endif
EXTRA_DIST += tests/e2e/test_identity.pgt

# Bearer tokens (doc/operations.md "Bearer tokens", tests/e2e/token_stack.py): nginx with
# auth_request to a token endpoint, Apache with mod_auth_openidc and JWTs signed RS256 and
# ES256; refused tokens answered 401 before any responder; a token renewed mid-sync.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_tokens.pgt
endif
EXTRA_DIST += tests/e2e/test_tokens.pgt tests/e2e/token_stack.py

# Failing closed: a request body's deadline (408, the responder free again; directly and behind
# Apache's mod_proxy_fcgi, which streams bodies), a TCP listen address other than loopback.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_fail_closed.pgt
endif
EXTRA_DIST += tests/e2e/test_fail_closed.pgt

# What nginx and Apache answer themselves on Synchro's locations (a bad Content-Length, a URI
# or a header too large, a refused method, the responders stopped), in the protocol's form.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_web_errors.pgt
endif
EXTRA_DIST += tests/e2e/test_web_errors.pgt

# Pull and rebuild (doc/contract.md#pull-and-rebuild) with synchro-walsync running
# (tests/e2e/pull_suite.py): test_pull_stream: direct writes, push echoes, commit order, convergence
# for alice and bob,
#   rebuild invalidation, the gates, the read-your-writes wait, superseded and invisible entries;
# test_pull_expiry: changelog compact, a broken table, publishes, damaged entries, a dropped slot.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_pull_stream.pgt tests/e2e/test_pull_expiry.pgt
endif
EXTRA_DIST += tests/e2e/pull_suite.py tests/e2e/test_pull_stream.pgt tests/e2e/test_pull_expiry.pgt

# test_pull_scopes: tables read by members: shares, removals, later rows never delivered, moves.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_pull_scopes.pgt
endif
EXTRA_DIST += tests/e2e/test_pull_scopes.pgt

# test_scopes_walsync: walsync's scope effects through pull: a change after a share comes after the
# share's entry; the mirror survives a restart and a takeover.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_scopes_walsync.pgt
endif
EXTRA_DIST += tests/e2e/test_scopes_walsync.pgt

# test_scopes_churn: randomized shares, removals and moves with concurrent pulls and pushes; no
# row outside a user's scope at a pull's position, every device equal to the server, no rebuild.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_scopes_churn.pgt
endif
EXTRA_DIST += tests/e2e/test_scopes_churn.pgt

# test_client_scopes: synchro-cli with shared lists: a share enters a device's store, a removal
# leaves it with the device's intent kept, explained and discarded, no rebuild.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_client_scopes.pgt
endif
EXTRA_DIST += tests/e2e/test_client_scopes.pgt

# test_rebuild_members: a rebuild of 20,000 rows read by members, without table statistics,
# takes at most a few times the same rebuild with them.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_rebuild_members.pgt
endif
EXTRA_DIST += tests/e2e/test_rebuild_members.pgt

# test_pull_members: a pull that brings a share of 10,000 rows, without table statistics,
# takes at most a few times the same pull with them.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_pull_members.pgt
endif
EXTRA_DIST += tests/e2e/test_pull_members.pgt

# Pull and rebuild from a streaming replica ([database] pull_conninfo) started by the test
# (tests/e2e/pg_standby.py: pg_basebackup -R): served by the caught-up replica, replay paused
# (read-your-writes, cursors, retirement from the primary), the replica stopped and started
# mid-run, a rebuild whose replica lags between pages.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_pull_replica.pgt
endif
EXTRA_DIST += tests/e2e/pg_standby.py tests/e2e/test_pull_replica.pgt

# Failover (doc/operations.md "Failover"): a synchronous standby started by the test, every
# process on one multi-host conninfo (target_session_attrs=read-write); clients push and pull
# while the primary is stopped and the standby promoted; every acknowledged push once in the new
# primary's ledger, every client rebuilt and equal to its rows; prints the failover window.
# test_failover_fence: the same with the old primary made read-only and left running (25006).
if HAVE_PG_SERVER
TESTS += tests/e2e/test_failover.pgt tests/e2e/test_failover_fence.pgt
endif
EXTRA_DIST += tests/e2e/failover_stack.py tests/e2e/test_failover.pgt \
	tests/e2e/test_failover_fence.pgt

# Push (doc/contract.md#push) through nginx and through Apache (tests/e2e/push_suite.py): the
# operation x row-state matrix (test_push_matrix), every HTTP dispatch row (test_push_dispatch),
# replay and response loss (test_push_replay), concurrency and atomic groups
# (test_push_concurrency), 429, 503 and schema evolution (test_push_capacity).
# tests/e2e/push_check.py: RFC 8785 and the field rules of doc/contract.md#outcome-field-rules
# (validator).
if HAVE_PG_SERVER
TESTS += tests/e2e/test_push_matrix.pgt tests/e2e/test_push_dispatch.pgt \
	tests/e2e/test_push_replay.pgt tests/e2e/test_push_concurrency.pgt \
	tests/e2e/test_push_capacity.pgt
endif
EXTRA_DIST += tests/e2e/push_check.py tests/e2e/push_suite.py tests/e2e/test_push_matrix.pgt \
	tests/e2e/test_push_dispatch.pgt tests/e2e/test_push_replay.pgt \
	tests/e2e/test_push_concurrency.pgt tests/e2e/test_push_capacity.pgt

# The push's write policy through membership (one and two hops), and rows outside the
# caller's scope answered as missing ones (test_push_scopes).
if HAVE_PG_SERVER
TESTS += tests/e2e/test_push_scopes.pgt
endif
EXTRA_DIST += tests/e2e/test_push_scopes.pgt

# The database's disk full (tests/e2e/pg_disk.py: the tables and indexes on a small tmpfs
# tablespace, filled until ENOSPC, then freed): pushes answer 503 and commit nothing, walsync
# retries without skipping a change, reads answer; once freed the same batches apply once and
# another client converges. Skips (77) when mount is not permitted.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_disk_full.pgt
endif
EXTRA_DIST += tests/e2e/pg_disk.py tests/e2e/test_disk_full.pgt

# synchroctl status (synchroctl(1) "STATUS") against the stack with walsync leader and standby:
# exit statuses, --json members, the human form's lines, counts after pushes, lag, roles.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_status.pgt
endif
EXTRA_DIST += tests/e2e/test_status.pgt

# The stack as production runs it: least-privilege login roles (contrib/example/roles.sql),
# PgBouncer in transaction pooling between the responders and PostgreSQL, no value in a log.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_stack.pgt
endif
EXTRA_DIST += tests/e2e/test_stack.pgt contrib/example/roles.sql contrib/example/grants.sql

# What a sysadmin sees: /metrics of the responders and synchro-walsync's metrics file, each
# counter's change checked against real requests; promtool check metrics on both; the names
# contrib/grafana and contrib/prometheus use exist in them.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_metrics.pgt
endif
EXTRA_DIST += tests/e2e/test_metrics.pgt

# contrib/bench/push's references (doc/performance.md): the peer (express + pg, when node is
# installed) and the limit "trivial + same writes" answer as the bench counts them, and
# contrib/bench/push/run completes one short round; no timing is asserted.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_bench_push.pgt
endif
EXTRA_DIST += tests/e2e/test_bench_push.pgt

# contrib/bench/live (doc/performance.md "Live updates"): every latency on one clock and never
# negative, each notification matched to its write by its cursor, and make bench-live as
# printed for a few changes; no timing is asserted. Skips without nchan.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_bench_live.pgt
endif
EXTRA_DIST += tests/e2e/test_bench_live.pgt

# Every command README shows, run as printed (contrib/quickstart with make check's build, the
# examples it prints, README's lines after it, the offline tools).
if HAVE_PG_SERVER
TESTS += tests/e2e/test_readme.sh
endif
EXTRA_DIST += tests/e2e/test_readme.sh
