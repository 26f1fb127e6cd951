# SPDX-License-Identifier: BSD-2-Clause
"""The failover suites' stack (doc/operations.md "Failover"): the with-pg primary plus a
synchronous streaming standby (pg_standby.py: pg_basebackup -R; synchronous_standby_names on the
primary names it once it streams, so every acknowledged commit is flushed on it), and the
stack's responders, synchroctl and walsync on one multi-host conninfo that names both servers
with target_session_attrs=read-write: whichever is the primary is the one they reach.

    sb = SyncStandby().create().start(); sb.make_synchronous()
    stack = FailoverStack(sb, ...); stack.start()
    stack.fail_over()          # the primary stopped (immediate), the standby promoted
    stack.fail_over("fence")   # or: the primary made read-only and left running, then promoted
    stack.psql(...)            # the new primary from then on

and the suite both test_failover*.pgt run: main(name, mode), clients (Device) of three users
pushing and pulling through the failover, then the checks and the window's figures.
"""

import datetime
import json
import os
import signal
import subprocess
import threading
import time

import synchro_e2e as e2e
from pg_standby import Standby
from pull_suite import uid, ensure, Client, apply, server_rows, CLIENT_VERSION
from synchro_e2e import Runner, wait_for


# The standby's walreceiver reports cluster_name as its application_name. Never '*' in
# synchronous_standby_names: walsync's logical walsender would be a candidate, and a commit
# would wait for walsync, which waits for commits.
STANDBY_NAME = "synchro_standby"


class SyncStandby(Standby):
    def create(self, args=()):
        super().create(args)
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write("cluster_name = '%s'\n" % STANDBY_NAME)
        return self

    def make_synchronous(self):
        """Once the standby streams, the primary waits for its flush at every commit
        (synchronous_commit = on, the default; synchronous_standby_names names it)."""
        self.wait(lambda: _primary_psql("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")
                  != "0", "the standby to stream")
        _primary_psql("ALTER SYSTEM SET synchronous_standby_names = '%s'" % STANDBY_NAME)
        _primary_psql("SELECT pg_reload_conf()")
        self.wait(lambda: _primary_psql("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")
                  != "0", "the standby to be synchronous")
        return self


def _primary_psql(sql):
    r = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError("psql (primary) %r: %s" % (sql, r.stderr))
    return r.stdout.strip()


class FailoverStack(e2e.Stack):
    """Stack whose every conninfo names the primary, then the standby, read-write only; but
    walsync started with follow="reload" reaches the primary alone, and fail_over() rewrites
    its configuration to the promoted standby and sends it SIGHUP."""

    def __init__(self, standby, **kw):
        super().__init__(**kw)
        self.standby = standby
        self.failed_over = False
        self.single_host = False
        self.walsync_reload = None   # the walsync whose conninfo fail_over() reloads

    def start_walsync(self, name="walsync", wait=True, follow="multi-host", **walsync):
        self.single_host = follow == "reload"
        try:
            proc = super().start_walsync(name, wait, **walsync)
        finally:
            self.single_host = False
        if follow == "reload":
            self.walsync_reload = name
        return proc

    def reload_walsync(self):
        name = self.walsync_reload
        conf = os.path.join(self.dir, name + ".conf")
        with open(conf) as f:
            lines = f.read().splitlines()
        new = "conninfo = host=%s port=%d dbname=%s user=%s connect_timeout=2" % (
            self.standby.sock, self.standby.port, os.environ["PGDATABASE"], e2e.WALSYNC_ROLE)
        with open(conf, "w") as f:
            f.write("\n".join(new if x.startswith("conninfo = ") else x for x in lines) + "\n")
        self.procs[name].send_signal(signal.SIGHUP)

    def conninfo(self, user, via_pgbouncer=False):
        assert not via_pgbouncer
        if self.single_host:
            return "host=%s port=%s dbname=%s user=%s connect_timeout=2" % (
                self.primary_host, self.primary_port, os.environ["PGDATABASE"], user)
        return ("host=%s,%s port=%s,%d dbname=%s user=%s target_session_attrs=read-write connect_timeout=2"
                % (self.primary_host, self.standby.sock, self.primary_port, self.standby.port,
                   os.environ["PGDATABASE"], user))

    def start(self):
        # The with-pg primary as it was at the start (the environment moves at the failover).
        self.primary_host = os.environ["PGHOST"]
        self.primary_port = os.environ["PGPORT"]
        return super().start()

    def fail_over(self, mode="stop"):
        """mode "stop": stops the primary at once (no shutdown checkpoint, every session cut);
        "fence": makes it refuse writes (default_transaction_read_only, reloaded: its open
        sessions answer 25006 read_only_sql_transaction) and leaves it running. Then promotes
        the standby; psql and synchroctl of this process reach the new primary afterwards.
        Returns (stopped_at, promoted_at): time.monotonic() when the stop was asked for, when
        the promotion was done; and time.time() of the stop's request as self.stopped_wall."""
        self.stopped_wall = time.time()
        stopped = time.monotonic()
        if mode == "stop":
            self.pg_stop("immediate")
        else:
            _primary_psql("ALTER SYSTEM SET default_transaction_read_only = on")
            _primary_psql("SELECT pg_reload_conf()")
        # Pushes sent from now on can only be acknowledged by the new primary (a push in
        # flight at the stop may still have committed on the old one, and replicated).
        self.down_at = time.monotonic()
        self.standby.promote()
        promoted = time.monotonic()
        if self.walsync_reload:
            self.reload_walsync()
        os.environ["PGHOST"] = self.standby.sock
        os.environ["PGPORT"] = str(self.standby.port)
        self.failed_over = True
        return stopped, promoted

    def restore_environment(self):
        """PGHOST/PGPORT back to the with-pg server (its cleanup stops it by its data directory
        and ignores that it is already down)."""
        os.environ["PGHOST"] = self.primary_host
        os.environ["PGPORT"] = self.primary_port


