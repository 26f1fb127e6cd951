# SPDX-License-Identifier: BSD-2-Clause
"""The chaos suite's fault proxy: a loopback-only HTTP/1.1 proxy between the simulated devices
and the web server. Each connection carries one request (the proxy answers Connection: close);
the proxy reads the whole request (answering "Expect: 100-continue" itself), sends it to the
web server (with several upstreams, the `hosts` topology's, to one of them by its own seeded
random choice, as a load balancer would; one it cannot connect to within the connect timeout
is no answer, status 0), reads the whole response and then, by its seeded random choice:

  pass             sends the response;
  drop_after_commit  (a push answered 200: the server committed) closes without sending it;
  reset_mid_response sends part of the response, then resets the connection (RST).

Every response it saw is recorded: the status tally (the checker fails on any 500) and, for
each push answered 200, the exact body by batch id, delivered or not (the checker requires
every 200 of one batch to be byte-identical, the dropped ones included); for each pull
answered 200, the cursor the device sent and the one it was answered (the checker requires
the answer never older than the request: a lagging replica must not answer); and the
Retry-After of every 429 and 503 (chaos_clock.py requires the configured one). Per upstream:
the status tally, and for every push the upstream, status and replay marker (Synchro-Replay)
of each answer by batch id (which host executed a batch first and which replayed it)."""

import json
import random
import socket
import struct
import threading
import time

TIMEOUT_S = 90  # longer than nginx's fastcgi_read_timeout of the chaos stack
# What the devices may be answered: 409 generation expired / retired / rebuild, 422 schema,
# 429/503 retryable; 0 when nginx gave no complete answer. A 500, a 400 (a client bug), a
# 401 or anything else is reported.
ALLOWED = {0, 200, 409, 422, 429, 503}
# A live subscription (GET /v3/live, nginx's nchan) is also answered 304 or 408 (nothing new in
# time), 410 (nginx reloading or stopping) and, where the server has no live updates
# (Apache), 404.
LIVE_ALLOWED = ALLOWED | {304, 404, 408, 410}


