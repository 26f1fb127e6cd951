# SPDX-License-Identifier: BSD-2-Clause
"""The chaos suite's checker: the whole history, from every device's store (intents,
transactions, sealed batches and their attempts, replica rows) and from the database (the
mutation and batch ledgers, the changelog, the row fences, the app tables), plus what the
fault proxy saw. Each rule below is a violation when broken:

intents    every mutation id synchro-cli printed is in its store; after the final sync each
           intent is terminal (applied, conflict, rejected, schema_incompatible, resolved,
           superseded or cancelled before send) or explained-blocked (blocked_by_predecessor
           behind a predecessor that did not apply; blocked_limit with its reason); only a
           retired device may keep queued work. Its state agrees with the ledger's outcome and
           its stored outcome is the ledger's bytes; the ledger holds no mutation the device
           did not send; an atomic transaction went in one batch, all applied or none.
once       every mutation the ledger accepted made exactly one changelog transition, carrying
           its mutation id; no transition names a mutation the ledger did not accept. A
           mutation committed in the gap of a stream break (its replication slot dropped)
           made none, by design: the topology names those (stream_gap_mutations), and their
           rows are left out of the chain rule below (the replicas rule still holds them).
chains     per row, in commit order: an accepted insert is the row's first transition; an
           accepted update or delete had the previous transition's version as its base and
           followed a live state; its transition has the version its outcome returned; the
           row fence is the last transition.
replay     every 200 answer to one batch (each attempt a device recorded, each response the
           proxy saw, delivered or dropped) is byte-identical to the batch ledger's response;
           no answer but 200, 409 (generation, retired), 422, 429, 503 or a lost response.
replicas   after the final sync each device's replica is the server's rows of its user's
           scope (versions and values; a to-do is in it when the user owns it or a
           list_member row names the user for its list) and holds no row outside it.
scope      with membership churn (chaos_churn.py): every to-do upsert a pull or rebuild page
           delivered was readable by the device's user at that page's position in the commit
           order, by the churn actor's own record: some state i between the last operation
           committed before the page was sent (for a pull, also the last one its cursor
           holds; a replica's pull is placed by its cursor alone, a replica's rebuild page
           not at all) and the last one started when it was answered, where the row exists
           in the delivered list with the delivered owner, the user owns it or is a member of
           that list, and a title the actor gave it was given at or before i. A to-do the
           actor never wrote must be the user's own, in no list. Scope entries (walsync's
           entries of a share, a removal or a move, ordinals from 2^30) are not transitions:
           the chain rule skips them, and an actor's direct write is a transition without a
           mutation id. A pull answered cursor_expired sent a cursor below the compaction
           horizon the run ended with (only a compaction, a publish that changes what pull
           delivers or a stream break moves it). In a run without faults, no pull was
           answered 409 and each device rebuilt once, to start: a share never makes a device
           rebuild.
pulls      no pull answered 200 with a cursor older than the one its device sent (a read
           replica behind the client, or any other server state older than what it had seen).
topology   the topology's own checks (chaos_topology.py: a standby's changelog and fences are
           the primary's once it replayed).
logs       no hang, no crash and no sanitizer report (the devices' stderr; the stack's logs
           and PostgreSQL's are scanned by the harness)."""

import json
import sqlite3
import time

import psycopg2

from chaos_churn import cursor_lsn

TERMINAL = {"applied", "superseded_before_send", "cancelled_before_send", "conflict", "rejected",
            "schema_incompatible", "resolved"}
QUEUED = {"pending", "waiting", "sealed"}
LEDGER_OF_STATE = {"applied": "applied", "conflict": "conflict", "rejected": "rejected_terminal",
                   "schema_incompatible": "rejected_terminal"}
PUSH_STATUSES = {0, 200, 409, 422, 429, 503}
EXPECTED_409 = {"client_generation_expired", "client_retired"}


SCOPE_ORDINAL = 1 << 30  # src/store/changelog.h: walsync's scope entries' ordinals start here


