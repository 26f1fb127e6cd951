# SPDX-License-Identifier: BSD-2-Clause
"""The chaos suite's browser device: a store of the browser client (the WebAssembly build of
libsynchro-client on OPFS, in Debian's Chromium) with the interface of chaos_device.Device,
so that the workload, the faults and the checker treat it as any other device. One long-
lived node process (tests/chaos/chaos_browser.mjs) holds one Chromium profile and one page
of the store; this class sends it one JSON line per command and reads one answer.

The page's origin is the fault proxy's address: its API requests go through the proxy as
the other devices' do (the page's own files are served by the driver). Its workload is
Device.round's, each synchro-cli write turned into a transaction() of the page and each
printed id the id transaction() returned. A device kill is a tab kill: a sync started in
the page, and the tab closed by CDP Target.closeTarget at a random point (no unload
handler runs), then the store reopened in a new page. Some rounds are idle stretches instead: the page
left alone past its poll interval, so that only the poll sends and brings changes. What the checker reads from a
native store's SQLite file it reads here through the page's Synchro.records() (the same
tables: intents, transactions, batches, their members and attempts, the server rows)."""

import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../web"))
import synchro_e2e as e2e  # noqa: E402
from chaos_device import GRACE_S, SYNC_TIMEOUT_S, Device  # noqa: E402
from web_stack import DIST, PLAYWRIGHT, browser_missing  # noqa: E402

DRIVER = os.path.join(HERE, "chaos_browser.mjs")
IDLE_PROB = 0.25  # of the browser's online rounds: an idle stretch instead of a sync
IDLE_S = 2.6      # longer than the page's poll interval (2 s, chaos_browser.mjs)
TAB_KILL_PROB = 0.3  # of the browser's online syncs while faults run (synchro-cli's: DEVICE_KILL_PROB)
QUEUED = ("pending", "waiting", "sealed")
UNSETTLED = ("conflict", "rejected", "schema_incompatible", "blocked_by_predecessor")


def browsers_missing():
    """None when browser devices can run, else why not (one line)."""
    why = browser_missing("chaos")
    return why.replace("chaos: SKIP: ", "") if why else None


def _value(field, text, raw):
    """A synchro-cli field=value (or field:=JSON) as the value the page's API takes."""
    if raw:
        return json.loads(text)
    if field == "done":
        return text == "true"
    if field == "qty":
        return int(text)
    return text


def _columns(args):
    cols = {}
    for a in args:
        k, _, v = a.partition("=")
        raw = k.endswith(":")
        cols[k.rstrip(":")] = _value(k.rstrip(":"), v, raw)
    return cols


def _write(op, table, pk, cols):
    w = {"op": op, "table": table, "pk": str(pk)}
    if op != "delete":
        w["columns"] = _columns(cols)
    return w


def _blob(v):
    return bytes.fromhex(v["hex"]) if isinstance(v, dict) and "hex" in v else v


