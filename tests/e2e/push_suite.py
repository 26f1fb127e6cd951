# SPDX-License-Identifier: BSD-2-Clause
"""The harness of the push end-to-end suites (tests/e2e/test_push_*.pgt): named sub-checks
that each run to the end (run_checks), background requests, a psql session holding locks,
raw HTTP for answers that are dropped or cut, and the runner that starts the stack once per
web server (nginx, Apache) on a database of its own and runs a suite's cases in order.

SYNCHRO_E2E_SERVERS picks the servers (default "nginx apache"); SYNCHRO_E2E_CASES=a,b runs only
the cases whose names contain one of those words. Checks that show a known product bug (or
wait for a decision) are listed in PENDING and run only with SYNCHRO_E2E_PENDING=1."""

import os
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import synchro_e2e as e2e  # noqa: E402
from push_check import (Ctx, Resp, check_json_headers, ensure, uid)  # noqa: E402

# "server: case: check" -> the product bug it shows. Run them with SYNCHRO_E2E_PENDING=1.
PENDING = {
}
RUN_PENDING = os.environ.get("SYNCHRO_E2E_PENDING") == "1"
WORKERS = 6
SRC = e2e.SRC


def run_checks(ctx, case, checks):
    """Runs named sub-checks, each to the end; one AssertionError listing every failure."""
    failed = []
    for name, fn in checks:
        key = "%s: %s: %s" % (ctx.server, case, name)
        if key in PENDING and not RUN_PENDING:
            print("  PENDING %s (%s)" % (key, PENDING[key]), flush=True)
            continue
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - every failing check is reported
            failed.append("%s: %s" % (name, e))
            print("  check failed: %s: %s\n%s" % (name, str(e)[:2000], traceback.format_exc(limit=-2)), flush=True)
    assert not failed, "%d check(s) failed:\n    " % len(failed) + "\n    ".join(f[:500] for f in failed)


class Bg(threading.Thread):
    """fn() in a thread; get() its result or exception."""

    def __init__(self, fn):
        super().__init__(daemon=True)
        self.fn = fn
        self.result = None
        self.exc = None
        self.start()

    def run(self):
        try:
            self.result = self.fn()
        except BaseException as e:  # noqa: BLE001
            self.exc = e

    def get(self, timeout=60):
        self.join(timeout)
        assert not self.is_alive(), "background request still running after %ds" % timeout
        if self.exc is not None:
            raise self.exc
        return self.result


