# SPDX-License-Identifier: BSD-2-Clause
"""What the browser tests (tests/web/*.pgt) share: where the web build, playwright-core and
Chromium are, the reason to skip when one is absent, and the e2e stack whose nginx also
serves the browser client and the test page under /web/."""

import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../e2e"))
import synchro_e2e as e2e  # noqa: E402
from synchro_e2e import Stack  # noqa: E402

DIST = os.path.join(e2e.BUILD, "src/web/dist")
PLAYWRIGHT = os.path.join(e2e.BUILD, "src/web/node_modules/playwright-core")
CHROMIUM = "/usr/bin/chromium"
LOGDIR = os.path.join(e2e.BUILD, "tests/web")


def missing(name):
    """Why test name cannot run here (its SKIP line), or None."""
    why = e2e.stack_missing(name)
    if why:
        return why
    if not os.path.exists(os.path.join(DIST, "synchro-core.wasm")):
        return "%s: SKIP: the browser client is not built (configure --enable-web)" % name
    if not os.access(CHROMIUM, os.X_OK) or not shutil.which("node") or not os.path.isdir(PLAYWRIGHT):
        return "%s: SKIP: needs %s (Debian: chromium), node and playwright-core (the web build's npm)" % (
            name, CHROMIUM)
    return None


class WebStack(Stack):
    """The e2e stack whose nginx also serves the built browser client and the test page
    under /web/ (copied into the stack's directory, which nginx's user can read)."""

    def nginx_site(self):
        web = os.path.join(self.dir, "web")
        shutil.copytree(DIST, web, dirs_exist_ok=True)
        for f in ("page.html", "no-opfs-worker.js"):
            shutil.copy(os.path.join(e2e.SRC, "tests/web", f), web)
        for root, dirs, files in os.walk(web):
            os.chmod(root, 0o755)
            for f in files:
                os.chmod(os.path.join(root, f), 0o644)
        location = ("    location /web/ {\n        alias %s/;\n"
                    "        types { text/html html; text/javascript js mjs; application/wasm wasm;"
                    " application/json json; }\n    }\n" % web)
        site = super().nginx_site()
        at = site.index("    location / {")
        return site[:at] + location + site[at:]