USERS = ("alice", "bob", "carol")
# Writing before the failover, and after every client rebuilt on the new primary.
BEFORE_S = 3.0
AFTER_S = 3.0
HTTP_TIMEOUT_S = 20


class Device(threading.Thread):
    """One client: pushes a new row or an update of one of its rows, then pulls; an unanswered
    push (503, a lost connection) is sent again with the same batch id until answered; a 409
    cursor_expired is a rebuild. Records every answer with its time."""

    def __init__(self, stack, user, stop):
        super().__init__(daemon=True)
        self.stack, self.user, self.stop = stack, user, stop
        self.client = Client(stack, user)
        self.state = {}
        self.acked = []        # (batch_id, mutation_id, pk, title)
        self.answers = []      # (answered at, route, status, error code or None, sent at): monotonic
        self.rebuilt_at = []   # monotonic times of completed rebuilds
        self.error = None
        self.n = 0

    def post(self, path, body):
        t0 = time.monotonic()
        try:
            status, headers, raw = self.stack.post(path, body, user=self.user, timeout=HTTP_TIMEOUT_S)
        except OSError as e:
            self.answers.append((time.monotonic(), path, None, type(e).__name__, t0))
            return None, None, None
        t = time.monotonic()
        doc = json.loads(raw) if raw else None
        code = doc["error"]["code"] if isinstance(doc, dict) and "error" in doc else None
        self.answers.append((t, path, status, code, t0))
        ensure(t - t0 < HTTP_TIMEOUT_S - 1, "%s took %.1f s" % (path, t - t0))
        ensure(status in (200, 409, 503), "%s answered %r %r" % (path, status, doc))
        if status == 503:
            ensure(headers.get("retry-after") == "1", "503 without Retry-After: %r" % headers)
            ensure(doc["error"]["retryable"] is True, doc)
        return status, headers, doc

    def push_once(self):
        c = self.client
        mine = [k for k in self.state if k[0] == "todo"]
        self.n += 1
        title = "%s-%d" % (self.user, self.n)
        if mine and self.n % 3 == 0:
            key = mine[self.n % len(mine)]
            pk = json.loads(key[1])
            m = {"mutation_id": uid(), "table": "todo", "pk": {"field": "id", "value": pk},
                 "authored_schema": c.schema, "operation": "update", "client_version": CLIENT_VERSION,
                 "columns": {"title": title}, "base_version": self.state[key][0]}
        else:
            pk = uid()
            m = {"mutation_id": uid(), "table": "todo", "pk": {"field": "id", "value": pk},
                 "authored_schema": c.schema, "operation": "insert", "client_version": CLIENT_VERSION,
                 "columns": {"title": title, "done": False}}
        body = {"client_id": c.id, "client_generation": c.generation, "batch_id": uid(),
                "schema": c.schema, "mutations": [m]}
        while True:
            status, _, doc = self.post("/v3/push", body)
            if status == 200:
                acc = doc["accepted"][0]
                ensure(acc["mutation_id"] == m["mutation_id"], doc)
                if acc["status"] == "applied":
                    self.acked.append((body["batch_id"], m["mutation_id"], pk, title))
                return
            time.sleep(0.2)   # the outbox keeps it: the same batch again

    def sync(self):
        """Pulls to the end; a 409 cursor_expired (the break) rebuilds. False on a 503."""
        c = self.client
        while True:
            if c.cursor is None:
                return self.rebuild()
            status, _, doc = self.post("/v3/pull", {"client_id": c.id, "client_generation": c.generation,
                                                    "schema": c.schema, "cursor": c.cursor, "limit": 1000})
            if status == 409:
                ensure(doc["error"]["code"] == "cursor_expired", doc)
                c.cursor = None
                continue
            if status != 200:
                return False
            apply(self.state, doc["changes"])
            c.cursor = doc["cursor"]
            if not doc["has_more"]:
                return True

    def rebuild(self):
        c = self.client
        rid, token, state = uid(), None, {}
        while True:
            status, _, doc = self.post("/v3/rebuild", {"client_id": c.id, "client_generation": c.generation,
                                                       "schema": c.schema, "rebuild_id": rid, "page_token": token,
                                                       "limit": 200})
            if status == 409:
                ensure(doc["error"]["code"] == "rebuild_invalidated", doc)
                rid, token, state = uid(), None, {}
                continue
            if status != 200:
                return False
            apply(state, doc["rows"])
            token = doc["page_token"]
            if token is None:
                self.state = state
                c.cursor = doc["cursor"]
                self.rebuilt_at.append(time.monotonic())
                return True

    def run(self):
        try:
            while not self.stop.is_set():
                self.push_once()
                if not self.sync():
                    time.sleep(0.2)
        except BaseException as e:  # reported by the main thread
            self.error = e