class Locker:
    """A psql session holding row locks in an open transaction until release()."""

    def __init__(self, ctx, sql):
        self.path = os.path.join(ctx.stack.dir, "locker-%s.out" % uid())
        self.out = open(self.path, "w")
        self.p = subprocess.Popen(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"], stdin=subprocess.PIPE,
                                  stdout=self.out, stderr=subprocess.STDOUT, text=True)
        self.p.stdin.write("BEGIN;\n%s;\n\\echo LOCKED\n" % sql)
        self.p.stdin.flush()
        e2e.wait_for(lambda: "LOCKED" in open(self.path).read() or self.p.poll() is not None, 20, "psql lock")
        assert "LOCKED" in open(self.path).read(), "psql lock failed: " + open(self.path).read()

    def commit(self, sql):
        """Runs sql in the locking transaction, commits it and ends the session."""
        self.release(sql + ";\nCOMMIT;\n")

    def prepare(self, gid):
        """PREPARE TRANSACTION gid and ends the session: the locks then belong to the prepared
        transaction, which outlives this session and a restart of the server (needs
        max_prepared_transactions, which with-pg sets), until ROLLBACK or COMMIT PREPARED."""
        self.release("PREPARE TRANSACTION '%s';\n" % gid)
        assert self.p.returncode == 0, "PREPARE TRANSACTION failed: " + open(self.path).read()

    def release(self, end="ROLLBACK;\n"):
        try:
            self.p.stdin.write(end + "\\q\n")
            self.p.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        try:
            self.p.wait(20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.out.close()


def wait_blocked(ctx, n=1):
    """Until n sessions wait for a lock (the push under test is inside its transaction)."""
    e2e.wait_for(lambda: ctx.n("SELECT count(*) FROM pg_locks WHERE NOT granted") >= n, 20,
                 "%d session(s) waiting for a lock" % n)


# --- raw HTTP: requests whose answer is dropped or cut ---------------------------------------

def raw_request(ctx, body, user="alice", path="/v3/push"):
    auth = e2e.base64.b64encode(("%s:%s" % (user, e2e.USERS[user])).encode()).decode()
    head = ("POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Basic %s\r\nSynchro-Protocol: 3\r\n"
            "Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
            % (path, ctx.stack.port, auth, len(body)))
    return head.encode() + body


def raw_exchange(ctx, data, timeout=60):
    """Sends data (a whole HTTP request) and reads the answer to EOF. Sending may be cut short
    by a server that answers early; the answer is still read."""
    s = socket.create_connection(("127.0.0.1", ctx.stack.port), timeout=timeout)
    try:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        chunks = []
        while True:
            try:
                b = s.recv(65536)
            except ConnectionResetError:
                break
            if not b:
                break
            chunks.append(b)
    finally:
        s.close()
    return parse_http(b"".join(chunks))


def parse_http(raw):
    head, sep, body = raw.partition(b"\r\n\r\n")
    assert sep, "no complete HTTP answer: %r" % raw[:300]
    lines = head.decode("iso-8859-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        out, rest = b"", body
        while True:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                break
            out, rest = out + rest[:size], rest[size + 2:]
        body = out
    elif "content-length" in headers:
        body = body[:int(headers["content-length"])]
    return Resp(status, headers, body)


def dechunk_prefix(data):
    """The payload octets in a prefix of a chunked body (the last chunk may be cut)."""
    out = b""
    while data:
        line, sep, rest = data.partition(b"\r\n")
        if not sep:
            break
        size = int(line.split(b";")[0], 16)
        if size == 0:
            break
        out += rest[:size]
        data = rest[size + 2:]
    return out


def rst_close(s):
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def is_replay(r, first):
    """r is the exact replay of the answer first."""
    ensure(r.status == first.status and r.body == first.body, "not the stored answer: %r" % r)
    ensure(r.replay == "batch", "Synchro-Replay %r on a replay" % r.replay)
    check_json_headers(r)


def run_server(runner, server, cases):
    db = "synchro_e2e_" + server
    subprocess.run(["psql", "-X", "-q", "-d", os.environ["PGDATABASE"], "-c", "DROP DATABASE IF EXISTS %s" % db],
                   check=True, capture_output=True)
    subprocess.run(["psql", "-X", "-q", "-d", os.environ["PGDATABASE"], "-c", "CREATE DATABASE %s" % db],
                   check=True, capture_output=True)
    saved = os.environ["PGDATABASE"]
    os.environ["PGDATABASE"] = db
    stack = e2e.Stack(server, workers=WORKERS, fcgi_conf={"max_inflight_per_client": 0})
    only = os.environ.get("SYNCHRO_E2E_CASES")
    try:
        t0 = time.monotonic()
        try:
            stack.start()
            ctx = Ctx(stack, server)
        except Exception:
            import traceback
            why = traceback.format_exc()
            runner.case("%s: start the stack" % server, lambda: ensure(False, "stack did not start:\n" + why + stack.log(
                "fcgi")[-3000:] + stack.log(server)[-2000:]))
            return
        for name, fn in cases:
            if only and not any(w in name for w in only.split(",")):
                continue
            runner.case("%s: %s" % (server, name), fn, ctx)
        print("%s: %.1fs" % (server, time.monotonic() - t0), flush=True)
    finally:
        if runner.failures:
            for log in ("fcgi", server):
                text = stack.log(log)
                if text:
                    print("--- %s log (tail) ---\n%s" % (log, text[-4000:]))
            for extra in ("nginx-error.log", "apache-error.log"):
                p = os.path.join(stack.dir, extra)
                if os.path.exists(p):
                    print("--- %s (tail) ---\n%s" % (extra, open(p, errors="replace").read()[-3000:]))
        stack.stop()
        os.environ["PGDATABASE"] = saved


def main(name, cases):
    """Runs cases (a list of (name, fn(ctx))) once per web server; the exit status of the suite."""
    if not os.access(e2e.FCGI, os.X_OK):
        print("%s: %s not built; skipping" % (name, e2e.FCGI))
        return 77
    binaries = {"nginx": "nginx", "apache": "apache2"}
    servers = []
    for s in os.environ.get("SYNCHRO_E2E_SERVERS", "nginx apache").split():
        if shutil.which(binaries[s]) or os.path.exists("/usr/sbin/" + binaries[s]):
            servers.append(s)
        else:
            print("%s: %s not installed; not tested" % (name, s))
    if not servers:
        return 77
    runner = e2e.Runner()
    t0 = time.monotonic()
    for server in servers:
        run_server(runner, server, cases)
    print("total %.1fs" % (time.monotonic() - t0))
    return runner.finish()
