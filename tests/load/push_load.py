# SPDX-License-Identifier: BSD-2-Clause
"""Push load against a running stack: `senders` threads over `clients` clients (so several
senders share each client), each on a keep-alive connection to nginx, pushing new batches of
inserts as fast as the server takes them. A 429 or 503 must carry Retry-After; the sender
then sends the same bytes again (after at most `backoff` seconds: harder than a polite
client, which waits the whole Retry-After) until a 200, as doc/contract.md#client-retries requires
of a client. A
response that never comes (timeout, reset) is sent again the same way.

Every batch is remembered with its mutations; Load.check() then compares with the database:
every batch answered 200 is in the ledger and no other one, every mutation has one ledger
row and its outcome "applied" in its batch's answer, and every inserted row exists once.
Load.figures() gives the rates and the latency of admitted pushes (the 200 answers of first
executions) as p50/p90/p99/max."""

import base64
import http.client
import json
import random
import threading
import time
import uuid

STATUSES_OK = {200, 429, 503}


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, int(round(p / 100.0 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[k]


class Batch:
    __slots__ = ("client_id", "batch_id", "body", "mutation_ids", "pks", "answered", "outcomes")

    def __init__(self, client_id, body, mutation_ids, pks):
        self.client_id, self.body, self.mutation_ids, self.pks = client_id, body, mutation_ids, pks
        self.batch_id = json.loads(body)["batch_id"]
        self.answered = False
        self.outcomes = None


class Load:
    def __init__(self, port, clients, schema, users, marker, senders, backoff=0.05, mutations=(1, 4),
                 timeout=30.0):
        self.port = port
        self.clients = clients      # list of (user, client_id, generation)
        self.schema = schema
        self.users = users
        self.marker = marker        # in every inserted title: the run's rows
        self.senders = senders
        self.backoff = backoff
        self.mutations = mutations
        self.timeout = timeout
        self.lock = threading.Lock()
        self.statuses = {}
        self.missing_retry_after = 0
        self.unexpected = []
        self.latencies = []         # seconds, 200 answers of first executions
        self.batches = []
        self.retries = 0
        self.network_errors = 0
        self.stop_at = 0
        self.started = self.ended = 0

    def body(self, rng, client):
        user, cid, gen = client
        muts, pks = [], []
        for _ in range(rng.randint(*self.mutations)):
            pk = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            pks.append(pk)
            muts.append({"mutation_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)), "table": "todo",
                         "pk": {"field": "id", "value": pk}, "authored_schema": dict(self.schema),
                         "operation": "insert", "client_version": "2026-07-18T09:15:00Z",
                         "columns": {"title": "%s %d" % (self.marker, rng.randrange(10 ** 6)), "done": False}})
        req = {"client_id": cid, "client_generation": gen,
               "batch_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)), "schema": dict(self.schema),
               "mutations": muts}
        return Batch(cid, json.dumps(req, separators=(",", ":")).encode(), [m["mutation_id"] for m in muts], pks)

    def headers(self, user):
        auth = base64.b64encode(("%s:%s" % (user, self.users[user])).encode()).decode()
        return {"Authorization": "Basic " + auth, "Synchro-Protocol": "3", "Content-Type": "application/json"}

    def post(self, conn, user, body):
        """(status, headers, body, seconds, conn); status None when no answer came."""
        t0 = time.monotonic()
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            conn.request("POST", "/v3/push", body=body, headers=self.headers(user))
            r = conn.getresponse()
            data = r.read()
            hdr = {k.lower(): v for k, v in r.getheaders()}
            if hdr.get("connection", "").lower() == "close":
                conn.close()
                conn = None
            return r.status, hdr, data, time.monotonic() - t0, conn
        except (OSError, http.client.HTTPException):
            if conn is not None:
                conn.close()
            return None, {}, b"", time.monotonic() - t0, None

    def record(self, b, status, hdr, data, took, resend):
        """Counts one answer to batch b (status None: no answer came). Returns None once b is
        settled (its 200, or an answer outside 200/429/503), else the longest wait before the
        same bytes go again (Retry-After's, or the backoff after no answer)."""
        with self.lock:
            self.statuses[status] = self.statuses.get(status, 0) + 1
            if resend:
                self.retries += 1
        if status is None:
            with self.lock:
                self.network_errors += 1
            return self.backoff
        if status not in STATUSES_OK:
            with self.lock:
                self.unexpected.append("%s %r" % (status, data[:200]))
            return None
        if status == 200:
            try:
                resp = json.loads(data)
                b.outcomes = {o["mutation_id"]: o["status"] for part in ("accepted", "rejected")
                              for o in resp[part]}
            except (ValueError, KeyError) as e:
                with self.lock:
                    self.unexpected.append("200 that does not parse: %r" % e)
                return None
            b.answered = True
            with self.lock:
                if hdr.get("synchro-replay") != "batch":
                    self.latencies.append(took)
            return None
        if "retry-after" not in hdr:
            with self.lock:
                self.missing_retry_after += 1
        try:
            return float(hdr.get("retry-after", "1"))
        except ValueError:
            return 1.0

    def deliver(self, rng, conn, client, b, deadline, resend=False):
        """Sends b until a 200 (or the deadline); returns the connection. resend: b was
        answered 429/503 before, so every send counts as a resend."""
        user = client[0]
        while time.monotonic() < deadline:
            status, hdr, data, took, conn = self.post(conn, user, b.body)
            wait = self.record(b, status, hdr, data, took, resend)
            resend = True
            if wait is None:
                return conn
            time.sleep(rng.uniform(0, min(wait, self.backoff)))
        return conn

    def sender(self, k):
        rng = random.Random("%s/%d" % (self.marker, k))
        client = self.clients[k % len(self.clients)]
        conn = None
        while time.monotonic() < self.stop_at:
            b = self.body(rng, client)
            with self.lock:
                self.batches.append(b)
            # after the load window, a batch still unanswered is finished in the drain
            conn = self.deliver(rng, conn, client, b, self.stop_at)
        if conn is not None:
            conn.close()

    def run(self, seconds):
        self.started = time.monotonic()
        self.stop_at = self.started + seconds
        ts = [threading.Thread(target=self.sender, args=(k,), daemon=True) for k in range(self.senders)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(seconds + self.timeout + 30)
        self.ended = time.monotonic()
        hung = sum(t.is_alive() for t in ts)
        # the drain: each batch still without its 200 is sent again (the same bytes) until one
        rng = random.Random("drain")
        pending = [b for b in self.batches if not b.answered]
        deadline = time.monotonic() + 60
        by_client = {c[1]: c for c in self.clients}
        for b in pending:
            self.deliver(rng, None, by_client[b.client_id], b, deadline)
        return hung, len(pending)

    def figures(self):
        lat = sorted(self.latencies)
        took = self.ended - self.started
        ok = len(lat)
        return {"seconds": took, "senders": self.senders, "clients": len(self.clients),
                "requests": sum(self.statuses.values()), "statuses": dict(self.statuses),
                "batches": len(self.batches), "admitted": ok, "admitted_per_s": ok / took if took else 0,
                "mutations": sum(len(b.mutation_ids) for b in self.batches), "retries": self.retries,
                "p50_ms": percentile(lat, 50) * 1000, "p90_ms": percentile(lat, 90) * 1000,
                "p99_ms": percentile(lat, 99) * 1000, "max_ms": (lat[-1] if lat else float("nan")) * 1000}

    def check(self, psql):
        """Problems found comparing the batches with the database (psql: SQL -> text)."""
        problems = []
        if self.unexpected:
            problems.append("%d answer(s) outside 200/429/503, e.g. %s" % (len(self.unexpected), self.unexpected[:3]))
        if self.missing_retry_after:
            problems.append("%d 429/503 answer(s) without Retry-After" % self.missing_retry_after)
        unanswered = [b for b in self.batches if not b.answered]
        if unanswered:
            problems.append("%d batch(es) never answered 200, even in the drain" % len(unanswered))
        cids = ",".join("'%s'" % c[1] for c in self.clients)
        db = set(psql("SELECT batch_id FROM synchro.batches WHERE client_id IN (%s)" % cids).split())
        ours = {b.batch_id for b in self.batches if b.answered}
        if db != ours:
            problems.append("ledger batches differ from the 200 answers: %d extra, %d missing"
                            % (len(db - ours), len(ours - db)))
        rows = psql("SELECT mutation_id, count(*) FROM synchro.mutations WHERE client_id IN (%s)"
                    " GROUP BY mutation_id" % cids)
        counts = dict(ln.split("|") for ln in rows.splitlines() if ln)
        want = {m for b in self.batches if b.answered for m in b.mutation_ids}
        doubled = [m for m, n in counts.items() if n != "1"]
        lost = want - set(counts)
        extra = set(counts) - want
        not_applied = [m for b in self.batches if b.answered for m in b.mutation_ids
                       if (b.outcomes or {}).get(m) != "applied"]
        if doubled or lost or extra or not_applied:
            problems.append("mutations: %d doubled, %d lost, %d extra, %d not applied"
                            % (len(doubled), len(lost), len(extra), len(not_applied)))
        n_rows = int(psql("SELECT count(*) FROM public.todo WHERE title LIKE '%s %%'" % self.marker))
        n_ins = sum(len(b.pks) for b in self.batches if b.answered)
        if n_rows != n_ins:
            problems.append("%d rows of the run in public.todo, %d inserts answered applied" % (n_rows, n_ins))
        return problems, {"ledger_batches": len(db), "ledger_mutations": len(counts), "rows": n_rows,
                          "lost": len(lost), "doubled": len(doubled)}
