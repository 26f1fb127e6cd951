# SPDX-License-Identifier: BSD-2-Clause
"""The harness of the pull and rebuild end-to-end suites (tests/e2e/test_pull_*.pgt,
doc/contract.md#pull-and-rebuild): a registered client that pulls and rebuilds and checks every body
byte for byte
against RFC 8785 and every row against its checksum, the server's rows of a user, waits until
walsync has caught up, and the runner: one stack (nginx, synchro-fcgi, synchro-walsync) on the
throwaway PostgreSQL of tests/integration/with-pg, the cases in order."""

import base64
import hashlib
import json
import os
import re
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import synchro_e2e as e2e  # noqa: E402
from synchro_e2e import Runner, Stack, wait_for  # noqa: E402

SERVER_TIME_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z$")
CURSOR_RE = re.compile(r"^c1\.[0-9a-f]{16}\.[0-9a-f]{8}$")
PULL_WAIT_MS = 1500
CLIENT_VERSION = "2026-01-01T00:00:00Z"


def uid():
    return str(uuid.uuid4())


def ensure(cond, msg="check failed"):
    if not cond:
        raise AssertionError(msg)


def jcs(v):
    """RFC 8785 for the values of these tests (floats only where repr is the ECMAScript form)."""
    if isinstance(v, dict):
        items = sorted(v.items(), key=lambda kv: kv[0].encode("utf-16-be"))
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + jcs(x) for k, x in items) + "}"
    if isinstance(v, list):
        return "[" + ",".join(jcs(x) for x in v) + "]"
    if isinstance(v, float):
        return repr(v) if v != int(v) else str(int(v))
    return json.dumps(v, ensure_ascii=False)


def row_checksum(schema, table, pk_field, pk_value, row):
    pre = ["row-v1", [str(schema["version"]), schema["hash"]], table, [pk_field, pk_value],
           [[k, row[k]] for k in sorted(row, key=lambda s: s.encode("utf-8"))]]
    return hashlib.sha256(b"synchro:v3:row-checksum:v1\x00" + jcs(pre).encode()).hexdigest()


class Client:
    """One registered client of a user, with the schema its requests carry."""

    def __init__(self, stack, user):
        self.stack = stack
        self.user = user
        c = stack.connect(user=user)
        self.id = c["client_id"]
        self.generation = c["client_generation"]
        self.schema = c["schema"]
        self.cursor = None

    def post(self, path, body):
        status, headers, raw = self.stack.post(path, body, user=self.user)
        ensure(headers.get("content-type", "").startswith("application/json"), headers)
        doc = json.loads(raw)
        ensure(jcs(doc).encode() == raw, "not canonical: %r" % raw)
        return status, headers, doc

    def pull_req(self, cursor, limit=1000, **over):
        body = {"client_id": self.id, "client_generation": self.generation, "schema": self.schema,
                "cursor": cursor, "limit": limit}
        body.update(over)
        return self.post("/v3/pull", body)

    def pull(self, limit=1000):
        """One page from self.cursor; the changes. Checks the 200 body's shape."""
        status, _, doc = self.pull_req(self.cursor, limit)
        ensure(status == 200, "pull: %r %r" % (status, doc))
        ensure(set(doc) == {"changes", "cursor", "has_more", "server_time"}, doc)
        ensure(CURSOR_RE.match(doc["cursor"]) and SERVER_TIME_RE.match(doc["server_time"]), doc)
        ensure(isinstance(doc["has_more"], bool), doc)
        ensure(len(doc["changes"]) <= limit, "more changes than limit")
        for ch in doc["changes"]:
            check_change(self, ch)
        self.cursor = doc["cursor"]
        return doc

    def pull_all(self, limit=1000):
        changes = []
        while True:
            doc = self.pull(limit)
            changes += doc["changes"]
            if not doc["has_more"]:
                return changes

    def rebuild_req(self, rebuild_id, page_token, limit=1000, **over):
        body = {"client_id": self.id, "client_generation": self.generation, "schema": self.schema,
                "rebuild_id": rebuild_id, "page_token": page_token, "limit": limit}
        body.update(over)
        return self.post("/v3/rebuild", body)

    def rebuild(self, limit=1000):
        """A whole rebuild, page by page; the rows, and self.cursor set to its cursor. The first
        page's rows_total is the number of rows the pages deliver (nothing writes meanwhile)."""
        rid, token, rows, total = uid(), None, [], None
        while True:
            status, _, doc = self.rebuild_req(rid, token, limit)
            ensure(status == 200, "rebuild: %r %r" % (status, doc))
            ensure(SERVER_TIME_RE.match(doc["server_time"]), doc)
            ensure(len(doc["rows"]) <= limit, "more rows than limit")
            for row in doc["rows"]:
                ensure(row["op"] == "upsert", row)
                check_change(self, row)
            rows += doc["rows"]
            first = token is None
            if first:
                total = doc.get("rows_total")
                ensure(isinstance(total, int) and total >= 0, doc)
            head = {"rows", "page_token", "server_time"} | ({"rows_total"} if first else set())
            token = doc["page_token"]
            if token is None:
                ensure(set(doc) == head | {"cursor"}, doc)
                ensure(CURSOR_RE.match(doc["cursor"]), doc)
                ensure(total == len(rows), "rows_total %r, rows %d" % (total, len(rows)))
                self.cursor = doc["cursor"]
                return rows
            ensure(set(doc) == head, doc)
            ensure(isinstance(token, str) and token, doc)

    def push(self, mutations):
        body = {"client_id": self.id, "client_generation": self.generation, "batch_id": uid(),
                "schema": self.schema, "mutations": mutations}
        status, _, doc = self.post("/v3/push", body)
        ensure(status == 200, "push: %r %r" % (status, doc))
        return doc


