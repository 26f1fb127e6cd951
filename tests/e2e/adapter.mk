# Another adapter than synchro-fcgi: contrib/adapter/synchro_adapter.py (Python, psycopg2),
# the example of doc/protocol.md "Writing an adapter", served against a real PostgreSQL.
if HAVE_PG_SERVER
TESTS += tests/e2e/test_adapter.pgt
endif
EXTRA_DIST += tests/e2e/test_adapter.pgt contrib/adapter/synchro_adapter.py
