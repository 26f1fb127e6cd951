# SPDX-License-Identifier: BSD-2-Clause
"""What the browser tests share on the Python side (tests/web/test_web*.pgt and the chaos
suite's browser device): where the web build, playwright-core and Chromium are, why a
browser test must skip, and an nginx site that also serves the built browser client and
the test page under /web/ (copied into the stack's directory, which nginx's user can read),
on the same origin as /v3/."""

import os
import shutil

import synchro_e2e as e2e

DIST = os.path.join(e2e.BUILD, "src/web/dist")
PLAYWRIGHT = os.path.join(e2e.BUILD, "src/web/node_modules/playwright-core")
CHROMIUM = "/usr/bin/chromium"
LOGDIR = os.path.join(e2e.BUILD, "tests/web")
PAGE_FILES = ("page.html", "no-opfs-worker.js")


def missing(name):
    """Why browser test name cannot run here (its SKIP line: no stack, no web build, no
    Chromium), or None."""
    return e2e.stack_missing(name) or browser_missing(name)


def browser_missing(name):
    """None when a browser test can run, else its SKIP line."""
    if not os.path.exists(os.path.join(DIST, "synchro-core.wasm")):
        return "%s: SKIP: the browser client is not built (configure --enable-web)" % name
    if not os.access(CHROMIUM, os.X_OK) or not shutil.which("node") or not os.path.isdir(PLAYWRIGHT):
        return "%s: SKIP: needs %s (Debian: chromium), node and playwright-core (the web build's npm)" % (name, CHROMIUM)
    return None


def with_web(site, directory, pages=None):
    """nginx site text site with a /web/ location serving DIST and the pages (paths; default
    the test page's files), copied into directory/web."""
    web = os.path.join(directory, "web")
    shutil.copytree(DIST, web, dirs_exist_ok=True)
    for f in pages or [os.path.join(e2e.SRC, "tests/web", f) for f in PAGE_FILES]:
        shutil.copy(f, web)
    for root, dirs, files in os.walk(web):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    location = ("    location /web/ {\n        alias %s/;\n"
                "        types { text/html html; text/javascript js mjs; application/wasm wasm;"
                " application/json json; }\n    }\n" % web)
    at = site.index("    location / {")
    return site[:at] + location + site[at:]


class WebStack(e2e.Stack):
    """The e2e stack whose nginx also serves the browser client under /web/."""

    def nginx_site(self):
        return with_web(super().nginx_site(), self.dir)