class FaultProxy:
    def __init__(self, upstreams, seed, drop_rate=0.0, reset_rate=0.0, connect_timeout=None):
        """upstreams: the web server's port on the loopback, or a list of (address, port);
        connect_timeout: seconds to connect to one (default TIMEOUT_S)."""
        if isinstance(upstreams, int):
            upstreams = [("127.0.0.1", upstreams)]
        self.upstreams = list(upstreams)
        self.connect_timeout = connect_timeout or TIMEOUT_S
        self.rng = random.Random(seed)
        # the upstream of each request: a stream of its own, so that the fault draws above
        # are the same whatever the number of upstreams
        self.pick_rng = random.Random("%s/upstream" % seed)
        self.lock = threading.Lock()
        self.drop_rate = drop_rate
        self.reset_rate = reset_rate
        self.counts = {"drop_after_commit": 0, "reset_mid_response": 0}
        # 200 answers the web server cut short (a responder killed while it wrote): the
        # client sees a transfer error; their bodies are not checked
        self.cut_upstream = 0
        self.statuses = {}          # status -> count (0: nginx gave no complete response)
        self.routes = {}            # (path, status) -> count
        self.push_200 = {}          # batch_id -> [body bytes, ...]
        self.pulls = []             # (client_id, cursor sent, cursor answered) of each pull answered 200
        # With a position source (a callable answering (operations done, operations started),
        # chaos_churn.py's): each pull and rebuild page answered 200 as (client_id, done before
        # it was sent, started after it was answered, its cursor or None, the upserts of
        # `delivered_table` it delivered as (pk value, row)).
        self.position = None
        self.delivered_table = "todo"
        self.deliveries = []
        self.rebuilds = {}          # client_id -> rebuilds begun (first pages answered 200)
        self.expired = []           # (client_id, cursor sent) of each pull answered 409 cursor_expired
        self.unexpected = []        # descriptions of answers the protocol never gives
        self.retry_after = {}       # Retry-After of the 429 and 503 answers (None: absent) -> count
        self.by_upstream = {}       # (upstream index, status) -> count
        self.live_by_upstream = {}  # (upstream index, status) -> count of the live subscriptions
        self.push_answers = {}      # batch_id -> [(upstream index, status, replay), ...] of every push
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.stopped = False
        self.thread = threading.Thread(target=self._serve, name="fault-proxy", daemon=True)
        self.thread.start()

    def set_rates(self, drop_rate, reset_rate):
        with self.lock:
            self.drop_rate, self.reset_rate = drop_rate, reset_rate

    def close(self):
        self.stopped = True
        try:
            self.sock.close()
        except OSError:
            pass

    # --- plumbing -------------------------------------------------------------------------
    def _serve(self):
        while not self.stopped:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle_safely, args=(client,), daemon=True).start()

    @staticmethod
    def _read_head(s):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                return None, b""
            data += chunk
            if len(data) > 65536:
                return None, b""
        head, _, rest = data.partition(b"\r\n\r\n")
        return head, rest

    @staticmethod
    def _header(lines, name):
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == name:
                return v.strip()
        return None

    def _handle_safely(self, client):
        try:
            client.settimeout(TIMEOUT_S)
            self._handle(client)
        except OSError:
            pass
        finally:
            try:
                client.close()
            except OSError:
                pass

    def _handle(self, client):
        head, body = self._read_head(client)
        if head is None:
            return
        lines = head.split(b"\r\n")
        length = int(self._header(lines, b"content-length") or b"0")
        expect = (self._header(lines, b"expect") or b"").lower() == b"100-continue"
        if expect and len(body) < length:
            client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        while len(body) < length:
            chunk = client.recv(65536)
            if not chunk:
                return
            body += chunk
        keep = [ln for ln in lines if not ln.lower().startswith((b"connection:", b"expect:"))]
        with self.lock:
            n = len(self.upstreams)
            index = self.pick_rng.randrange(n) if n > 1 else 0
        reads = self.position is not None and lines[0].startswith((b"POST /v3/pull", b"POST /v3/rebuild"))
        before = self.position()[0] if reads else None
        resp = b""
        try:
            upstream = socket.create_connection(self.upstreams[index], timeout=self.connect_timeout)
        except OSError:
            upstream = None  # no answer (status 0): the client's connection is closed
        if upstream is not None:
            try:
                upstream.settimeout(TIMEOUT_S)
                upstream.sendall(b"\r\n".join(keep + [b"Connection: close"]) + b"\r\n\r\n" + body)
                while True:
                    chunk = upstream.recv(65536)
                    if not chunk:
                        break
                    resp += chunk
            finally:
                upstream.close()
        status = self._status(resp)
        after = self.position()[1] if reads else None
        is_push = lines[0].startswith(b"POST /v3/push")
        with self.lock:
            self.statuses[status] = self.statuses.get(status, 0) + 1
            self.by_upstream[(index, status)] = self.by_upstream.get((index, status), 0) + 1
            if is_push:
                self._record_push_answer(index, status, body, resp)
            if lines[0].startswith(b"GET /v3/live"):
                self.live_by_upstream[(index, status)] = self.live_by_upstream.get((index, status), 0) + 1
            if upstream is None:
                return
            route = (lines[0].split(b" ")[1].split(b"?")[0].decode("ascii", "replace"), status)
            self.routes[route] = self.routes.get(route, 0) + 1
            if status in (429, 503):
                ra = self._header(resp.partition(b"\r\n\r\n")[0].split(b"\r\n"), b"retry-after")
                self.retry_after[ra] = self.retry_after.get(ra, 0) + 1
            if status not in (LIVE_ALLOWED if lines[0].startswith(b"GET /v3/live") else ALLOWED):
                self.unexpected.append("%s answered %d" % (lines[0][:40].decode("ascii", "replace"), status))
            if status == 200 and not self._complete(resp):
                self.cut_upstream += 1
            elif is_push and status == 200:
                self._record_push(body, resp)
            elif status == 200 and lines[0].startswith(b"POST /v3/pull"):
                self._record_pull(body, resp, before, after)
            elif status == 409 and lines[0].startswith(b"POST /v3/pull"):
                self._record_expired(body, resp)
            elif status == 200 and lines[0].startswith(b"POST /v3/rebuild"):
                self._record_rebuild(body)
                if reads:
                    self._record_delivery(body, resp, before, after)
            roll = self.rng.random()
            drop = is_push and status == 200 and roll < self.drop_rate
            reset = not drop and roll < self.drop_rate + self.reset_rate and len(resp) > 1
            if drop:
                self.counts["drop_after_commit"] += 1
            elif reset:
                self.counts["reset_mid_response"] += 1
                cut = self.rng.randrange(1, len(resp))
        if drop:
            return
        if reset:
            client.sendall(resp[:cut])
            time.sleep(0.01)
            # SO_LINGER with a zero timeout: close() sends RST instead of FIN.
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        client.sendall(resp)

    @staticmethod
    def _status(resp):
        try:
            return int(resp.split(b" ", 2)[1])
        except (IndexError, ValueError):
            return 0

    def _complete(self, resp):
        """False when the answer's body is shorter than its Content-Length, or its chunked
        encoding lacks the last chunk."""
        head, _, body = resp.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        if self._header(lines, b"transfer-encoding") == b"chunked":
            return body.endswith(b"0\r\n\r\n")
        length = self._header(lines, b"content-length")
        try:
            return length is None or len(body) >= int(length)
        except ValueError:
            return False

    def _body(self, resp):
        head, _, body = resp.partition(b"\r\n\r\n")
        if self._header(head.split(b"\r\n"), b"transfer-encoding") == b"chunked":
            body = self._dechunk(body)
        return body

    def _record_pull(self, req_body, resp, before=None, after=None):
        try:
            req = json.loads(req_body)
            self.pulls.append((req["client_id"], req["cursor"], json.loads(self._body(resp))["cursor"]))
        except (ValueError, KeyError, TypeError):
            self.unexpected.append("a pull answered 200 without a cursor in its request or answer")
            return
        if before is not None:
            self._record_delivery(req_body, resp, before, after)

    def _record_expired(self, req_body, resp):
        try:
            if json.loads(self._body(resp))["error"]["code"] == "cursor_expired":
                req = json.loads(req_body)
                self.expired.append((req["client_id"], req["cursor"]))
        except (ValueError, KeyError, TypeError):
            pass  # the checker judges 409s by their codes elsewhere

    def _record_rebuild(self, req_body):
        try:
            req = json.loads(req_body)
            if req.get("page_token") is None:
                self.rebuilds[req["client_id"]] = self.rebuilds.get(req["client_id"], 0) + 1
        except (ValueError, KeyError, TypeError, AttributeError):
            self.unexpected.append("a rebuild answered 200 without a client_id in its request")

    def _record_delivery(self, req_body, resp, before, after):
        try:
            req, doc = json.loads(req_body), json.loads(self._body(resp))
            rows = [(ch["pk"]["value"], ch["row"]) for ch in doc.get("changes", doc.get("rows", []))
                    if ch.get("op") == "upsert" and ch.get("table") == self.delivered_table]
            self.deliveries.append((req["client_id"], before, after, doc.get("cursor"), rows))
        except (ValueError, KeyError, TypeError, AttributeError):
            self.unexpected.append("a pull or rebuild page answered 200 with a body of another shape")

    def _record_push_answer(self, index, status, req_body, resp):
        try:
            batch_id = json.loads(req_body)["batch_id"]
        except (ValueError, KeyError, TypeError):
            return
        head = resp.partition(b"\r\n\r\n")[0].split(b"\r\n")
        replay = self._header(head, b"synchro-replay") is not None
        self.push_answers.setdefault(batch_id, []).append((index, status, replay))

    def _record_push(self, req_body, resp):
        try:
            batch_id = json.loads(req_body)["batch_id"]
        except (ValueError, KeyError, TypeError):
            self.unexpected.append("a push answered 200 without a batch_id in its request")
            return
        head, _, body = resp.partition(b"\r\n\r\n")
        if self._header(head.split(b"\r\n"), b"transfer-encoding") == b"chunked":
            body = self._dechunk(body)
        self.push_200.setdefault(batch_id, []).append(body)

    @staticmethod
    def _dechunk(data):
        out = b""
        while data:
            size_line, _, data = data.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                break
            out += data[:size]
            data = data[size + 2:]
        return out
