# libsynchro-client end to end: synchro-cli devices through nginx, synchro-fcgi,
# walsync and PostgreSQL; convergence, conflicts, lost responses, generation expiry, atomic
# failure, bob's isolation, SIGKILL during sync, a publish removing a queued field.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_client.pgt
endif
EXTRA_DIST += tests/e2e/test_client.pgt
