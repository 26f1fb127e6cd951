# The HTTP fuzzer against the whole stack: PostgreSQL, synchro-walsync,
# synchro-fcgi and nginx; a short run in make check (about a minute), the long one with
# contrib/check --fuzz-http N. It skips (exit 77) without a PostgreSQL server or nginx.
if HAVE_PG_SERVER
TESTS += tests/fuzz/test_http_fuzz.pgt
endif
EXTRA_DIST += tests/fuzz/test_http_fuzz.pgt tests/fuzz/http_fuzz.py
