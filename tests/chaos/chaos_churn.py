# SPDX-License-Identifier: BSD-2-Clause
"""Membership churn in the chaos suite (doc/reliability.md, doc/protocol.md "Membership
scopes"): a server-side actor that changes who reads what while the devices write and the
faults run, on contrib/example's shared lists (todo.list_id -> todo_list, list_member).

Before the run it makes LISTS lists (one of each user, one more of alice's: each owner is
its first member), a few to-dos in them and a few shares. During the run, one operation
per transaction on the primary, each committed before the next starts: a share (a
list_member row inserted), a removal (one deleted), a to-do moved to another list or out of
every list, a to-do inserted into a list, its title changed (to "k<n>", n the operation's
number), a to-do deleted. The devices see the to-dos they read and update or delete them
as they do their own (write members): a share gives them more rows to write, a removal
turns their queued writes into rejections.

Its record (Model) is the checker's truth of who read what when: every key's value after
each operation, the number of operations started and of those whose commit returned (the
fault proxy reads both around each pull and rebuild page: chaos_checker.py's scope rule),
each committed operation's WAL position after its commit (a pull's cursor at or past it
proves the pull's snapshot holds it: a replica's pull is placed by its cursor) and its
transaction id (a stream break's gap excuses its row from the chain rule). A connection
lost in the middle of an operation (PostgreSQL restarted, failed over, disk full) leaves it
uncertain: once connected again, the actor reads whether it took effect and keeps or drops
it from the record."""

import bisect
import random
import threading
import time
import uuid

import psycopg2

LISTS = 4                  # alice, bob, carol, alice
TODOS_PER_LIST = 3         # before the run
OWNERS = ("alice", "bob", "carol")
TITLE_PREFIX = "k"         # a title the actor gave: "k<n>" (the devices write "w<hex>")
WEIGHTS = (("share", 10), ("remove", 8), ("move_todo", 8), ("insert_todo", 5), ("title_todo", 6),
           ("delete_todo", 2))


class History:
    """A key's values through the operations: at(i) is the value after operation i
    (operation 0: the rows before the run)."""

    def __init__(self):
        self.ops, self.values = [], []

    def set(self, op, value):
        self.ops.append(op)
        self.values.append(value)

    def drop(self, op):
        if self.ops and self.ops[-1] == op:
            self.ops.pop()
            self.values.pop()

    def at(self, i):
        k = bisect.bisect_right(self.ops, i)
        return self.values[k - 1] if k else None


class Model:
    def __init__(self):
        self.h = {}
        self.lock = threading.Lock()

    def set(self, op, key, value):
        with self.lock:
            self.h.setdefault(key, History()).set(op, value)

    def drop(self, op, key):
        with self.lock:
            if key in self.h:
                self.h[key].drop(op)

    def at(self, key, i):
        h = self.h.get(key)
        return h.at(i) if h else None

    def now(self, key):
        h = self.h.get(key)
        return h.values[-1] if h and h.values else None

    def known(self, key):
        return key in self.h


def _uid(rng):
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


