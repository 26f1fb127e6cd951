# The browser client in a real browser (Chromium via playwright-core): tests/web/test_web.pgt
# (the API), tests/web/test_web_app.pgt (the example to-do app of contrib/example/web),
# tests/web/test_web_faults.pgt (the client under faults), tests/web/test_web_kill.pgt (a
# tab killed at random points of a sync), tests/web/test_web_tokens.pgt (bearer tokens
# behind nginx's auth_request) and tests/web/test_web_random.pgt (the visible tables under a
# random sequence) over the e2e stack; they skip without configure
# --enable-web, node or Chromium.
if HAVE_PG_SERVER
TESTS += tests/web/test_web.pgt tests/web/test_web_app.pgt tests/web/test_web_faults.pgt \
	tests/web/test_web_kill.pgt tests/web/test_web_tokens.pgt tests/web/test_web_random.pgt
endif
EXTRA_DIST += tests/web/test_web.pgt tests/web/web_driver.mjs tests/web/page.html tests/web/no-opfs-worker.js \
	tests/web/test_web_app.pgt tests/web/web_app_driver.mjs \
	contrib/example/web/index.html contrib/example/web/app.js contrib/example/web/app.css \
	contrib/example/web/todos.js contrib/example/web/nginx.conf \
	tests/web/web_browser.mjs tests/web/web_stack.py \
	tests/web/test_web_faults.pgt tests/web/web_faults_driver.mjs \
	tests/web/test_web_kill.pgt tests/web/web_kill_driver.mjs \
	tests/web/test_web_tokens.pgt tests/web/web_tokens_driver.mjs \
	tests/web/test_web_random.pgt tests/web/web_random_driver.mjs
# doc/performance.md's make bench-client-web, one tiny round (no timing asserted)
if HAVE_PG_SERVER
TESTS += tests/web/test_bench_web.pgt
endif
EXTRA_DIST += tests/web/test_bench_web.pgt
# tests/web/test_web_lists.pgt: the example app's shared lists in two browsers (rename,
# delete, leave, who a list is shared with).
if HAVE_PG_SERVER
TESTS += tests/web/test_web_lists.pgt
endif
EXTRA_DIST += tests/web/test_web_lists.pgt
# tests/web/test_web_scopes.pgt: a shared list leaves bob's browser store and live query when
# alice removes him; his intent is kept, explained and discarded.
if HAVE_PG_SERVER
TESTS += tests/web/test_web_scopes.pgt
endif
EXTRA_DIST += tests/web/test_web_scopes.pgt tests/web/web_scopes_driver.mjs
