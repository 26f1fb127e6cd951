# SPDX-License-Identifier: BSD-2-Clause
"""Slow clients: connections that send a valid push one byte at a time (headers at once, then
the body a byte per tick), connections that send half a request line and then nothing, and
idle keep-alive connections that send nothing at all, all held open at once from one thread
(non-blocking sockets, one pass over them per tick). nginx buffers a request body whole before
it passes the request to a responder (fastcgi_request_buffering), so none of these should hold
a responder: Slow.run() returns what came of each kind while others push meanwhile, and
each dribbled push's answer with when it came against when its last byte went. The dribbled
pushes are push_load Batches (Slow.batches): a push_load.Load over the dribblers' clients
records their answers, sends the refused ones again and checks them in the database."""

import base64
import http.client
import io
import json
import select
import socket
import time
import uuid

from push_load import Batch


def answer_of(raw):
    """(status, headers with lower-case names, body) of an HTTP answer read off a socket whole;
    (None, {}, b"") when it is not a whole answer."""
    class Raw:
        def makefile(self, *args, **kw):
            return io.BytesIO(raw)
    try:
        r = http.client.HTTPResponse(Raw())
        r.begin()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    except (http.client.HTTPException, ValueError):
        return None, {}, b""


def _receive(c):
    """Reads what connection c has: the time of the first answer byte is kept, EOF ends it."""
    try:
        data = c[0].recv(65536)
    except OSError:
        data = b""
    if data:
        if c[9] is None:
            c[9] = time.monotonic()
        c[4] += data
    else:
        c[5] = True


class Slow:
    def __init__(self, port, user, password, clients, schema, marker):
        self.port = port
        self.auth = "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        self.clients = clients    # [(user, client_id, generation)]: one per dribbler
        self.schema = schema
        self.marker = marker
        self.batches = []         # the slow pushes' push_load.Batch (each must end in a 200)

    def request(self, i):
        cid, gen = self.clients[i][1], self.clients[i][2]
        mid, pk = str(uuid.uuid4()), str(uuid.uuid4())
        body = json.dumps({"client_id": cid, "client_generation": gen, "batch_id": str(uuid.uuid4()),
                           "schema": self.schema, "mutations": [{
                               "mutation_id": mid, "table": "todo",
                               "pk": {"field": "id", "value": pk},
                               "authored_schema": self.schema, "operation": "insert",
                               "client_version": "2026-07-18T09:15:00Z",
                               "columns": {"title": "%s slow %d" % (self.marker, i), "done": False}}]},
                          separators=(",", ":")).encode()
        self.batches.append(Batch(cid, body, [mid], [pk]))
        head = ("POST /v3/push HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: %s\r\nSynchro-Protocol: 3\r\n"
                "Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                % (self.auth, len(body))).encode()
        return head, body

    def connect(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        return s

    def run(self, dribblers, stallers, idlers, seconds):
        """Holds every connection for `seconds` (the caller's other clients push meanwhile from
        their own threads). Dribbler i starts its body after i/dribblers of the first 40% of
        the time and sends it a byte per tick, so that the bodies end spread out, by 90%."""
        # [sock, kind, pending bytes, body left, answer bytes, done, start, body bytes sent,
        #  when the last body byte went, when the first answer byte came]
        conns = []
        t0 = time.monotonic()
        for i in range(dribblers):
            head, body = self.request(i)
            conns.append([self.connect(), "dribble", head, body, b"", False,
                          t0 + 0.4 * seconds * i / max(1, dribblers), 0, None, None])
        for _ in range(stallers):
            conns.append([self.connect(), "stall", b"POST /v3/pu", b"", b"", False, t0, 0, None, None])
        for _ in range(idlers):
            conns.append([self.connect(), "idle", b"", b"", b"", False, t0, 0, None, None])
        longest = max((len(c[3]) for c in conns if c[1] == "dribble"), default=1)
        tick = max(0.005, (seconds * 0.5) / longest)
        end = t0 + seconds
        refused_early = 0
        while time.monotonic() < end:
            for c in conns:
                s, kind = c[0], c[1]
                if c[5]:
                    continue
                try:
                    if c[2]:  # the head (or the staller's fragment) at once
                        n = s.send(c[2])
                        c[2] = c[2][n:]
                    elif kind == "dribble" and c[3] and time.monotonic() >= c[6]:
                        # the bytes due by now, each in a send (and a segment) of its own
                        due = int((time.monotonic() - c[6]) / tick) + 1 - c[7]
                        for _ in range(min(due, len(c[3]))):
                            s.send(c[3][:1])
                            c[3] = c[3][1:]
                            c[7] += 1
                        if not c[3]:
                            c[8] = time.monotonic()
                except BlockingIOError:
                    pass
                except OSError:
                    c[5] = True
                    refused_early += 1
            r, _, _ = select.select([c[0] for c in conns if not c[5]], [], [], min(tick, 0.05))
            for s in r:
                _receive(next(c for c in conns if c[0] is s))
        # the dribblers' answers (their bodies are complete now): wait a little for them
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            open_dribblers = [c for c in conns if c[1] == "dribble" and not c[5]]
            if not open_dribblers:
                break
            r, _, _ = select.select([c[0] for c in open_dribblers], [], [], 0.5)
            for s in r:
                _receive(next(c for c in conns if c[0] is s))
        out = {"dribble": {}, "stall": {}, "idle": {}}
        for c in conns:
            status = c[4].split(b" ", 2)[1].decode() if c[4].startswith(b"HTTP/") else (
                "closed" if c[5] else "open")
            out[c[1]][status] = out[c[1]].get(status, 0) + 1
            try:
                c[0].close()
            except OSError:
                pass
        dribbled = [c for c in conns if c[1] == "dribble"]
        unsent = sum(1 for c in dribbled if c[3])
        # answered before the last byte of the body went: nginx did not buffer it whole first
        early = sum(1 for c in dribbled if c[9] is not None and (c[8] is None or c[9] < c[8]))
        # each dribbler's answer, in order, with the seconds from its last byte to its answer
        answers = [(c[4], c[9] - c[8] if c[8] is not None and c[9] is not None else 0.0) for c in dribbled]
        return {"dribble": out["dribble"], "stall": out["stall"], "idle": out["idle"],
                "dribble_unsent": unsent, "dribble_early": early, "send_failed": refused_early,
                "answers": answers, "tick_s": tick, "held_s": time.monotonic() - t0}