def mutation(client, table, pk_field, pk, op, columns=None, base=None):
    m = {"mutation_id": uid(), "table": table, "pk": {"field": pk_field, "value": pk},
         "authored_schema": client.schema, "operation": op, "client_version": CLIENT_VERSION}
    if columns is not None:
        m["columns"] = columns
    if base is not None:
        m["base_version"] = base
    return m


def check_change(client, ch):
    """The members of a change (or rebuild row), its schema and its checksum."""
    keys = set(ch)
    ensure({"table", "pk", "op", "server_version", "schema"} <= keys, ch)
    ensure(keys <= {"table", "pk", "op", "server_version", "row", "row_checksum", "schema", "mutation_id",
                    "left_scope"}, ch)
    ensure(ch.get("left_scope", True) is True and ("left_scope" not in ch or ch["op"] == "delete"), ch)
    ensure(ch["schema"] == client.schema, ch)
    ensure(ch["op"] in ("upsert", "delete"), ch)
    ensure(("row" in ch) == (ch["op"] == "upsert") == ("row_checksum" in ch), ch)
    ensure(set(ch["pk"]) == {"field", "value"}, ch)
    if ch["op"] == "upsert":
        want = row_checksum(ch["schema"], ch["table"], ch["pk"]["field"], ch["pk"]["value"], ch["row"])
        ensure(ch["row_checksum"] == want, "row_checksum %s, want %s" % (ch["row_checksum"], want))
        if ch["table"] == "todo" and not getattr(client, "todo_read_all", False):
            ensure(ch["row"]["owner"] == client.user, "a row of another user: %r" % ch)


def apply(state, changes):
    """A client's local store: (table, pk) -> (server_version, row)."""
    for ch in changes:
        key = (ch["table"], json.dumps(ch["pk"]["value"]))
        if ch["op"] == "upsert":
            state[key] = (ch["server_version"], ch["row"])
        else:
            state.pop(key, None)
    return state


# --- the server's truth, read with psql --------------------------------------------------------

def wire_ts(s):
    """A timestamptz from row_to_json ("2026-01-02T03:04:05.5+00:00") in server_time form."""
    m = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?\+00:00$", s)
    ensure(m is not None, s)
    return "%s.%sZ" % (m.group(1), (m.group(2) or "").ljust(6, "0"))


