# SPDX-License-Identifier: BSD-2-Clause
"""An HTTP-level fuzzer for a running Synchro stack (nginx in front of synchro-fcgi): requests
built from valid ones of every route and then broken (JSON members dropped, retyped or
duplicated, bytes flipped, inserted or cut, invalid UTF-8, deep nesting, sizes at and past the
1 MiB limit), random bodies, and the request around them broken too: methods, routes, query
strings, credentials, the protocol header, Content-Type, Content-Length that lies, chunked
bodies, garbage request lines, huge headers. Raw sockets, so nothing is normalized on the way.

What every answer must satisfy (Fuzzer.check): a status the protocol or the web server's own
framing rules give (never 500, 502 or 504, never the web server's "unavailable" page, which
means no responder answered); Retry-After on every 429 and 503; a JSON error body of the
protocol's form on every non-200 a responder wrote; no 200 without valid credentials; an
answer within the time limit to every request whose framing is complete (no hang). At the end
(Fuzzer.check_ledger) the ledger holds exactly the batches answered 200, and each of their
mutation rows belongs to a batch whose answer names it: a refused request created no row.

Deterministic from its seed (one random stream per worker thread); a failure names the seed."""

import base64
import json
import random
import socket
import threading
import time
import uuid

PUSH_MAX = 1048576
# Statuses an answer may have, and why: the protocol's (doc/contract.md#error-codes), nginx's own
# framing refusals (400 bad request line or header, 411 length required, 414 URI too long, 431/494
# mapped by nginx to 400, 501 unsupported transfer coding), 405 for methods nginx refuses.
ALLOWED = {200, 400, 401, 404, 405, 409, 411, 414, 422, 426, 429, 501, 503}
ROUTES = ["/v3/push", "/v3/pull", "/v3/rebuild", "/v3/connect", "/v3/schema"]
ODD_ROUTES = ["/v3/", "/v3/push/", "/v3/push?x=1", "/v3/PUSH", "//v3/push", "/v3/../v3/push",
              "/v3/%70ush", "/v3/push%00", "/v3/retire", "/v2/push", "/", "/healthz", "/metrics",
              "/v3/push#f", "/v3/pull;x", "/v3/" + "a" * 300, "/v3/push?" + "q=" * 2000]
METHODS = ["POST"] * 12 + ["GET"] * 3 + ["PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "TRACE",
                                          "post", "FOO", "P0ST", "CONNECT"]
ODD_VALUES = [None, True, False, 0, -0.0, 1, -1, 1e400, 2 ** 63, -2 ** 63 - 1, 9007199254740993,
              0.1, "", "x", "\u0000", "\ud800", "\uffff", "😀" * 50, "a" * 70000, [], {}, [[]] * 3,
              {"": None}, "00000000-0000-0000-0000-000000000000", "c1.zz", "NaN"]
SCHEMA_KEYS = ("hash", "version")


def b64(user, password):
    return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


class Req:
    __slots__ = ("method", "path", "headers", "body", "framing", "raw", "client", "route", "authed")

    def __init__(self):
        self.method, self.path, self.headers, self.body = "POST", "/v3/push", [], b""
        self.framing = "length"  # length | none | chunked | badchunk | short | long | raw
        self.raw = None           # the whole request as bytes (framing "raw")
        self.client = None        # the client a push was built for
        self.route = None         # the route of the template body
        self.authed = True

    def describe(self):
        return "%s %s framing=%s body=%d bytes headers=%s" % (
            self.method, self.path[:80], self.framing, len(self.body),
            [h[0] for h in self.headers])


class Client:
    """A connected client of the stack: its user, id and generation (updated on 200 connects)."""

    def __init__(self, user, client_id, generation):
        self.user, self.client_id, self.generation = user, client_id, generation