class BrowserDevice(Device):
    kind = "browser"

    def __init__(self, index, user, password, directory, url, cli, seed):
        super().__init__(index, user, password, directory, url, cli, seed)
        self.name = "d%02d-%s-browser" % (index, user)
        self.path = None             # no file: the store is in the page's OPFS
        self.counts["tab_killed_mid_sync"] = 0
        self.counts["idle_stretches"] = 0
        self.counts["idle_stretches_pulled"] = 0
        self.profile = tempfile.mkdtemp(prefix="synchro-chaos-browser-", dir=e2e._tmpbase())
        self.proc = None
        self.replies = queue.Queue()
        self.next_id = 1
        self.stderr_tail = []

    # --- the node driver --------------------------------------------------------------------
    def start(self):
        self.proc = subprocess.Popen(
            ["node", DRIVER, PLAYWRIGHT, self.url, self.profile, DIST, os.path.join(e2e.SRC, "tests/web"),
             self.user, self.password],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        threading.Thread(target=self._read, args=(self.proc.stdout, self.replies.put), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, self._keep_stderr), daemon=True).start()

    @staticmethod
    def _read(stream, put):
        for line in stream:
            put(line)
        put(None)

    def _keep_stderr(self, line):
        if line is not None:
            self.stderr_tail = (self.stderr_tail + [line.rstrip()])[-20:]

    def cmd(self, op, timeout=60, **kw):
        """One command to the driver; its value. A hung or failed command is a problem."""
        self.counts["commands"] += 1
        if self.proc is None:
            self.start()
        cid = self.next_id
        self.next_id += 1
        self.proc.stdin.write(json.dumps(dict(kw, id=cid, op=op)) + "\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout + GRACE_S
        while True:
            try:
                line = self.replies.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                self.problems.append("%s: the browser's %s hung (%d s)" % (self.name, op, timeout + GRACE_S))
                raise RuntimeError("%s: %s hung" % (self.name, op))
            if line is None:
                self.problems.append("%s: the browser driver exited during %s: %s"
                                     % (self.name, op, "\n".join(self.stderr_tail[-5:])))
                raise RuntimeError("%s: the driver exited" % self.name)
            r = json.loads(line)
            if r["id"] == cid:
                break
        if not r["ok"]:
            self.problems.append("%s: the browser's %s failed: %s" % (self.name, op, r["error"][-1500:]))
            raise RuntimeError("%s: %s failed" % (self.name, op))
        return r["value"]

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({"id": 0, "op": "quit"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    # --- Device's commands, in the page -------------------------------------------------------
    def run(self, *args, timeout=60):
        """The synchro-cli commands the suite runs on a device besides writes and syncs:
        connect and resolve; (exit status, stdout) as synchro-cli's."""
        if args[0] == "connect":
            self.cmd("open", timeout=timeout)
            for _ in range(10):
                v = self.cmd("sync", timeout=SYNC_TIMEOUT_S, timeoutMs=SYNC_TIMEOUT_S * 1000)
                if v["status"]["client_id"] and v["status"]["schema_version"]:
                    return 0, v["status"]["client_id"] + "\n"
            return 5, ""
        if args[0] == "resolve":
            how, mid = args[1], args[2]
            cols = {}
            for a in args[3:]:
                k, _, v = a.partition(":=")
                cols[k] = json.loads(v)
            v = self.cmd("resolve", timeout=timeout, how=how, mutationId=mid, columns=cols or None)
            if "error" in v:
                return 6, ""
            return 0, (v["successor"] or "") + "\n"
        raise AssertionError("the browser device has no command %s" % args[0])

    def write(self, *args):
        """insert/update/delete/atomic as synchro-cli arguments, as one transaction() of the
        page; records the ids it returned."""
        ops = self._ops(args)
        if args[0] == "atomic":
            parts, cur = [], []
            for a in list(args[1:]) + ["--"]:
                if a == "--":
                    parts.append(cur)
                    cur = []
                else:
                    cur.append(a)
            writes = [_write(p[0], p[1], p[2], p[3:]) for p in parts]
        else:
            writes = [_write(args[0], args[1], args[2], args[3:])]
        v = self.cmd("tx", writes=writes, atomic=args[0] == "atomic")
        if "error" in v:
            self.counts["refused"] += 1
            return []
        ids = v["mids"]
        if len(ids) != len(ops):
            self.problems.append("%s: transaction() returned %d ids for %d writes" % (self.name, len(ids), len(ops)))
        for mid, op in zip(ids, ops):
            self.authored[mid] = op
        self.counts["writes"] += len(ids)
        return ids

    def sync(self, kill_after=None):
        """A sync in the page (0: it ended idle, 3: not); kill_after: the tab killed after
        that many seconds if the sync still runs (then -9)."""
        self.counts["syncs"] += 1
        if kill_after is not None:
            # (Device.round draws 0..0.6 s; a page's sync is often done within 0.4 s)
            v = self.cmd("syncKill", timeout=SYNC_TIMEOUT_S, timeoutMs=SYNC_TIMEOUT_S * 1000,
                         afterMs=int(kill_after * 1000 * 2 / 3))
            if v.get("killed"):
                self.counts["tab_killed_mid_sync"] += 1
                return -9
            return 0 if v["ended"] == "idle" else 3
        v = self.cmd("sync", timeout=SYNC_TIMEOUT_S, timeoutMs=SYNC_TIMEOUT_S * 1000)
        if "error" in v or v["status"]["phase"] != "idle":
            self.counts["sync_incomplete"] += 1
            return 3
        return 0

    def round(self, kill_prob=0.0, online=0.65):
        """Device.round, with its syncs' tab killed more often than a native device's
        process (a tab kill is the browser's fault of interest), and every online sync a
        killed one until the first tab kill (so that each run with faults has one)."""
        if kill_prob:
            kill_prob = 1.0 if not self.counts["tab_killed_mid_sync"] else max(kill_prob, TAB_KILL_PROB)
        if (not kill_prob or self.counts["tab_killed_mid_sync"]) and self.rng.random() < IDLE_PROB:
            return self.idle()
        return super().round(kill_prob=kill_prob, online=online)

    def idle(self):
        """An idle stretch: the page left alone for longer than its poll interval, so that
        only the poll may push what waits and bring the other devices' changes."""
        with self.lock:
            if self.retired:
                return "retired"
            v = self.cmd("idle", timeout=IDLE_S + 60, ms=int(IDLE_S * 1000))
            self.counts["idle_stretches"] += 1
            if v.get("after") != v.get("before"):
                self.counts["idle_stretches_pulled"] += 1
            return "idle"

    # --- the store, through the page's records() ----------------------------------------------
    def records(self):
        return self.cmd("records")

    def known(self):
        todo, item = set(), set()
        rec = self.records()
        for r in rec["rows"]:
            if r["deleted"]:
                continue
            if r["tbl"] == "todo":
                todo.add(json.loads(r["pk"]))
            elif r["tbl"] == "item" and json.loads(r["row"]).get("deleted_at") is None:
                item.add(json.loads(r["pk"]))
        for i in sorted(rec["intents"], key=lambda i: i["ord"]):
            if i["state"] in QUEUED and i["tbl"] in ("todo", "item"):
                s = todo if i["tbl"] == "todo" else item
                (s.discard if i["op"] == "delete" else s.add)(json.loads(i["pk"]))
        if rec["schemas"]:
            m = json.loads(max(rec["schemas"], key=lambda s: s["version"])["manifest"])
            fields = [f["field_id"] for t in m["tables"] if t["table_id"] == "todo" for f in t["fields"]]
            self.note_allowed = "note" in fields
        return todo, item

    def unsettled(self):
        return [(i["mutation_id"], i["state"], i["op"], i["tbl"], i["pk"], i["columns"])
                for i in sorted(self.records()["intents"], key=lambda i: i["ord"]) if i["state"] in UNSETTLED]

    def read_client_id(self):
        meta = {m["key"]: m["value"] for m in self.records()["meta"]}
        self.client_id = meta.get("client_id")
        return self.client_id

    def settle(self, rounds=8):
        with self.lock:
            if self.retired:
                return
            for _ in range(rounds):
                if self.sync() == 0 and not any(i["state"] in QUEUED for i in self.records()["intents"]):
                    return
                time.sleep(0.5)

    def store_state(self):
        """What the checker reads from a device's store (Checker.load's shape)."""
        rec = self.records()
        atomic = {t["id"]: t["atomic"] for t in rec["txns"]}
        s = {"intents": {i["mutation_id"]: dict(i, txn_atomic=atomic.get(i["txn"])) for i in rec["intents"]},
             "batches": {b["batch_id"]: {k: _blob(v) for k, v in b.items()} for b in rec["batches"]},
             "members": {}, "attempts": {},
             "rows": {(r["tbl"], json.loads(r["pk"])): r for r in rec["rows"]}}
        for m in rec["batch_members"]:
            s["members"].setdefault(m["batch_id"], set()).add(m["mutation_id"])
        for a in sorted(rec["attempts"], key=lambda a: a["id"]):
            s["attempts"].setdefault(a["batch_id"], []).append((a["status"], _blob(a["response"])))
        return s
