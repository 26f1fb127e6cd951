# SPDX-License-Identifier: BSD-2-Clause
"""A simulated device of the chaos suite: one libsynchro-client store (its own SQLite file)
driven through synchro-cli, the shipped program, one process per command: a SIGKILL of a
sync is then the SIGKILL of a real client process in the middle of its work, and the store
it leaves is the one the next command opens.

The workload (Device.round) is drawn from the device's own seeded random stream: inserts,
updates and deletes of its user's own to-dos, updates of its user's few shared hot to-dos
and of the hot items every user shares (compare-and-swap conflicts), inserts of items
from a small id range (insert races), atomic transactions of two or three writes, offline
stretches (writes with no sync), and resolutions of conflicted and blocked intents. Every
mutation id synchro-cli printed is recorded: the checker requires each of them in the
store, settled."""

import json
import os
import random
import resource
import signal
import sqlite3
import subprocess
import threading
import time
import uuid

SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "runtime error:", "UndefinedBehaviorSanitizer")
ITEM_IDS = range(1, 41)          # the item ids inserts race for (every user's scope)
HOT_ITEMS = range(1, 7)          # created before the run: shared by every device
HOT_TODOS_PER_USER = 3           # created before the run: shared by a user's devices
SYNC_TIMEOUT_S = 15              # synchro-cli sync --once --timeout
GRACE_S = 30                     # past its timeout, a synchro-cli process is hung
STORE_FULL_PROB = 0.03           # of a round's syncs under faults: the store's disk full


