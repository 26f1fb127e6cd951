# SPDX-License-Identifier: BSD-2-Clause
"""bench-live's zero phase (bench.py runs it): Rocicorp Zero on the bench's PostgreSQL.
Its packages come from zero/package-lock.json by `npm ci` into
BUILD/contrib/bench/live/zero once (later runs reuse them). zero-cache gets its own app id,
replica file and ports in the stack's directory; its HTTP services listen on every
interface ("::": zero-cache has no setting for its bind address, see where it is started),
and the bench talks to it on 127.0.0.1 only. zero/zero.mjs is the app's query endpoint (ZERO_QUERY_URL, on
127.0.0.1) and a Node client with an in-memory store subscribed to carol's to-dos."""

import filecmp
import os
import shutil
import subprocess
import time
import urllib.request

import synchro_e2e as e2e
from watch import Watcher

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "zero")
FILES = ("package.json", "package-lock.json", "zero.mjs")


def install(build):
    """The zero directory under BUILD with its node_modules, or (None, why)."""
    if os.environ.get("BENCH_ZERO", "1") == "0":
        return None, "BENCH_ZERO=0"
    if shutil.which("node") is None or shutil.which("npm") is None:
        return None, "node and npm not found (Debian: apt-get install nodejs npm)"
    d = os.path.abspath(os.path.join(build, "contrib/bench/live/zero"))
    os.makedirs(d, exist_ok=True)
    if os.path.realpath(d) != os.path.realpath(SRC):
        for f in FILES:
            dst = os.path.join(d, f)
            if not os.path.exists(dst) or not filecmp.cmp(os.path.join(SRC, f), dst, shallow=False):
                shutil.copyfile(os.path.join(SRC, f), dst)
    stamp = os.path.join(d, "node_modules", ".synchro-installed-lock")
    lock = os.path.join(d, "package-lock.json")
    if not (os.path.exists(stamp) and filecmp.cmp(lock, stamp, shallow=False)):
        cmd = ["npm", "ci", "--no-audit", "--no-fund", "--prefer-offline"]
        r = subprocess.run(cmd, cwd=d, capture_output=True, text=True, timeout=1200)
        if r.returncode != 0:
            return None, "%s (in %s): exit %d\n%s" % (" ".join(cmd), d, r.returncode, r.stderr[-3000:])
        shutil.copyfile(lock, stamp)
    return d, None


def tree(pid):
    """pid and its descendants."""
    out, todo = [], [pid]
    kids = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open("/proc/%s/stat" % p) as f:
                    kids.setdefault(int(f.read().rsplit(")", 1)[1].split()[1]), []).append(int(p))
            except (OSError, ValueError, IndexError):
                pass
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def cpu_tree_s(pid):
    total = 0.0
    for p in tree(pid):
        try:
            with open("/proc/%d/schedstat" % p) as f:
                total += int(f.read().split()[0]) / 1e9
        except OSError:
            pass
    return total


def rss_tree_kb(pid):
    return rss_kb(tree(pid))


def rss_kb(pids):
    """The processes' resident memory, added up (bench.py's figures too)."""
    total = 0
    for p in pids:
        try:
            with open("/proc/%d/status" % p) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


class Zero:
    """zero-cache and zero.mjs running; wait(pk) = when the client first saw pk
    (time.monotonic() seconds, watch.py)."""

    def __init__(self, stack, d, user):
        self.port, self.qport = e2e.free_port(), e2e.free_port()
        # the cluster's private socket: an empty host, so that PGHOST, PGPORT and PGUSER apply
        db = "postgresql:///%s" % os.environ["PGDATABASE"]
        env = dict(os.environ, ZERO_UPSTREAM_DB=db, ZERO_CVR_DB=db, ZERO_CHANGE_DB=db,
                   ZERO_REPLICA_FILE=os.path.join(stack.dir, "zero-replica.db"),
                   ZERO_PORT=str(self.port), ZERO_CHANGE_STREAMER_PORT=str(e2e.free_port()),
                   ZERO_APP_ID="benchzero", ZERO_QUERY_URL="http://127.0.0.1:%d/query" % self.qport,
                   # no writes go through Zero here; set, as zero-cache wants both URLs or a token key
                   ZERO_MUTATE_URL="http://127.0.0.1:%d/mutate" % self.qport,
                   ZERO_NUM_SYNC_WORKERS="1", ZERO_ADMIN_PASSWORD="bench-live", ZERO_LOG_LEVEL="warn")
        self.argv = [os.path.join(d, "node_modules/.bin/zero-cache")]
        # zero-cache has no setting for its bind address: its HTTP services (ZERO_PORT's sync
        # service and ZERO_CHANGE_STREAMER_PORT's change-streamer) listen on "::", every
        # interface, fixed in the package (zero-cache 1.9.0: host "::" in
        # out/zero-cache/src/services/http-service.js; its options set ports only). Its ports
        # are free ones picked here, and the bench talks to it on 127.0.0.1 only.
        stack.spawn("zero-cache", self.argv, env=env)
        self.pid = stack.procs["zero-cache"].pid
        t0 = time.monotonic()
        while True:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/" % self.port, timeout=2) as r:
                    if r.read() == b"OK":
                        break
            except OSError:
                pass
            if stack.procs["zero-cache"].poll() is not None or time.monotonic() - t0 > 180:
                raise RuntimeError("zero-cache did not answer on 127.0.0.1:%d (its log: %s)"
                                   % (self.port, stack.log("zero-cache")[-3000:]))
            time.sleep(0.5)
        try:
            self.client = Watcher(["node", os.path.join(d, "zero.mjs"), str(self.port), str(self.qport), user],
                                  "zero.mjs", cwd=d)
        except RuntimeError as e:
            raise RuntimeError("%s (zero-cache's log: %s)" % (e, stack.log("zero-cache")[-3000:]))

    def wait(self, pk, timeout):
        return self.client.wait(pk, timeout)

    def cpu_s(self):
        return cpu_tree_s(self.pid)

    def rss_kb(self):
        return rss_tree_kb(self.pid)

    def close(self):
        self.client.close(timeout=30)