class Churn(threading.Thread):
    def __init__(self, seed, users):
        super().__init__(name="membership-churn", daemon=True)
        self.rng = random.Random("%d/churn" % seed)
        self.users = tuple(users)
        self.lists = [_uid(self.rng) for _ in range(LISTS)]
        self.list_owner = {lst: OWNERS[i % len(OWNERS)] for i, lst in enumerate(self.lists)}
        self.model = Model()
        self.started = self.done = 0
        self.commit_lsns = []      # (operation, WAL position after its commit), in order
        self.xids = {}             # 32-bit xid -> the to-do an operation wrote (or None)
        self.todos = []            # the to-dos the actor made and has not deleted
        self.counts = {}
        self.uncertain = {"kept": 0, "dropped": 0}
        self.problems = []
        self.stopping = threading.Event()
        self.db = None

    # --- positions, read by the fault proxy around each pull ---------------------------------
    def position(self):
        return self.done, self.started

    def reached_by(self, lsn):
        """The last operation whose commit a snapshot at WAL position lsn holds (its recorded
        position, taken after its commit returned, is at or before lsn)."""
        if getattr(self, "_by_lsn", None) is None or len(self._by_lsn[0]) != len(self.commit_lsns):
            pairs = sorted((pos, op) for op, pos in self.commit_lsns)
            best, tops = 0, []
            for _, op in pairs:
                best = max(best, op)
                tops.append(best)
            self._by_lsn = ([pos for pos, _ in pairs], tops)
        positions, tops = self._by_lsn
        n = bisect.bisect_right(positions, lsn)
        return tops[n - 1] if n else 0

    # --- setup ----------------------------------------------------------------------------
    def setup(self, run_sql_file):
        """The lists, their first to-dos and shares, written before the devices connect; the
        record's operation 0 read back from the tables."""
        sql = []
        for i, lst in enumerate(self.lists):
            sql.append("INSERT INTO public.todo_list (id, name, owner) VALUES ('%s', 'chaos %d', '%s');"
                       % (lst, i, self.list_owner[lst]))
            for _ in range(TODOS_PER_LIST):
                pk = _uid(self.rng)
                sql.append("INSERT INTO public.todo (id, title, owner, list_id) VALUES ('%s', '%s0', '%s', '%s');"
                           % (pk, TITLE_PREFIX, self.rng.choice(OWNERS), lst))
            other = self.rng.choice([u for u in self.users if u != self.list_owner[lst]])
            sql.append("INSERT INTO public.list_member VALUES ('%s', '%s');" % (lst, other))
        run_sql_file("\n".join(sql))
        self.connect()
        with self.db.cursor() as cur:
            for lst in self.lists:
                for u in self.users:
                    self.model.set(0, ("lm", lst, u), False)
            cur.execute("SELECT list_id::text, user_id FROM public.list_member WHERE list_id = ANY (%s::uuid[])",
                        (self.lists,))
            for lst, u in cur.fetchall():
                self.model.set(0, ("lm", lst, u), True)
            cur.execute("SELECT id::text, list_id::text, owner, title FROM public.todo WHERE list_id = ANY (%s::uuid[])",
                        (self.lists,))
            for pk, lst, owner, title in cur.fetchall():
                self.todos.append(pk)
                self.model.set(0, ("todo", pk), (lst, owner))
                self.model.set(0, ("title", pk, title), 0)
            cur.execute("SELECT pg_current_wal_lsn()::text")
            self.commit_lsns.append((0, _lsn(cur.fetchone()[0])))
        self.db.commit()

    def connect(self, timeout=90):
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self.db is not None:
                    self.db.close()
            except psycopg2.Error:
                pass
            try:
                self.db = psycopg2.connect("", connect_timeout=5,
                                           options="-c lock_timeout=5000 -c statement_timeout=15000")
                return
            except psycopg2.Error:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    # --- the run --------------------------------------------------------------------------
    def run(self):
        try:
            while not self.stopping.is_set():
                self.step()
                time.sleep(self.rng.uniform(0.02, 0.15))
        except Exception as e:  # noqa: BLE001 - reported as a violation
            self.problems.append("membership churn: %r (after operation %d)" % (e, self.done))

    def finish(self):
        self.stopping.set()
        self.join(120)
        if self.is_alive():
            self.problems.append("membership churn: the actor did not stop")
        if self.db is not None:
            self.db.close()

    def pick(self):
        """The next operation: (kind, SQL, record entries, the to-do it writes, the check of
        whether it took effect)."""
        r, m = self.rng, self.model
        kind = r.choices([k for k, _ in WEIGHTS], [w for _, w in WEIGHTS])[0]
        k = self.started + 1
        if kind in ("share", "remove"):
            lst, u = r.choice(self.lists), r.choice(self.users)
            present = m.now(("lm", lst, u))
            if (kind == "share") == bool(present):
                return None
            if kind == "share":
                return (kind, "INSERT INTO public.list_member VALUES ('%s', '%s')" % (lst, u),
                        [(("lm", lst, u), True)], None,
                        "SELECT EXISTS (SELECT 1 FROM public.list_member WHERE list_id = '%s' AND user_id = '%s')"
                        % (lst, u))
            return (kind, "DELETE FROM public.list_member WHERE list_id = '%s' AND user_id = '%s'" % (lst, u),
                    [(("lm", lst, u), False)], None,
                    "SELECT NOT EXISTS (SELECT 1 FROM public.list_member WHERE list_id = '%s' AND user_id = '%s')"
                    % (lst, u))
        if kind == "insert_todo" or not self.todos:
            pk, lst, owner = _uid(r), r.choice(self.lists), r.choice(OWNERS)
            title = "%s%d" % (TITLE_PREFIX, k)
            return ("insert_todo", "INSERT INTO public.todo (id, title, owner, list_id) VALUES"
                    " ('%s', '%s', '%s', '%s')" % (pk, title, owner, lst),
                    [(("todo", pk), (lst, owner)), (("title", pk, title), k)], pk,
                    "SELECT EXISTS (SELECT 1 FROM public.todo WHERE id = '%s')" % pk)
        pk = r.choice(self.todos)
        cur = m.now(("todo", pk))
        if kind == "move_todo":
            # another list, or (one move in eight) out of every list: its owner's alone
            choices = [x for x in self.lists if x != cur[0]] + ([None] if cur[0] is not None else [])
            lst = None if cur[0] is not None and r.random() < 0.125 else r.choice([x for x in choices if x])
            value = "NULL" if lst is None else "'%s'" % lst
            return (kind, "UPDATE public.todo SET list_id = %s WHERE id = '%s'" % (value, pk),
                    [(("todo", pk), (lst, cur[1]))], pk,
                    "SELECT COALESCE((SELECT list_id IS NOT DISTINCT FROM %s::uuid FROM public.todo WHERE id = '%s'),"
                    " false)" % (value, pk))
        if kind == "title_todo":
            title = "%s%d" % (TITLE_PREFIX, k)
            return (kind, "UPDATE public.todo SET title = '%s' WHERE id = '%s'" % (title, pk),
                    [(("title", pk, title), k)], pk,
                    "SELECT EXISTS (SELECT 1 FROM public.todo WHERE id = '%s' AND title = '%s')" % (pk, title))
        return (kind, "DELETE FROM public.todo WHERE id = '%s'" % pk, [(("todo", pk), None)], pk,
                "SELECT NOT EXISTS (SELECT 1 FROM public.todo WHERE id = '%s')" % pk)

    def step(self):
        op = self.pick()
        if op is None:
            return
        kind, sql, sets, pk, took = op
        k = self.started + 1
        # The record holds operation k before it starts: a pull answered after it started
        # may see it. Its commit has returned when done is k.
        for key, value in sets:
            self.model.set(k, key, value)
        self.started = k
        try:
            with self.db.cursor() as cur:
                cur.execute(sql)
                cur.execute("SELECT txid_current() % 4294967296")
                xid = int(cur.fetchone()[0])
            self.db.commit()
            committed = True
        except psycopg2.Error:
            # Not committed, or committed with its answer lost: read which, once connected
            # (again if the server goes away once more meanwhile).
            xid = None
            for attempt in range(10):
                self.connect()
                try:
                    with self.db.cursor() as cur:
                        cur.execute(took)
                        committed = bool(cur.fetchone()[0])
                    self.db.commit()
                    break
                except psycopg2.Error:
                    if attempt == 9:
                        raise
                    time.sleep(1)
            self.uncertain["kept" if committed else "dropped"] += 1
        if not committed:
            for key, _ in sets:
                self.model.drop(k, key)
        else:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            if kind == "insert_todo":
                self.todos.append(pk)
            elif kind == "delete_todo":
                self.todos.remove(pk)
            if xid is not None:
                self.xids[xid] = pk
        self.done = k
        if committed:
            try:
                with self.db.cursor() as cur:
                    cur.execute("SELECT pg_current_wal_lsn()::text")
                    self.commit_lsns.append((k, _lsn(cur.fetchone()[0])))
                self.db.commit()
            except psycopg2.Error:
                self.connect()

    # --- the checker's questions ----------------------------------------------------------
    def reads(self, user, pk, row, i):
        """Does user read this delivered to-do row in state i? (None: not a row the actor
        made; the checker then asks for the user's own row in no list.)"""
        m = self.model
        if not m.known(("todo", pk)):
            return None
        cur = m.at(("todo", pk), i)
        if cur is None or cur[0] != row.get("list_id") or cur[1] != row.get("owner"):
            return False
        if not (cur[1] == user or (cur[0] is not None and m.at(("lm", cur[0], user), i))):
            return False
        title = row.get("title") or ""
        if title.startswith(TITLE_PREFIX) and title[len(TITLE_PREFIX):].isdigit():
            given = m.at(("title", pk, title), i)
            return given is not None and given <= i
        return True

    def gap_rows(self, gap_xids):
        """The to-dos the actor wrote in transactions of a stream break's gap."""
        return {("todo", pk) for x, pk in self.xids.items() if pk is not None and x in gap_xids}

    def figures(self):
        fig = {"operations": self.done, "uncertain_kept": self.uncertain["kept"],
               "uncertain_dropped": self.uncertain["dropped"]}
        fig.update(self.counts)
        return fig


def _lsn(text):
    """A pg_lsn's text ("16/B374D848") as a number; cursors carry it as 16 hex digits."""
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def cursor_lsn(cursor):
    """The commit LSN of a cursor "c1.<16 hex>.<8 hex>" (None when it is not one)."""
    try:
        return int(cursor.split(".")[1], 16)
    except (AttributeError, IndexError, ValueError):
        return None