class Device:
    def __init__(self, index, user, password, directory, url, cli, seed):
        self.index = index
        self.name = "d%02d-%s" % (index, user)
        self.user = user
        self.password = password
        self.path = os.path.join(directory, self.name + ".db")
        self.url = url
        self.cli = cli
        self.rng = random.Random("%s/device/%d" % (seed, index))
        self.authored = {}           # mutation_id -> (op, table, pk), as synchro-cli printed them
        self.client_id = None
        self.retired = False         # the run retired this device (its store is read-only)
        self.hot_todos = []
        self.note_allowed = True     # false once the device knows the schema without todo.note
        self.counts = {"commands": 0, "writes": 0, "refused": 0, "atomic": 0, "syncs": 0,
                       "sync_incomplete": 0, "resolutions": 0, "killed_mid_sync": 0, "store_full": 0,
                       "store_full_failed": 0}
        self.problems = []           # hangs, sanitizer reports, unexpected exit statuses
        self.lock = threading.Lock()  # held by whoever runs a command on this store

    # --- synchro-cli ----------------------------------------------------------------------
    def argv(self, *args):
        return [self.cli, "-d", self.path, "-u", self.url, "--user", self.user] + [str(a) for a in args]

    def env(self):
        """synchro-cli's environment: the password in SYNCHRO_PASSWORD, never in argv."""
        return dict(os.environ, SYNCHRO_PASSWORD=self.password)

    def _scan(self, what, r_stderr):
        if any(m in r_stderr for m in SANITIZER_MARKS):
            self.problems.append("%s: synchro-cli %s: sanitizer report:\n%s" % (self.name, what, r_stderr[-2000:]))

    def run(self, *args, timeout=60, fsize=None):
        """One synchro-cli command; (exit status, stdout). A process past timeout + GRACE_S is
        a hang: it is killed and reported. fsize: the process may write no file larger than
        that many bytes (RLIMIT_FSIZE, SIGXFSZ ignored: a write past it fails with EFBIG, as
        on a full disk); its exit status 1 (the store failed) is then expected."""
        self.counts["commands"] += 1
        preexec = None
        if fsize is not None:
            def preexec():
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        p = subprocess.Popen(self.argv(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=preexec, env=self.env())
        try:
            out, err = p.communicate(timeout=timeout + GRACE_S)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            self.problems.append("%s: synchro-cli %s hung (killed after %d s)" % (self.name, args[0], timeout + GRACE_S))
            return -9, out
        self._scan(args[0], err)
        if p.returncode not in (0, 3, 4, 5, 6) and not (fsize is not None and p.returncode == 1):
            self.problems.append("%s: synchro-cli %s exited %d: %s" % (self.name, " ".join(map(str, args[:2])),
                                                                        p.returncode, err.strip()[-500:]))
        return p.returncode, out

    def write(self, *args):
        """insert/update/delete/atomic; records the printed mutation ids."""
        rc, out = self.run(*args)
        if rc != 0:
            self.counts["refused"] += 1
            return []
        ids = out.split()
        ops = self._ops(args)
        if len(ids) != len(ops):
            self.problems.append("%s: synchro-cli %s printed %d ids for %d writes" % (self.name, args[0], len(ids), len(ops)))
        for mid, op in zip(ids, ops):
            self.authored[mid] = op
        self.counts["writes"] += len(ids)
        return ids

    @staticmethod
    def _ops(args):
        if args[0] != "atomic":
            return [(args[0], args[1], str(args[2]))]
        ops, cur = [], []
        for a in list(args[1:]) + ["--"]:
            if a == "--":
                ops.append((cur[0], cur[1], str(cur[2])))
                cur = []
            else:
                cur.append(a)
        return ops

    def sync(self, kill_after=None):
        """sync --once. kill_after: SIGKILL the process after that many seconds if it still
        runs (counted as a device killed in the middle of a sync). Returns the exit status."""
        self.counts["syncs"] += 1
        if kill_after is None:
            rc, _ = self.run("sync", "--once", "--timeout", SYNC_TIMEOUT_S, timeout=SYNC_TIMEOUT_S)
        else:
            self.counts["commands"] += 1
            p = subprocess.Popen(self.argv("sync", "--once", "--timeout", SYNC_TIMEOUT_S),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=self.env())
            try:
                _, err = p.communicate(timeout=kill_after)
                self._scan("sync", err)
                rc = p.returncode
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGKILL)
                p.communicate()
                self.counts["killed_mid_sync"] += 1
                return -9
        if rc == 3:
            self.counts["sync_incomplete"] += 1
        return rc

    # --- the store, read directly (never while a command of this device runs) --------------
    def db(self):
        return sqlite3.connect("file:%s?mode=ro" % self.path, uri=True, timeout=30)

    def known(self):
        """(todo pks, item pks) this device believes visible: server rows not deleted plus
        own unsent inserts, minus unsent deletes; a stale guess only makes a write refused."""
        todo, item = set(), set()
        with self.db() as db:
            for tbl, pk, row in db.execute("SELECT tbl, pk, row FROM rows WHERE deleted = 0"):
                if tbl == "todo":
                    todo.add(json.loads(pk))
                elif tbl == "item" and json.loads(row).get("deleted_at") is None:  # soft delete
                    item.add(json.loads(pk))
            for tbl, pk, op in db.execute("SELECT tbl, pk, op FROM intents WHERE state IN"
                                          " ('pending', 'waiting', 'sealed') AND tbl IN ('todo', 'item')"
                                          " ORDER BY ord"):
                s = todo if tbl == "todo" else item
                (s.discard if op == "delete" else s.add)(json.loads(pk))
            schema = db.execute("SELECT manifest FROM schemas ORDER BY version DESC LIMIT 1").fetchone()
        if schema is not None:
            m = json.loads(schema[0])
            fields = [f["field_id"] for t in m["tables"] if t["table_id"] == "todo" for f in t["fields"]]
            self.note_allowed = "note" in fields
        return todo, item

    def unsettled(self):
        with self.db() as db:
            return db.execute("SELECT mutation_id, state, op, tbl, pk, columns FROM intents WHERE state IN"
                              " ('conflict', 'rejected', 'schema_incompatible', 'blocked_by_predecessor')"
                              " ORDER BY ord").fetchall()

    def read_client_id(self):
        with self.db() as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'client_id'").fetchone()
        self.client_id = row[0] if row else None
        return self.client_id

    # --- the workload ---------------------------------------------------------------------
    def _word(self):
        return "w%04x" % self.rng.randrange(0x10000)

    def _todo_cols(self, insert):
        cols = ["title=%s" % self._word()]
        if insert or self.rng.random() < 0.4:
            cols.append("done=%s" % self.rng.choice(("true", "false")))
        if self.note_allowed and self.rng.random() < 0.3:
            cols.append("note=%s" % self._word())
        return cols

    def _item_cols(self):
        cols = []
        r = self.rng.random()
        # 3% of item writes break the CHECK (qty >= 0): validation_failed
        cols.append("qty=%d" % (-1 if r < 0.03 else self.rng.randrange(100)))
        if self.rng.random() < 0.3:
            cols.append("label=%s" % self._word())
        return cols

    def _one_write(self, todo, item, own, for_atomic=False):
        """One write as synchro-cli arguments (None when nothing fits)."""
        r = self.rng.random()
        hot_todo = [p for p in self.hot_todos if p in todo]
        hot_item = [str(i) for i in HOT_ITEMS if str(i) in item]
        if r < 0.25 or (not own and r < 0.52):
            pk = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
            own.append(pk)
            return ["insert", "todo", pk] + self._todo_cols(True)
        if r < 0.45:
            return ["update", "todo", self.rng.choice(own)] + self._todo_cols(False)
        if r < 0.52:
            pk = own.pop(self.rng.randrange(len(own)))
            return ["delete", "todo", pk]
        if r < 0.67 and hot_todo:
            return ["update", "todo", self.rng.choice(hot_todo)] + self._todo_cols(False)
        if r < 0.85 and hot_item:
            return ["update", "item", self.rng.choice(hot_item)] + self._item_cols()
        if r < 0.93:
            pk = str(self.rng.choice(ITEM_IDS))
            if pk in item:
                return ["update", "item", pk] + self._item_cols()
            return ["insert", "item", pk] + self._item_cols()
        if item and not for_atomic:
            pk = self.rng.choice(sorted(item))
            if int(pk) not in HOT_ITEMS or self.rng.random() < 0.2:
                return ["delete", "item", pk]
        return None

    def resolve_some(self):
        for mid, state, op, tbl, pk, columns in self.unsettled():
            if self.rng.random() < 0.4:
                continue  # left for later (or for good: a conflict is a terminal state)
            r = self.rng.random()
            if state == "conflict" and r < 0.5:
                args = ["resolve", "rebase", mid]
            elif state == "conflict" and r < 0.75:
                args = ["resolve", "accept", mid]
            elif state == "schema_incompatible" and r < 0.6 and columns:
                cols = {k: v for k, v in json.loads(columns).items() if k != "note"}
                if not cols:
                    cols = {"title": self._word()}
                args = ["resolve", "remap", mid] + ["%s:=%s" % (k, json.dumps(v)) for k, v in sorted(cols.items())]
            elif state == "blocked_by_predecessor" and r < 0.5:
                args = ["resolve", "rebase", mid]
            else:
                args = ["resolve", "discard", mid]
            rc, out = self.run(*args)
            if rc == 0:
                self.counts["resolutions"] += 1
                if args[1] in ("rebase", "remap") and out.strip():
                    self.authored[out.split()[0]] = (args[1], tbl, json.loads(pk))
            elif rc == 6 and args[1] != "discard":
                self.run("resolve", "discard", mid)  # e.g. a row the server deleted cannot be rebased

    def round(self, kill_prob=0.0, online=0.65):
        """One round: resolutions, 1..4 writes (sometimes an atomic transaction), and a sync
        (online) or none (offline). Returns the kind of sync done."""
        with self.lock:
            if self.retired:
                return "retired"
            self.resolve_some()
            todo, item = self.known()
            own = [p for p in todo if p not in self.hot_todos]
            for _ in range(self.rng.randint(1, 4)):
                if self.rng.random() < 0.12:
                    ops = [w for w in (self._one_write(todo, item, own, True) for _ in range(self.rng.randint(2, 3))) if w]
                    rows = set()
                    ops = [w for w in ops if (w[1], w[2]) not in rows and not rows.add((w[1], w[2]))]
                    if len(ops) >= 2:
                        self.counts["atomic"] += 1
                        args = ["atomic"]
                        for w in ops:
                            args += (["--"] if len(args) > 1 else []) + w
                        self.write(*args)
                        continue
                w = self._one_write(todo, item, own)
                if w:
                    self.write(*w)
            if self.rng.random() >= online:
                return "offline"
            if self.rng.random() < kill_prob:
                self.sync(kill_after=self.rng.uniform(0.0, 0.6))
                return "killed"
            # (a browser store has no file of its own: not there)
            if kill_prob > 0 and self.path is not None and self.rng.random() < STORE_FULL_PROB:
                self.store_full_sync()
                return "store_full"
            self.sync()
            return "sync"

    def store_full_sync(self):
        """A sync whose store runs out of space: no file of the process may grow more than a
        few kB past the largest of the store's files (the database, its WAL or journal), so
        a commit of the sync fails part way (SQLITE_FULL or an I/O error). Then the store
        must pass synchro-cli verify; the next commands go on without the limit."""
        size = max(os.path.getsize(f) for f in (self.path, self.path + "-wal", self.path + "-journal")
                   if os.path.exists(f))
        self.counts["store_full"] += 1
        self.counts["syncs"] += 1
        rc, _ = self.run("sync", "--once", "--timeout", SYNC_TIMEOUT_S, timeout=SYNC_TIMEOUT_S,
                         fsize=size + self.rng.randrange(0, 8192))
        if rc == 1:
            self.counts["store_full_failed"] += 1
        rc, out = self.run("verify")
        if rc != 0:
            self.problems.append("%s: synchro-cli verify exited %d after a sync on a full disk: %s"
                                 % (self.name, rc, out.strip()[-500:]))

    def settle(self, rounds=8):
        """Final syncs (no writes, no resolutions) until nothing is left to send or the rounds
        run out; the checker judges what remains."""
        with self.lock:
            if self.retired:
                return
            for _ in range(rounds):
                rc = self.sync()
                if rc == 0:
                    with self.db() as db:
                        left = db.execute("SELECT count(*) FROM intents WHERE state IN"
                                          " ('pending', 'waiting', 'sealed')").fetchone()[0]
                    if left == 0:
                        return
                time.sleep(0.5)