def server_rows(stack, user):
    """(table, pk) -> (fence version, wire row) of what user's rebuild must show."""
    out = {}
    q = ("SELECT json_build_object('v', f.version, 'r', row_to_json(t))::text FROM todo t"
         " JOIN synchro.row_fences f ON f.table_id = 'todo' AND f.pk = t.id::text"
         " WHERE t.owner = '%s'" % user)
    for line in filter(None, stack.psql(q).splitlines()):
        d = json.loads(line)
        r = d["r"]
        out[("todo", json.dumps(r["id"]))] = (d["v"], {"title": r["title"], "done": r["done"],
                                                       "note": r["note"], "owner": r["owner"],
                                                       "list_id": r["list_id"]})
    q = ("SELECT json_build_object('v', f.version, 'r', row_to_json(t), 'price', t.price::text,"
         " 'tags', t.tags::text)::text FROM item t"
         " JOIN synchro.row_fences f ON f.table_id = 'item' AND f.pk = t.id::text")
    for line in filter(None, stack.psql(q).splitlines()):
        d = json.loads(line)
        r = d["r"]
        row = {"label": r["label"], "qty": r["qty"], "price": d["price"],
               "weight": r["weight"], "due": r["due"],
               "seen_at": wire_ts(r["seen_at"]) if r["seen_at"] else None,
               "tags": jcs(json.loads(d["tags"])) if d["tags"] is not None else None,
               "blob": base64.b64encode(bytes.fromhex(r["blob"][2:])).decode() if r["blob"] else None,
               "ref": r["ref"],
               "deleted_at": wire_ts(r["deleted_at"]) if r["deleted_at"] else None}
        out[("item", json.dumps(str(r["id"])))] = (d["v"], row)
    return out


def caught_up(stack):
    """Every current fence version is in the changelog: walsync materialized everything."""
    return stack.psql("SELECT count(*) FROM synchro.row_fences f WHERE NOT EXISTS ("
                      "SELECT 1 FROM synchro.changelog l WHERE l.table_id = f.table_id"
                      " AND l.pk = f.pk AND l.version = f.version)") == "0"


def wait_caught_up(stack):
    wait_for(lambda: caught_up(stack), what="walsync to materialize every fence")


def fence(stack, table, pk):
    return stack.psql("SELECT version FROM synchro.row_fences WHERE table_id = '%s' AND pk = '%s'" % (table, pk))


def pull_until(client, pred, what):
    """Pulls until pred(all changes so far) holds (walsync materializes asynchronously)."""
    got = []

    def step():
        got.extend(client.pull_all())
        return pred(got)
    wait_for(step, what=what)
    return got


def error_of(status, headers, doc, code, http_status):
    ensure(status == http_status, "status %r, expected %d: %r" % (status, http_status, doc))
    ensure(set(doc) == {"error"}, doc)
    e = doc["error"]
    ensure(e["code"] == code, "code %r, expected %r" % (e["code"], code))
    ensure(e["retryable"] is (http_status in (429, 503)), doc)
    if http_status in (429, 503):
        ensure(headers.get("retry-after") == "1", headers)
    return e


# --- cases ------------------------------------------------------------------------------------


def main(name, cases):
    """Runs cases (a list of (name, fn(stack))) in order on one stack: nginx, synchro-fcgi and
    synchro-walsync on the throwaway database; the exit status of the suite."""
    missing = e2e.stack_missing(name)
    if missing:
        print(missing)
        return 77
    runner = Runner()
    stack = Stack(server="nginx", workers=4, fcgi_conf={"pull_wait_ms": PULL_WAIT_MS})
    try:
        stack.start()
        stack.start_walsync()
        for case, fn in cases:
            runner.case(case, fn, stack)
    finally:
        if runner.failures:
            for log in ("fcgi", "walsync", "nginx"):
                text = stack.log(log)
                if text:
                    print("--- %s log (tail) ---\n%s" % (log, text[-4000:]))
        stack.stop()
    return runner.finish()
