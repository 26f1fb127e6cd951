# The browser client in a real browser (Chromium via playwright-core): tests/web/test_web.pgt
# over the e2e stack; it skips without configure --enable-web, node or Chromium.
if HAVE_PG_SERVER
TESTS += tests/web/test_web.pgt
endif
EXTRA_DIST += tests/web/test_web.pgt tests/web/web_driver.mjs tests/web/page.html tests/web/no-opfs-worker.js
# doc/performance.md's make bench-client-web, one tiny round (no timing asserted)
if HAVE_PG_SERVER
TESTS += tests/web/test_bench_web.pgt
endif
EXTRA_DIST += tests/web/test_bench_web.pgt