class Checker:
    def __init__(self, stack, proxy, devices, errors, churn=None, faults=True):
        self.churn = churn
        self.faults = faults
        self.stack = stack
        self.proxy = proxy
        self.devices = devices
        self.violations = list(errors)
        self.db = psycopg2.connect("")
        self.db.autocommit = True
        self.stats = {}

    def v(self, text):
        self.violations.append(text)

    def rows(self, sql, args=()):
        with self.db.cursor() as cur:
            cur.execute(sql, args)
            return cur.fetchall()

    # --- waiting for walsync --------------------------------------------------------------
    def wait_materialized(self, timeout=120):
        """Until every accepted mutation has its changelog transition and the changelog
        stopped growing (walsync caught up with the WAL). The mirror is the changelog's
        whole history (compaction removes entries from the changelog, not from it); a
        mutation committed in a stream break's gap never gets a transition, so it is not
        waited for."""
        gap = self.stack.stream_gap_mutations()
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                missing = {m for (m,) in self.rows(
                    "SELECT m.mutation_id::text FROM synchro.mutations m WHERE m.status = 'applied'"
                    " AND NOT EXISTS (SELECT 1 FROM public.chaos_changelog_mirror c"
                    " WHERE c.mutation_id = m.mutation_id)")}
                (total,), = self.rows("SELECT count(*) FROM public.chaos_changelog_mirror")
            except psycopg2.Error:
                self.db = psycopg2.connect("")
                self.db.autocommit = True
                time.sleep(0.5)
                continue
            if not (missing - gap) and last == total:
                return
            last = total
            time.sleep(1.0)
        print("walsync had not materialized every accepted mutation after %d s" % timeout, flush=True)

    # --- loading --------------------------------------------------------------------------
    def load(self):
        self.ledger = {}
        for cid, mid, bid, table, pk, op, status, code, outcome in self.rows(
                "SELECT client_id::text, mutation_id::text, batch_id::text, table_id, pk, operation, status,"
                " code, outcome FROM synchro.mutations"):
            self.ledger[(cid, mid)] = {"batch": bid, "table": table, "pk": pk, "op": op, "status": status,
                                       "code": code, "outcome": bytes(outcome)}
        self.batches = {}
        for cid, bid, status, resp, atomic in self.rows(
                "SELECT client_id::text, batch_id::text, http_status, response, atomic FROM synchro.batches"):
            self.batches[bid] = (cid, status, bytes(resp) if resp is not None else None, atomic)
        # The history: the mirror at or below the compaction horizon (compacted away from the
        # changelog), the changelog itself above it; above it both must agree.
        cols = "table_id, pk, version, state, mutation_id::text, client_id::text, owner_after, ordinal"
        above = "(commit_lsn, ordinal) > (SELECT commit_lsn, ordinal FROM synchro.changelog_horizon)"
        self.changelog = self.rows(
            "SELECT %s FROM (SELECT * FROM public.chaos_changelog_mirror WHERE NOT %s"
            " UNION ALL SELECT * FROM synchro.changelog WHERE %s) h ORDER BY commit_lsn, ordinal"
            % (cols, above, above))
        (self.compacted,), = self.rows("SELECT count(*) FROM public.chaos_changelog_mirror WHERE NOT %s" % above)
        for lsn, ordinal, where in self.rows(
                "SELECT commit_lsn::text, ordinal, 'changelog only' FROM (SELECT commit_lsn, ordinal FROM"
                " synchro.changelog WHERE %s EXCEPT SELECT commit_lsn, ordinal FROM public.chaos_changelog_mirror)"
                " x UNION ALL SELECT commit_lsn::text, ordinal, 'mirror only' FROM (SELECT commit_lsn, ordinal"
                " FROM public.chaos_changelog_mirror WHERE %s EXCEPT SELECT commit_lsn, ordinal FROM"
                " synchro.changelog) y" % (above, above)):
            if where == "changelog only":
                self.v("changelog entry %s/%d is not in the mirror" % (lsn, ordinal))
        self.fences = {(t, pk): (state, version, mid) for t, pk, state, version, mid in self.rows(
            "SELECT table_id, pk, state, version, mutation_id::text FROM synchro.row_fences")}
        self.todo = {pk: (owner, title, done, note, lst) for pk, owner, title, done, note, lst in self.rows(
            "SELECT id::text, owner, title, done, note, list_id::text FROM public.todo")}
        self.members = set(self.rows("SELECT list_id::text, user_id FROM public.list_member"))
        self.item = {pk: (qty, label, deleted) for pk, qty, label, deleted in self.rows(
            "SELECT id::text, qty, label, deleted_at IS NOT NULL FROM public.item")}
        self.retired = {cid for (cid,) in self.rows("SELECT client_id::text FROM synchro.retirements")}
        self.stores = {}
        for d in self.devices:
            if hasattr(d, "store_state"):  # a browser store: read through its page
                self.stores[d.name] = d.store_state()
                continue
            db = sqlite3.connect("file:%s?mode=ro" % d.path, uri=True, timeout=30)
            db.row_factory = sqlite3.Row
            s = {"intents": {r["mutation_id"]: dict(r) for r in db.execute(
                     "SELECT i.*, t.atomic AS txn_atomic FROM intents i JOIN txns t ON t.id = i.txn")},
                 "batches": {r["batch_id"]: dict(r) for r in db.execute("SELECT * FROM batches")},
                 "members": {}, "attempts": {},
                 "rows": {(r["tbl"], json.loads(r["pk"])): dict(r) for r in db.execute("SELECT * FROM rows")}}
            for bid, mid in db.execute("SELECT batch_id, mutation_id FROM batch_members"):
                s["members"].setdefault(bid, set()).add(mid)
            for bid, status, resp in db.execute("SELECT batch_id, status, response FROM attempts ORDER BY id"):
                s["attempts"].setdefault(bid, []).append((status, bytes(resp) if resp is not None else None))
            db.close()
            self.stores[d.name] = s

    # --- the rules ------------------------------------------------------------------------
    def check(self):
        self.load()
        for d in self.devices:
            self.violations.extend(d.problems)
            self.check_intents(d, self.stores[d.name])
            self.check_atomic(d, self.stores[d.name])
            self.check_batches(d, self.stores[d.name])
        self.check_ledger_owned()
        self.check_once_and_chains()
        for d in self.devices:
            if not d.retired:
                self.check_replica(d, self.stores[d.name])
        self.check_proxy()
        self.check_pulls()
        self.check_scope_positions()
        self.check_no_rebuild()
        self.stack.check_topology(self)

    def check_intents(self, d, s):
        intents = s["intents"]
        for mid in d.authored:
            if mid not in intents:
                self.v("%s: intent %s (synchro-cli printed it) is missing from the store" % (d.name, mid))
        for mid, i in intents.items():
            state = i["state"]
            led = self.ledger.get((d.client_id, mid))
            if state in QUEUED:
                if not d.retired:
                    self.v("%s: intent %s still %s after the final sync" % (d.name, mid, state))
            elif state == "blocked_by_predecessor":
                pred = intents.get(i["pred"] or i["link"] or "")
                if pred is None or pred["state"] in QUEUED | {"applied"}:
                    self.v("%s: intent %s blocked_by_predecessor without a failed predecessor (%s)"
                           % (d.name, mid, pred["state"] if pred else "none"))
            elif state == "blocked_limit":
                if i["code"] not in ("atomic_group_blocked", "push_limit"):
                    self.v("%s: intent %s blocked_limit without a reason (%r)" % (d.name, mid, i["code"]))
            elif state not in TERMINAL:
                self.v("%s: intent %s in unknown state %r" % (d.name, mid, state))
            # agreement with the ledger
            if state in LEDGER_OF_STATE:
                if led is None:
                    self.v("%s: intent %s is %s but the ledger has no outcome for it" % (d.name, mid, state))
                    continue
                if led["status"] != LEDGER_OF_STATE[state] or \
                        (state == "schema_incompatible") != (led["code"] == "schema_incompatible"):
                    self.v("%s: intent %s is %s, the ledger says %s/%s" % (d.name, mid, state, led["status"], led["code"]))
                if (i["outcome"] or "").encode() != led["outcome"]:
                    self.v("%s: intent %s: its stored outcome differs from the ledger's bytes" % (d.name, mid))
            elif led is not None:
                if state == "resolved" and led["status"] != "applied":
                    continue  # a conflict or rejection, then resolved by the app
                if state == "sealed" and d.retired:
                    continue  # committed, its answer lost, then the client was retired
                self.v("%s: intent %s is %s but the ledger has it %s" % (d.name, mid, state, led["status"]))

    def check_atomic(self, d, s):
        txns = {}
        for mid, i in s["intents"].items():
            if i["txn_atomic"]:
                txns.setdefault(i["txn"], []).append(i)
        for txn, members in txns.items():
            sent = [i for i in members if i["batch_id"]]
            folded = [i for i in members if i["state"] in ("superseded_before_send", "cancelled_before_send")]
            if not sent:
                continue
            batches = {i["batch_id"] for i in sent}
            if len(batches) != 1 or len(sent) + len(folded) != len(members):
                self.v("%s: atomic transaction %d split: members %s" % (
                    d.name, txn, ", ".join("%s %s %s" % (i["mutation_id"][:8], i["state"], (i["batch_id"] or "-")[:8])
                                           for i in members)))
                continue
            bid = batches.pop()
            b = s["batches"].get(bid)
            if b is None or not b["atomic"] or s["members"].get(bid, set()) != {i["mutation_id"] for i in sent}:
                self.v("%s: atomic transaction %d: batch %s does not carry exactly its members" % (d.name, txn, bid))
            applied = [i for i in sent if self.ledger.get((d.client_id, i["mutation_id"]), {}).get("status") == "applied"]
            if applied and len(applied) != len(sent):
                self.v("%s: atomic transaction %d: %d of %d members applied" % (d.name, txn, len(applied), len(sent)))

    def check_batches(self, d, s):
        for bid, b in s["batches"].items():
            server = self.batches.get(bid)
            oks = [r for st, r in s["attempts"].get(bid, []) if st == 200]
            for st, r in s["attempts"].get(bid, []):
                if st not in PUSH_STATUSES:
                    self.v("%s: batch %s answered %d" % (d.name, bid, st))
                elif st == 409:
                    code = _error_code(r)
                    if code not in EXPECTED_409:
                        self.v("%s: batch %s answered 409 %s" % (d.name, bid, code))
            if oks:
                if server is None or server[1] != 200:
                    self.v("%s: batch %s answered 200 but the ledger has no 200 for it" % (d.name, bid))
                    continue
                if any(r != server[2] for r in oks):
                    self.v("%s: batch %s: a 200 answer differs from the ledger's response" % (d.name, bid))
                # Store version 2: a completed batch's response is its last attempt's (a 200).
                last = s["attempts"][bid][-1]
                if b["state"] == "completed" and (last[0] != 200 or last[1] != server[2]):
                    self.v("%s: batch %s: the stored response differs from the ledger's" % (d.name, bid))
            elif b["state"] == "completed":
                self.v("%s: batch %s completed without a 200 attempt" % (d.name, bid))

    def check_ledger_owned(self):
        by_client = {d.client_id: d for d in self.devices}
        for bid, (cid, status, _, _) in self.batches.items():
            d = by_client.get(cid)
            if d is None or bid not in self.stores[d.name]["batches"]:
                self.v("the batch ledger holds batch %s no device sealed" % bid)
            elif self.stores[d.name]["batches"][bid]["state"] == "superseded":
                self.v("%s: batch %s was superseded (409/422) but the ledger completed it" % (d.name, bid))
        for (cid, mid), led in self.ledger.items():
            d = by_client.get(cid)
            if d is None:
                self.v("ledger mutation %s of an unknown client %s" % (mid, cid))
            elif mid not in self.stores[d.name]["intents"]:
                self.v("%s: the ledger holds mutation %s the device never authored" % (d.name, mid))

    def base_of(self, cid, mid):
        d = next((x for x in self.devices if x.client_id == cid), None)
        i = self.stores[d.name]["intents"].get(mid) if d else None
        return i["base"] if i else None

    def check_once_and_chains(self):
        applied = {mid: (cid, led) for (cid, mid), led in self.ledger.items() if led["status"] == "applied"}
        seen = {}
        per_row = {}
        self.stats["scope_entries"] = 0
        for entry in self.changelog:
            table, pk, version, state, mid, cid, owner, ordinal = entry
            if ordinal >= SCOPE_ORDINAL:
                # an entry of a share, a removal or a move: the row's version for its new or
                # former readers, not a transition
                self.stats["scope_entries"] += 1
                if mid is not None:
                    self.v("%s %s: scope entry %d carries mutation %s" % (table, pk, ordinal, mid))
                continue
            per_row.setdefault((table, pk), []).append(entry)
            if mid is not None:
                seen[mid] = seen.get(mid, 0) + 1
        gap = self.stack.stream_gap_mutations() & set(applied)
        # the rows those mutations wrote, named as the changelog names them (the devices'
        # own record of each mutation id: table and primary key as synchro-cli took them)
        authored = {mid: op for d in self.devices for mid, op in d.authored.items()}
        gap_rows = {(authored[mid][1], str(authored[mid][2])) for mid in gap if mid not in seen and mid in authored}
        gap_rows |= {(applied[mid][1]["table"], _pk_text(applied[mid][1]["pk"])) for mid in gap if mid not in seen}
        if self.churn:
            gap_rows |= self.churn.gap_rows(getattr(self.stack, "gap_xids", set()))
        self.stats["in_stream_break_gap"] = sum(1 for mid in gap if mid not in seen)
        self.stats["doubled"] = sum(1 for n in seen.values() if n > 1)
        self.stats["lost"] = sum(1 for mid in applied if mid not in seen and mid not in gap)
        for mid, n in seen.items():
            if n > 1:
                self.v("mutation %s made %d changelog transitions (doubled)" % (mid, n))
            if mid not in applied:
                self.v("changelog transition of mutation %s, which the ledger did not accept" % mid)
        for mid in applied:
            if mid not in seen and mid not in gap:
                self.v("accepted mutation %s has no changelog transition (lost)" % mid)
        for (table, pk), entries in per_row.items():
            if (table, pk) in gap_rows:
                continue
            prev = None
            churned = self.churn is not None and table == "todo" and self.churn.model.known(("todo", pk))
            for n, (_, _, version, state, mid, cid, _, _) in enumerate(entries):
                if mid is None:
                    if n != 0 and not churned:
                        self.v("%s %s: a transition without a mutation id after the first" % (table, pk))
                    prev = (version, state)
                    continue
                if mid not in applied:
                    prev = (version, state)
                    continue
                led = applied[mid][1]
                outcome = json.loads(led["outcome"])
                if outcome.get("server_version") != version:
                    self.v("%s %s: mutation %s transition version %s, its outcome said %s"
                           % (table, pk, mid, version, outcome.get("server_version")))
                if led["op"] == "insert":
                    if prev is not None:
                        self.v("%s %s: accepted insert %s is not the row's first transition" % (table, pk, mid))
                else:
                    base = self.base_of(cid, mid)
                    if prev is None or prev[1] != "live" or base != prev[0]:
                        self.v("%s %s: accepted %s %s had base %s, the previous transition was %s"
                               % (table, pk, led["op"], mid, base, prev))
                if (led["op"] == "delete") != (state == "deleted"):
                    self.v("%s %s: accepted %s %s made a %s transition" % (table, pk, led["op"], mid, state))
                prev = (version, state)
            fence = self.fences.get((table, pk))
            last = entries[-1]
            if fence is None or fence[0] != last[3] or fence[1] != last[2] or fence[2] != last[4]:
                self.v("%s %s: the fence %s is not the last transition %s" % (table, pk, fence, last[2:5]))
        self.stats["accepted"] = len(applied)

    def in_scope(self, user, pk):
        owner, lst = self.todo[pk][0], self.todo[pk][4]
        return owner == user or (lst is not None and (lst, user) in self.members)

    def check_replica(self, d, s):
        rows = s["rows"]
        mine = {pk for pk in self.todo if self.in_scope(d.user, pk)}
        for pk in mine:
            fence = self.fences.get(("todo", pk))
            r = rows.get(("todo", pk))
            shared = self.todo[pk][0] != d.user
            what = "todo %s%s" % (pk, " (in list %s, in its user's scope)" % self.todo[pk][4] if shared else "")
            if r is None or r["deleted"] or fence is None or r["server_version"] != fence[1]:
                self.v("%s: %s diverges: replica %s, server version %s"
                       % (d.name, what, None if r is None else (r["deleted"], r["server_version"]), fence and fence[1]))
                continue
            row = json.loads(r["row"])
            owner, title, done, note, lst = self.todo[pk]
            if (row.get("owner"), row.get("title"), row.get("done"), row.get("list_id")) != (owner, title, done, lst) or \
                    ("note" in row and row["note"] != note):
                self.v("%s: %s values diverge" % (d.name, what))
        for pk, i in self.item.items():
            fence = self.fences.get(("item", pk))
            r = rows.get(("item", pk))
            if r is None and i[2]:
                continue  # deleted before this device's rebuild ever saw it
            # a soft-deleted item stays a row whose deleted_at is set (or a deleted row)
            gone = r is not None and (r["deleted"] or json.loads(r["row"] or "{}").get("deleted_at") is not None)
            if r is None or fence is None or r["server_version"] != fence[1] or gone != i[2]:
                self.v("%s: item %s diverges: replica %s, server %s %s"
                       % (d.name, pk, None if r is None else (r["deleted"], r["server_version"]), i, fence))
                continue
            if not i[2]:
                row = json.loads(r["row"])
                if (row.get("qty"), row.get("label")) != (i[0], i[1]):
                    self.v("%s: item %s values diverge" % (d.name, pk))
        for (tbl, pk), r in rows.items():
            if tbl == "todo" and pk not in mine:
                if pk in self.todo and not r["deleted"]:
                    self.v("%s: holds todo %s of user %s (list %s), outside its user's scope"
                           % (d.name, pk, self.todo[pk][0], self.todo[pk][4]))
                elif not r["deleted"]:
                    self.v("%s: holds todo %s, which the server does not have" % (d.name, pk))
            elif tbl == "item" and pk not in self.item:
                self.v("%s: holds item %s, which the server does not have" % (d.name, pk))
        self.stats["divergent"] = self.stats.get("divergent", 0)

    def check_scope_positions(self):
        """The scope rule at each page's position (the module's head comment)."""
        if self.churn is None:
            return
        users = {d.client_id: d.user for d in self.devices}
        behind = getattr(self.stack, "reads_behind", False)
        checked = 0
        for cid, done, started, cursor, rows in self.proxy.deliveries:
            user = users.get(cid)
            if user is None or not rows:
                continue
            lo = 0 if behind else done
            lsn = cursor_lsn(cursor) if cursor else None
            if lsn is not None:
                lo = max(lo, self.churn.reached_by(lsn))
            for pk, row in rows:
                checked += 1
                verdict = self.churn.reads(user, pk, row, started)
                if verdict is None:
                    if row.get("owner") != user or row.get("list_id") is not None:
                        self.v("%s: a page delivered todo %s (owner %s, list %s), outside its user's scope"
                               % (user, pk, row.get("owner"), row.get("list_id")))
                    continue
                if not verdict and not any(self.churn.reads(user, pk, row, i) for i in range(started - 1, lo - 1, -1)):
                    self.v("%s: a page delivered todo %s (owner %s, list %s, title %s) outside its user's scope"
                           " at every position from operation %d to %d" % (user, pk, row.get("owner"),
                                                                           row.get("list_id"), row.get("title"),
                                                                           lo, started))
        self.stats["scope_rows_checked"] = checked

    def check_no_rebuild(self):
        """Only what moves the compaction horizon expires a cursor (a compaction, a publish
        that changes what pull delivers, a stream break): every pull answered 409
        cursor_expired sent a cursor below the horizon the run ended with. Without faults
        nothing expires one: no pull answered 409, and each device rebuilt once (its first
        sync), whatever the shares, removals and moves."""
        (h_lsn, h_ord), = self.rows("SELECT commit_lsn::text, ordinal FROM synchro.changelog_horizon")
        hi, lo = h_lsn.split("/")
        horizon = ((int(hi, 16) << 32) | int(lo, 16), h_ord)
        for cid, cursor in self.proxy.expired:
            try:
                pos = (int(cursor.split(".")[1], 16), int(cursor.split(".")[2], 16))
            except (AttributeError, IndexError, ValueError):
                continue  # a rebuild's first pull (no cursor) is not expired
            if pos >= horizon:
                self.v("client %s: a pull answered cursor_expired to cursor %s, at or past the horizon %s/%d"
                       % (cid, cursor, h_lsn, h_ord))
        self.stats["cursors_expired"] = len(self.proxy.expired)
        if self.faults or self.churn is None:
            return
        expired = self.proxy.routes.get(("/v3/pull", 409), 0)
        if expired:
            self.v("%d pull(s) answered 409 in a run without faults" % expired)
        for cid, n in self.proxy.rebuilds.items():
            if n > 1:
                self.v("client %s rebuilt %d times in a run without faults" % (cid, n))

    def check_proxy(self):
        self.violations.extend("proxy: " + u for u in self.proxy.unexpected)
        for bid, bodies in self.proxy.push_200.items():
            server = self.batches.get(bid)
            if server is None or any(b != server[2] for b in bodies):
                self.v("batch %s: a 200 the proxy saw (%d) differs from the ledger's response" % (bid, len(bodies)))

    def check_pulls(self):
        # cursors are "c1.<16 hex LSN>.<8 hex ordinal>": fixed width, so ordered as strings
        for cid, sent, answered in self.proxy.pulls:
            if answered < sent:
                self.v("client %s: a pull answered cursor %s, older than the %s it sent" % (cid, answered, sent))
        self.stats["pulls"] = len(self.proxy.pulls)

    # --- figures --------------------------------------------------------------------------
    def figures(self, faults, args, seconds):
        status = {}
        for (cid, mid), led in self.ledger.items():
            k = led["status"] if led["status"] != "rejected_terminal" else "rejected:" + led["code"]
            status[k] = status.get(k, 0) + 1
        attempts = sum(len(a) for s in self.stores.values() for a in s["attempts"].values())
        replays = sum(1 for s in self.stores.values() for a in s["attempts"].values()
                      if sum(1 for st, _ in a if st == 200) > 1 or (a and a[-1][0] == 200 and len(a) > 1))
        div = sum(1 for v in self.violations if "diverge" in v or "holds " in v)
        return {
            "seed": args.seed, "seconds": round(seconds, 1), "devices": len(self.devices),
            "histories": 1,
            "operations": sum(len(d.authored) for d in self.devices),
            "atomic_transactions": sum(d.counts["atomic"] for d in self.devices),
            "accepted": status.get("applied", 0),
            "conflicts": status.get("conflict", 0),
            "outcomes": status,
            "batches": len(self.batches), "push_attempts": attempts, "batches_retried": replays,
            "requests_by_status": {str(k): v for k, v in sorted(self.proxy.statuses.items())},
            "answers_cut_by_responder_kill": self.proxy.cut_upstream,
            "faults": faults,
            "lost": self.stats.get("lost", 0), "accepted_in_stream_break_gap": self.stats.get("in_stream_break_gap", 0), "doubled": self.stats.get("doubled", 0), "divergent": div,
            "violations": len(self.violations), "pulls_answered": self.stats.get("pulls", 0),
            "changelog_compacted_entries": self.compacted,
            "scope_entries": self.stats.get("scope_entries", 0),
            "scope_rows_checked": self.stats.get("scope_rows_checked", 0),
            "rebuild_pages": self.proxy.routes.get(("/v3/rebuild", 200), 0),
            "store_full_syncs_failed": sum(d.counts.get("store_full_failed", 0) for d in self.devices),
            "pulls_cursor_expired": self.proxy.routes.get(("/v3/pull", 409), 0),
            "retired_with_queued_intents": sum(
                1 for d in self.devices if d.retired
                for i in self.stores[d.name]["intents"].values() if i["state"] in QUEUED),
        }


def _error_code(body):
    try:
        return json.loads(body)["error"]["code"]
    except (TypeError, ValueError, KeyError):
        return None


def _pk_text(pk):
    """The ledger's primary key (JSON: ["column", value] for the example's one-column keys)
    as the changelog names the row (the value as text)."""
    try:
        v = json.loads(pk)
    except ValueError:
        return pk
    if isinstance(v, list) and len(v) == 2 and isinstance(v[0], str):
        v = v[1]
    return v if isinstance(v, str) else json.dumps(v)