def first_success_after(devices, route, t):
    """When the first 200 of route sent after t was answered."""
    ts = [a[0] for d in devices for a in d.answers if a[1] == route and a[2] == 200 and a[4] > t]
    return min(ts) if ts else None


def case_failover(stack, figures, mode):
    stop = threading.Event()
    devices = [Device(stack, u, stop) for u in USERS]
    for d in devices:
        ensure(d.rebuild(), "first rebuild")
    for d in devices:
        d.start()
    time.sleep(BEFORE_S)
    ensure(all(d.acked for d in devices), "no push acknowledged before the failover")
    stopped, promoted = stack.fail_over(mode)
    wall_stopped = stack.stopped_wall
    print("primary %s and standby promoted in %.2f s" % ("stopped (immediate)" if mode == "stop" else "made read-only", promoted - stopped), flush=True)
    wait_for(lambda: first_success_after(devices, "/v3/push", stack.down_at) is not None, timeout=40,
             what="a push acknowledged by the new primary")
    first_push = first_success_after(devices, "/v3/push", stack.down_at)
    # Writing on until every client rebuilt on the new primary (after walsync's break), and a
    # while after.
    wait_for(lambda: all(d.error or any(t > stopped for t in d.rebuilt_at) for d in devices), timeout=60,
             what="every client to rebuild on the new primary")
    time.sleep(AFTER_S)
    stop.set()
    for d in devices:
        d.join(timeout=HTTP_TIMEOUT_S * 3)
        ensure(not d.is_alive(), "device %s did not stop" % d.user)
        if d.error:
            raise d.error

    # walsync found the new primary without a slot and resolved the break.
    wait_for(lambda: "STREAM BREAK:" in stack.log("walsync"), what="walsync's STREAM BREAK")
    if stack.walsync_reload:
        ensure("reload: [database] conninfo changed; reconnecting" in stack.log("walsync"),
               "walsync did not log the reloaded conninfo")
    line = [x for x in stack.log("walsync").splitlines() if "STREAM BREAK:" in x][0]
    broke = datetime.datetime.strptime(line.split()[0], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp() - wall_stopped
    ensure(stack.psql("SELECT count(*) FROM synchro.stream_breaks") == "1", "one break recorded")

    # Every acknowledged push exactly once in the new primary's ledger, its row there.
    mutations = {}
    for line in filter(None, stack.psql("SELECT mutation_id, count(*) FROM synchro.mutations"
                                        " GROUP BY mutation_id").splitlines()):
        mid, n = line.split("|")
        mutations[mid] = int(n)
    batches = {}
    for line in filter(None, stack.psql("SELECT batch_id, count(*) FROM synchro.batches"
                                        " GROUP BY batch_id").splitlines()):
        bid, n = line.split("|")
        batches[bid] = int(n)
    titles = dict(line.split("|", 1) for line in filter(None, stack.psql(
        "SELECT id, title FROM todo").splitlines()))
    for d in devices:
        last = {}
        for batch, mid, pk, title in d.acked:
            ensure(mutations.get(mid) == 1, "mutation %s of %s in the ledger %s times" % (mid, d.user, mutations.get(mid)))
            ensure(batches.get(batch) == 1, "batch %s in the ledger %s times" % (batch, batches.get(batch)))
            last[pk] = title
        # The last acknowledged title of each row is the row's (no write lost, none older).
        for pk, title in last.items():
            ensure(titles.get(pk) == title, "row %s: %r, acknowledged %r" % (pk, titles.get(pk), title))

    # Every client rebuilt after the failover; then pulls converge on the server's rows.
    converged = []
    for d in devices:
        after = [t for t in d.rebuilt_at if t > stopped]
        ensure(after, "client of %s never rebuilt after the failover" % d.user)
        converged.append(after[0])
        # Fences written between walsync's last position and the new slot are never in the
        # changelog (the break counts them as materialized; the rebuild showed their rows).
        wait_for(lambda: d.sync() and d.state == server_rows(stack, d.user), timeout=30,
                 what="the client of %s to pull the server's rows" % d.user)
        want = server_rows(stack, d.user)
        if d.state != want:
            differ = sorted(k for k in set(d.state) | set(want) if d.state.get(k) != want.get(k))
            raise AssertionError("client of %s: %d rows, server %d; differ on %r"
                                 % (d.user, len(d.state), len(want), differ[:4]))
    answers = [a for d in devices for a in d.answers if a[0] > stopped]
    n503 = sum(1 for a in answers if a[2] == 503)
    ensure(not any(a[2] is None for a in answers if a[0] > promoted + 15), "connection failures late in the run")
    acked = sum(len(d.acked) for d in devices)
    figures.append("failover window (%s): first acknowledged push %.2f s after the primary's %s (promotion "
                   "took %.2f s); walsync's STREAM BREAK after %.2f s; every client converged (rebuilt on the "
                   "new primary) after %.2f s; %d pushes acknowledged in all, %d answers 503 in the window"
                   % (mode, first_push - stopped, "stop" if mode == "stop" else "fencing", promoted - stopped,
                      broke, max(converged) - stopped, acked, n503))


def main(name, mode):
    missing = e2e.stack_missing(name)
    if missing:
        print(missing)
        return 77
    runner = Runner()
    sb = SyncStandby("failover").create().start().make_synchronous()
    stack = FailoverStack(sb, server="nginx", workers=3, fcgi_conf={"pull_wait_ms": 1000})
    figures = []
    try:
        stack.start()
        # Stopped: walsync follows a reloaded conninfo; fenced: the multi-host one (its
        # replication connection too), as the responders always do.
        stack.start_walsync(lease_s=10, renew_s=2, stale_heartbeat_s=10,
                            follow="reload" if mode == "stop" else "multi-host")
        runner.case("failover (%s)" % mode, case_failover, stack, figures, mode)
    finally:
        if runner.failures:
            for log in ("fcgi", "walsync", "nginx"):
                text = stack.log(log)
                if text:
                    print("--- %s log (tail) ---\n%s" % (log, text[-4000:]))
        stack.stop()
        stack.restore_environment()
        sb.destroy()
    for f in figures:
        print(f)
    return runner.finish()