class Fuzzer:
    def __init__(self, stack, seed, clients, schema, users, timeout=20.0):
        self.stack = stack
        self.seed = seed
        self.clients = clients
        self.schema = schema
        self.users = users  # user -> password
        self.timeout = timeout
        self.lock = threading.Lock()
        self.statuses = {}
        self.kinds = {}
        self.failures = []
        self.ok_batches = {}    # (client_id, batch_id) -> set of mutation ids named in its 200
        self.no_answer = 0      # connections closed without an answer (incomplete framing only)
        self.requests = 0

    # --- building requests -------------------------------------------------------------
    def mutation(self, rng, c):
        op = rng.choice(["insert", "insert", "update", "delete"])
        if rng.random() < 0.6:
            table, pk = "todo", str(uuid.UUID(int=rng.getrandbits(128), version=4))
            cols = {"title": rng.choice(["t", "fuzz", "ü" * 5]), "done": rng.random() < 0.5}
            if rng.random() < 0.3:
                cols["note"] = rng.choice([None, "n", "x" * rng.randrange(1, 3000)])
        else:
            table, pk = "item", str(rng.randrange(1, 10 ** 12))
            cols = {"label": "l", "qty": rng.randrange(-5, 5), "price": "1.50", "weight": 2.5,
                    "due": "2026-01-02", "tags": "[1,2]", "blob": "AAEC", "ref": None}
        m = {"mutation_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)), "table": table,
             "pk": {"field": "id", "value": pk}, "authored_schema": dict(self.schema),
             "operation": op, "client_version": "2026-07-18T09:15:00Z"}
        if op != "insert":
            m["base_version"] = rng.choice(["v1", "0" * 32, "%032x" % rng.getrandbits(128)])
        if op != "delete":
            m["columns"] = cols if op == "insert" else dict(list(cols.items())[:1])
        return m

    def template(self, rng, route, c):
        if route == "/v3/push":
            n = rng.choice([1, 1, 1, 2, 3, 5])
            body = {"client_id": c.client_id, "client_generation": c.generation,
                    "batch_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                    "schema": dict(self.schema), "mutations": [self.mutation(rng, c) for _ in range(n)]}
            if rng.random() < 0.2:
                body["atomic"] = True
            return body
        if route == "/v3/pull":
            return {"client_id": c.client_id, "client_generation": c.generation,
                    "cursor": rng.choice([None, "c1.%016x.%08x" % (rng.getrandbits(40), rng.randrange(9))]),
                    "limit": rng.choice([1, 100, 1000]), "schema": dict(self.schema)}
        if route == "/v3/rebuild":
            return {"client_id": c.client_id, "client_generation": c.generation,
                    "rebuild_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                    "page_token": None, "limit": rng.choice([1, 500]), "schema": dict(self.schema)}
        if route == "/v3/connect":
            cid = c.client_id if rng.random() < 0.2 else str(uuid.UUID(int=rng.getrandbits(128), version=4))
            return {"client_id": cid}
        return None  # GET /v3/schema has no body

    def json_mutate(self, rng, v, depth=0):
        """One structural change somewhere in v (a copy)."""
        if isinstance(v, dict) and v and (depth > 3 or rng.random() < 0.5):
            v = dict(v)
            k = rng.choice(list(v))
            r = rng.random()
            if r < 0.3:
                del v[k]
            elif r < 0.7:
                v[k] = rng.choice(ODD_VALUES)
            elif r < 0.85:
                v["unknown_%d" % rng.randrange(3)] = rng.choice(ODD_VALUES)
            else:
                v[k] = self.json_mutate(rng, v[k], depth + 1)
            return v
        if isinstance(v, dict) and v:
            v = dict(v)
            k = rng.choice(list(v))
            v[k] = self.json_mutate(rng, v[k], depth + 1)
            return v
        if isinstance(v, list) and v:
            v = list(v)
            i = rng.randrange(len(v))
            r = rng.random()
            if r < 0.2:
                del v[i]
            elif r < 0.4:
                v.append(v[i])  # a duplicate mutation
            elif r < 0.5:
                v = v * rng.choice([2, 300, 1001])
            else:
                v[i] = self.json_mutate(rng, v[i], depth + 1)
            return v
        return rng.choice(ODD_VALUES)

    @staticmethod
    def dumps(v, rng):
        try:
            s = json.dumps(v, ensure_ascii=rng.random() < 0.5, separators=(",", ":") if rng.random() < 0.7 else None,
                           allow_nan=True)
        except (ValueError, OverflowError):
            s = "{}"
        return s.encode("utf-8", "surrogatepass")

    @staticmethod
    def byte_mutate(rng, b):
        b = bytearray(b)
        for _ in range(rng.choice([1, 1, 2, 4, 16])):
            r = rng.random()
            p = rng.randrange(len(b) + 1)
            if r < 0.3 and b:
                b[min(p, len(b) - 1)] = rng.randrange(256)
            elif r < 0.5:
                b[p:p] = bytes(rng.choice([b"\x00", b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\\u", b"\"",
                                           b"{", b"[", b"}", b",", b"1e999", b"\xef\xbb\xbf", b"\t\n "]))
            elif r < 0.7:
                del b[p:p + rng.randrange(1, 64)]
            elif r < 0.8:
                b = b[:p]
            else:
                q = rng.randrange(len(b) + 1)
                b[p:p] = b[min(p, q):max(p, q)][:4096]
        return bytes(b)

    def random_body(self, rng):
        r = rng.random()
        if r < 0.25:
            return bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 512)))
        if r < 0.4:
            d = rng.choice([100, 1000, 100000])
            return (b"[" * d + b"]" * d) if rng.random() < 0.5 else (b'{"a":' * d + b"1" + b"}" * d)
        if r < 0.55:
            # around the body limit (nginx: client_max_body_size 1m)
            n = rng.choice([PUSH_MAX - 1, PUSH_MAX, PUSH_MAX + 1, 2 * PUSH_MAX])
            return b'{"client_id":"' + b"a" * (n - 16) + b'"}'
        if r < 0.7:
            return rng.choice([b"", b"null", b"{}", b"[]", b"\"x\"", b"0", b"{\"mutations\":[]}", b"\xef\xbb\xbf{}"])
        return self.dumps(self.json_mutate(rng, {"client_id": rng.choice(ODD_VALUES), "x": [1, 2]}), rng)

    def build(self, rng):
        q = Req()
        c = rng.choice(self.clients)
        q.client = c
        r = rng.random()
        q.route = rng.choice(ROUTES[:4] * 4 + ROUTES[4:]) if r < 0.85 else rng.choice(ODD_ROUTES)
        q.path = q.route
        q.method = "GET" if q.route == "/v3/schema" and rng.random() < 0.8 else (
            "POST" if rng.random() < 0.8 else rng.choice(METHODS))
        tmpl = self.template(rng, q.route, c) if q.route in ROUTES else None
        kind = rng.random()
        if tmpl is None or kind < 0.15:
            body = self.random_body(rng) if rng.random() < 0.8 or tmpl is None else b""
            q.body = body
            label = "random"
        elif kind < 0.3:
            q.body = self.dumps(tmpl, rng)  # valid (some answered 200)
            label = "valid"
        elif kind < 0.7:
            v = tmpl
            for _ in range(rng.choice([1, 1, 2, 3])):
                v = self.json_mutate(rng, v)
            q.body = self.dumps(v, rng)
            label = "json-mutated"
        else:
            q.body = self.byte_mutate(rng, self.dumps(tmpl, rng))
            label = "byte-mutated"
        # credentials, protocol, content type, extra headers
        user = c.user
        a = rng.random()
        if a < 0.85:
            q.headers.append(("Authorization", b64(user, self.users[user])))
        elif a < 0.9:
            q.headers.append(("Authorization", b64(user, "wrong")))
            q.authed = False
        elif a < 0.95:
            q.headers.append(("Authorization", rng.choice(["Basic !!!", "Bearer x", "Basic " + "A" * 3000, "Basic",
                                                           b64("nobody", "x"), b64("", "")])))
            q.authed = False
        else:
            q.authed = False
        p = rng.random()
        if p < 0.9:
            q.headers.append(("Synchro-Protocol", "3"))
        elif p < 0.97:
            q.headers.append(("Synchro-Protocol", rng.choice(["2", "4", "3 ", "03", "3,3", "", "three", "3\t"])))
        if rng.random() < 0.9:
            q.headers.append(("Content-Type", rng.choice(["application/json"] * 8 + ["text/plain", "application/x",
                                                                                     "application/json; charset=latin1"])))
        if rng.random() < 0.05:
            q.headers.append(("X-Fuzz", "v" * rng.choice([10, 5000, 20000])))
        if rng.random() < 0.03:
            q.headers.append(("Expect", "100-continue"))
        f = rng.random()
        if f < 0.86:
            q.framing = "length"
        elif f < 0.9:
            q.framing = "chunked"
        elif f < 0.92:
            q.framing = "badchunk"
        elif f < 0.94:
            q.framing = "short"
        elif f < 0.95:
            q.framing = "long"
        elif f < 0.97:
            q.framing = "none"
        elif f < 0.98:
            q.framing = "twolengths"
        else:
            q.framing = "raw"
            q.raw = self.byte_mutate(rng, self.serialize(q))
        return q, label

    @staticmethod
    def serialize(q):
        head = ["%s %s HTTP/1.1" % (q.method, q.path), "Host: 127.0.0.1", "Connection: close"]
        head += ["%s: %s" % h for h in q.headers]
        body = q.body
        if q.framing == "length":
            head.append("Content-Length: %d" % len(body))
        elif q.framing == "short":
            head.append("Content-Length: %d" % (len(body) // 2))
        elif q.framing == "long":
            head.append("Content-Length: %d" % (len(body) + 10))
        elif q.framing == "twolengths":
            head += ["Content-Length: %d" % len(body), "Content-Length: %d" % (len(body) + 1)]
        elif q.framing in ("chunked", "badchunk"):
            head.append("Transfer-Encoding: chunked")
            if q.framing == "chunked":
                parts, i = [], 0
                while i < len(body):
                    n = min(len(body) - i, 1 + (i * 7919) % 4096)
                    parts.append(b"%x\r\n" % n + body[i:i + n] + b"\r\n")
                    i += n
                body = b"".join(parts) + b"0\r\n\r\n"
            else:
                body = b"zz\r\n" + body[:10] + b"\r\n0\r\n"
        return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1", "replace") + body

    # --- sending -----------------------------------------------------------------------
    def send(self, q):
        """(status or None, headers dict, body bytes, seconds); None: closed without an answer."""
        data = q.raw if q.framing == "raw" else self.serialize(q)
        t0 = time.monotonic()
        s = socket.create_connection(("127.0.0.1", self.stack.port), timeout=self.timeout)
        try:
            s.settimeout(self.timeout)
            try:
                s.sendall(data)
                if q.framing in ("long", "badchunk", "raw"):
                    s.shutdown(socket.SHUT_WR)  # the rest never comes
            except (BrokenPipeError, ConnectionResetError):
                pass  # nginx answered (413) and closed before the whole body arrived
            chunks = []
            try:
                while True:
                    b = s.recv(65536)
                    if not b:
                        break
                    chunks.append(b)
            except ConnectionResetError:
                pass
            except socket.timeout:
                return "timeout", {}, b"", time.monotonic() - t0
        finally:
            s.close()
        return self.parse(b"".join(chunks)) + (time.monotonic() - t0,)

    @staticmethod
    def parse(resp):
        """The first final answer in resp: interim 1xx answers (100 Continue) are skipped, the
        body cut at its Content-Length or its last chunk (nginx may answer what follows too)."""
        while True:
            if not resp:
                return None, {}, b""
            head, sep, body = resp.partition(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            try:
                status = int(lines[0].split()[1])
            except (IndexError, ValueError):
                return "garbled", {}, resp
            if 100 <= status < 200 and sep:
                resp = body
                continue
            break
        headers = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(b":")
            headers[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
        if headers.get("transfer-encoding", "").lower() == "chunked":
            out, rest = [], body
            while rest:
                size, _, rest = rest.partition(b"\r\n")
                try:
                    n = int(size.split(b";")[0], 16)
                except ValueError:
                    break
                if n == 0:
                    break
                out.append(rest[:n])
                rest = rest[n + 2:]
            body = b"".join(out)
        elif headers.get("content-length", "").isdigit():
            body = body[:int(headers["content-length"])]
        return status, headers, body

    # --- judging -----------------------------------------------------------------------
    def fail(self, q, why):
        with self.lock:
            if len(self.failures) < 50:
                self.failures.append("%s: %s" % (why, q.describe()))

    def check(self, q, label, status, headers, body):
        with self.lock:
            self.statuses[status] = self.statuses.get(status, 0) + 1
            self.kinds[label] = self.kinds.get(label, 0) + 1
        if status == "timeout":
            return self.fail(q, "no answer within %.0f s (a hang)" % self.timeout)
        if status is None or status == "garbled":
            # only a request whose framing never completed may go unanswered
            if q.framing in ("long", "badchunk", "raw", "short", "twolengths"):
                with self.lock:
                    self.no_answer += 1
                return None
            return self.fail(q, "connection closed without an answer" if status is None else "garbled answer")
        if status not in ALLOWED and not (status == 505 and q.framing == "raw"):
            # 505: nginx refusing a request line whose HTTP version the raw mutation broke
            return self.fail(q, "status %s" % status)
        if status in (429, 503) and "retry-after" not in headers:
            return self.fail(q, "%d without Retry-After" % status)
        if status == 503 and b"the sync server is unavailable" in body:
            return self.fail(q, "503 from nginx: no responder answered")
        if status == 501 and q.framing not in ("raw",) and not any(h[0].lower() == "transfer-encoding" for h in q.headers):
            return self.fail(q, "501 for a request without an odd transfer coding")
        if status == 200 and not q.authed and q.path.startswith("/v3/"):
            return self.fail(q, "200 without valid credentials")
        ctype = headers.get("content-type", "")
        if status != 200 and ctype.startswith("application/json") and q.method != "HEAD":
            try:
                err = json.loads(body)["error"]
                assert isinstance(err["code"], str) and isinstance(err["message"], str)
                assert isinstance(err["retryable"], bool)
            except (ValueError, KeyError, TypeError, AssertionError):
                return self.fail(q, "status %d with a body not of the protocol's error form: %r" % (status, body[:200]))
        if status == 200 and q.method == "POST" and q.path == "/v3/push":
            self.note_push(q, body)
        if status == 200 and q.method == "POST" and q.path == "/v3/connect":
            self.note_connect(q, body)
        return None

    def note_push(self, q, body):
        try:
            req = json.loads(q.body)
            resp = json.loads(body)
            key = (req["client_id"], resp["batch_id"])
            mids = {o["mutation_id"] for part in ("accepted", "rejected") for o in resp[part]}
        except (ValueError, KeyError, TypeError) as e:
            return self.fail(q, "a 200 push answer that does not parse: %r" % e)
        with self.lock:
            self.ok_batches.setdefault(key, set()).update(mids)
        return None

    def note_connect(self, q, body):
        try:
            j = json.loads(body)
        except ValueError:
            return self.fail(q, "a 200 connect answer that does not parse")
        with self.lock:
            for c in self.clients:
                if c.client_id == j.get("client_id") and c.user == q.client.user:
                    c.generation = max(c.generation, j["client_generation"])
        return None

    # --- running -----------------------------------------------------------------------
    def worker(self, k, count, deadline):
        rng = random.Random("%s/%d" % (self.seed, k))
        answered = []  # (request, 200 body) of this worker's pushes, for exact replays
        for _ in range(count):
            if time.monotonic() > deadline or len(self.failures) >= 50:
                return
            first = None
            if answered and rng.random() < 0.04:
                q, first = rng.choice(answered)
                label = "replay"
            else:
                q, label = self.build(rng)
            try:
                status, headers, body, _ = self.send(q)
            except OSError as e:
                self.fail(q, "socket error %r" % e)
                continue
            self.check(q, label, status, headers, body)
            with self.lock:
                self.requests += 1
            if first is not None and status == 200 and (body != first or headers.get("synchro-replay") != "batch"):
                self.fail(q, "an exact replay answered other bytes than the first 200, or no Synchro-Replay")
            if first is None and status == 200 and q.path == "/v3/push" and q.framing == "length" \
                    and q.method == "POST" and len(answered) < 64:
                answered.append((q, body))

    def run(self, requests, seconds, threads=4):
        deadline = time.monotonic() + seconds
        per = [requests // threads + (1 if i < requests % threads else 0) for i in range(threads)]
        ts = [threading.Thread(target=self.worker, args=(i, per[i], deadline), daemon=True) for i in range(threads)]
        t0 = time.monotonic()
        for t in ts:
            t.start()
        for t in ts:
            t.join(seconds + 2 * self.timeout + 30)
        if any(t.is_alive() for t in ts):
            self.failures.append("a worker did not finish: a hang")
        return time.monotonic() - t0

    def check_ledger(self, setup_batches):
        """The ledger against the 200 answers: every batch row answered 200 (or made by the
        setup), every mutation row named by its batch's 200 answer, and nothing missing."""
        rows = self.stack.psql("SELECT client_id || ' ' || batch_id FROM synchro.batches")
        db = {tuple(ln.split(" ")) for ln in rows.splitlines() if ln}
        ok = set(self.ok_batches) | set(setup_batches)
        problems = []
        extra = db - ok
        if extra:
            problems.append("%d batch row(s) without a 200 answer, e.g. %s" % (len(extra), sorted(extra)[:3]))
        missing = set(self.ok_batches) - db
        if missing:
            problems.append("%d batch(es) answered 200 but not in the ledger, e.g. %s" % (len(missing), sorted(missing)[:3]))
        rows = self.stack.psql("SELECT client_id || ' ' || batch_id || ' ' || mutation_id FROM synchro.mutations")
        named = 0
        seen = set()
        for ln in rows.splitlines():
            cid, bid, mid = ln.split(" ")
            seen.add((cid, mid))
            if (cid, bid) in setup_batches:
                continue
            if mid not in self.ok_batches.get((cid, bid), ()):
                problems.append("mutation row %s of batch %s not named by a 200 answer of it" % (mid, bid))
                break
            named += 1
        lost = [(cid, mid) for (cid, _), mids in self.ok_batches.items() for mid in mids if (cid, mid) not in seen]
        if lost:
            problems.append("%d mutation(s) answered 200 without a ledger row, e.g. %s" % (len(lost), lost[:3]))
        return len(db), named, problems
