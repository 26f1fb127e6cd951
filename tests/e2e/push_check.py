# SPDX-License-Identifier: BSD-2-Clause
"""Checks of push answers for the end-to-end suites: an RFC 8785 serializer (floats too), the
doc/contract.md#outcome-field-rules and doc/contract.md#outcome-partition of a 200 body, the
request-level error
bodies, and small builders of push requests and clients over a synchro_e2e.Stack."""

import hashlib
import json
import math
import re
import uuid

import synchro_e2e as e2e

CV = "2026-07-18T10:00:00Z"
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
SERVER_TIME_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z$")
HASH_RE = re.compile(r"^[0-9a-f]{64}$")
OPAQUE_RE = re.compile(r"^[!-~]{1,128}$")
ABSENT = object()

CONFLICT_CODES = {"version_conflict", "row_already_exists", "row_deleted", "row_not_found"}
TERMINAL_CODES = {"policy_rejected", "validation_failed", "table_not_synced", "schema_incompatible",
                  "atomic_batch_rejected"}
OUTCOME_BASE = {"mutation_id", "table", "pk", "operation", "outcome_schema", "status"}
ROW_MEMBERS = {"server_version", "server_row", "row_checksum"}
INCOMPATIBLE_MEMBERS = {"retryable", "authored_schema", "current_schema", "incompatible_field_ids"}
# doc/contract.md#error-codes: status -> retryable
RETRYABLE = {400: False, 401: False, 409: False, 422: False, 426: False, 429: True, 503: True}
ERROR_STATUS = {"invalid_request": 400, "auth_required": 401, "idempotency_conflict": 409,
                "client_retired": 409, "client_generation_expired": 409, "schema_mismatch": 422,
                "upgrade_required": 426, "retry_later": 429, "temporary_unavailable": 503}


def uid():
    return str(uuid.uuid4())


def ensure(cond, msg="check failed"):
    if not cond:
        raise AssertionError(msg)


# --- RFC 8785 ---------------------------------------------------------------

def es_number(x):
    """ECMAScript Number::toString of a finite double (RFC 8785 section 3.2.2.3)."""
    if isinstance(x, bool):
        raise TypeError("bool is not a number")
    if isinstance(x, int):
        if abs(x) < 2 ** 53:
            return str(x)
        x = float(x)
    if not math.isfinite(x):
        raise ValueError("JCS has no %r" % x)
    if x == 0:
        return "0"
    if x < 0:
        return "-" + es_number(-x)
    mant, _, exp = repr(x).partition("e")
    ip, _, fp = mant.partition(".")
    digits = (ip + fp).lstrip("0")
    stripped = digits.rstrip("0")
    k = len(stripped)
    n = k + (int(exp or 0) - len(fp) + len(digits) - k)
    if k <= n <= 21:
        return stripped + "0" * (n - k)
    if 0 < n <= 21:
        return stripped[:n] + "." + stripped[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + stripped
    e = n - 1
    return stripped[0] + ("." + stripped[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))


def jcs(v):
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return es_number(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ",".join(jcs(x) for x in v) + "]"
    if isinstance(v, dict):
        keys = sorted(v, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + jcs(v[k]) for k in keys) + "}"
    raise TypeError(type(v))


def jcs_bytes(v):
    return jcs(v).encode("utf-8")


def has_float(v):
    if isinstance(v, float):
        return True
    if isinstance(v, list):
        return any(has_float(x) for x in v)
    if isinstance(v, dict):
        return any(has_float(x) for x in v.values())
    return False


def parse_json(data):
    """Strict parse: UTF-8, no duplicate member names, no NaN/Infinity."""
    def pairs(items):
        d = {}
        for k, v in items:
            assert k not in d, "duplicate member %r" % k
            d[k] = v
        return d

    def constant(name):
        raise AssertionError("non-JSON constant " + name)
    return json.loads(data.decode("utf-8"), object_pairs_hook=pairs, parse_constant=constant)


def dumps(obj):
    return json.dumps(obj, separators=(",", ":")).encode()


def schema_hash(manifest):
    return hashlib.sha256(b"synchro:v3:schema-manifest:v1\x00" + jcs_bytes(manifest)).hexdigest()


def row_checksum(schema, table, pk_field, pk_value, row):
    pre = ["row-v1", [str(schema["version"]), schema["hash"]], table, [pk_field, pk_value],
           [[k, row[k]] for k in sorted(row, key=lambda s: s.encode("utf-8"))]]
    return hashlib.sha256(b"synchro:v3:row-checksum:v1\x00" + jcs_bytes(pre)).hexdigest()


# --- doc/contract.md#fingerprints ------------------------------------------

BATCH_DOMAIN = "synchro:v3:push-batch-fingerprint:v1"
MUTATION_DOMAIN = "synchro:v3:push-mutation-fingerprint:v1"


def utf8_sorted(keys):
    return sorted(keys, key=lambda k: k.encode("utf-8"))


def normalized_mutation(m):
    a = m["authored_schema"]
    base = [1, m["base_version"]] if "base_version" in m else [0]
    cols = [1, [[k, m["columns"][k]] for k in utf8_sorted(m["columns"])]] if "columns" in m else [0]
    return ["mutation-v1", m["mutation_id"], m["table"], [m["pk"]["field"], m["pk"]["value"]],
            [str(a["version"]), a["hash"]], m["operation"], base, m["client_version"], cols]


def batch_fingerprint(user, req):
    s = req["schema"]
    nb = ["atomic-batch-v1" if req.get("atomic") is True else "batch-v1", user, req["client_id"],
          str(req["client_generation"]), req["batch_id"], [str(s["version"]), s["hash"]],
          [normalized_mutation(m) for m in req["mutations"]]]
    return hashlib.sha256(BATCH_DOMAIN.encode() + b"\x00" + jcs_bytes(nb)).hexdigest()


def mutation_fingerprint(user, client_id, m):
    scope = ["mutation-scope-v1", user, client_id, normalized_mutation(m)]
    return hashlib.sha256(MUTATION_DOMAIN.encode() + b"\x00" + jcs_bytes(scope)).hexdigest()


# --- portable wire values (doc/contract.md#portable-types) ----------------------------

def wire_ok(ftype, v):
    if isinstance(v, bool) and ftype != "bool":
        return False
    if ftype == "text":
        return isinstance(v, str) and "\x00" not in v
    if ftype == "int32":
        return isinstance(v, int) and -2 ** 31 <= v < 2 ** 31
    if ftype == "int64":
        return (isinstance(v, str) and re.fullmatch(r"-?(0|[1-9][0-9]*)", v) is not None and v != "-0"
                and -2 ** 63 <= int(v) < 2 ** 63)
    if ftype == "float64":
        return isinstance(v, (int, float)) and math.isfinite(v)
    if ftype == "numeric":
        return isinstance(v, str) and re.fullmatch(r"-?(0|[1-9][0-9]*)(\.[0-9]*[1-9])?", v) is not None and v != "-0"
    if ftype == "bool":
        return isinstance(v, bool)
    if ftype == "timestamp":
        return isinstance(v, str) and SERVER_TIME_RE.match(v) is not None
    if ftype == "date":
        return isinstance(v, str) and re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", v) is not None
    if ftype == "uuid":
        return isinstance(v, str) and UUID_RE.match(v) is not None
    if ftype == "bytes":
        return isinstance(v, str) and len(v) % 4 == 0 and re.fullmatch(r"[A-Za-z0-9+/]*={0,2}", v) is not None
    if ftype == "json":
        try:
            return isinstance(v, str) and jcs(parse_json(v.encode())) == v
        except (ValueError, AssertionError):
            return False
    return False


def schema_ref_ok(r):
    return (isinstance(r, dict) and set(r) == {"version", "hash"} and isinstance(r["version"], int)
            and not isinstance(r["version"], bool) and r["version"] >= 1 and isinstance(r["hash"], str)
            and HASH_RE.match(r["hash"]) is not None)


# --- answers ------------------------------------------------------------------

class Resp:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body
        self._json = None

    @property
    def json(self):
        if self._json is None:
            self._json = parse_json(self.body)
        return self._json

    @property
    def replay(self):
        return self.headers.get("synchro-replay")

    def __repr__(self):
        return "<HTTP %s %r%s>" % (self.status, self.body[:600], "..." if len(self.body) > 600 else "")


def check_json_headers(r):
    ct = r.headers.get("content-type")
    assert ct == "application/json", "Content-Type %r, want application/json: %r" % (ct, r)


def check_canonical(r):
    """The body is exactly the RFC 8785 bytes of its value; returns the value."""
    try:
        v = r.json
    except (ValueError, AssertionError) as e:
        raise AssertionError("body is not strict JSON (%s): %r" % (e, r))
    assert r.body == jcs_bytes(v), "body is not canonical JSON: %r\n want %r" % (r.body[:400], jcs_bytes(v)[:400])
    if not has_float(v):
        assert r.body == e2e.canonical(v), "body differs from synchro_e2e.canonical: %r" % r
    return v


def check_error(r, status, code):
    """A request-level error: exact status, canonical body with exactly the members of
    doc/contract.md#error-body."""
    assert r.status == status, "want HTTP %d %s, got %r" % (status, code, r)
    check_json_headers(r)
    b = check_canonical(r)
    assert isinstance(b, dict) and set(b) == {"error"}, "error body members: %r" % r
    e = b["error"]
    want = {"code", "message", "retryable"}
    if code == "schema_mismatch":
        want |= {"current_schema", "received_schema"}
    assert isinstance(e, dict) and set(e) == want, "error members %r, want %r" % (sorted(e), sorted(want))
    assert e["code"] == code, "error code %r, want %r: %r" % (e["code"], code, r)
    assert e["retryable"] is RETRYABLE[status], "retryable %r for %d" % (e["retryable"], status)
    assert isinstance(e["message"], str) and e["message"], "message required: %r" % r
    assert "accepted" not in b and "rejected" not in b
    if status in (429, 503):
        ra = r.headers.get("retry-after", "")
        assert re.fullmatch(r"[0-9]+", ra), "Retry-After %r on %d" % (ra, status)
    assert r.replay is None, "an error is never a replay: %r" % r
    if code == "schema_mismatch":
        assert schema_ref_ok(e["current_schema"]) and schema_ref_ok(e["received_schema"]), e
    return e


class Ctx:
    """One server's run: the stack, the current schema reference and every manifest seen."""

    def __init__(self, stack, server):
        self.stack = stack
        self.server = server
        self.manifests = {}
        self.schema = None
        self._pk = 1000
        self.refresh_schema()

    def http(self, method, path, data=None, user="alice", protocol="3", headers=None, timeout=60):
        st, h, b = self.stack.request(method, path, raw=data, user=user, protocol=protocol, headers=headers,
                                      timeout=timeout)
        return Resp(st, h, b)

    def refresh_schema(self):
        r = self.http("GET", "/v3/schema")
        assert r.status == 200, "GET /v3/schema: %r" % r
        j = r.json
        self.schema = j["schema"]
        self.manifests[self.schema["version"]] = j["manifest"]
        return r

    def publish(self, manifest, name):
        path = "%s/%s.json" % (self.stack.dir, name)
        with open(path, "w") as f:
            json.dump(manifest, f)
        before = self.schema["version"]
        self.stack.ctl("schema", "publish", path)
        self.refresh_schema()
        assert self.schema["version"] == before + 1, "publish %s: version %r after %r" % (name, self.schema, before)
        assert self.manifests[self.schema["version"]] == manifest, "GET /v3/schema serves another manifest"
        return self.schema

    def table(self, version, table_id):
        for t in self.manifests[version]["tables"]:
            if t["table_id"] == table_id:
                return t
        return None

    def item_pk(self):
        self._pk += 1
        return str(self._pk)

    def dev(self, user="alice"):
        return Dev(self, user)

    # mutations
    def m(self, table, pk, op, columns=ABSENT, base=ABSENT, authored=None, mid=None, cv=CV, pk_field="id"):
        m = {"mutation_id": mid or uid(), "table": table, "pk": {"field": pk_field, "value": pk},
             "authored_schema": dict(authored or self.schema), "operation": op, "client_version": cv}
        if base is not ABSENT:
            m["base_version"] = base
        if columns is not ABSENT:
            m["columns"] = columns
        return m

    def ins(self, table, pk, columns, **kw):
        return self.m(table, pk, "insert", columns=columns, **kw)

    def upd(self, table, pk, base, columns, **kw):
        return self.m(table, pk, "update", columns=columns, base=base, **kw)

    def dele(self, table, pk, base, **kw):
        return self.m(table, pk, "delete", base=base, **kw)

    # the database behind
    def q(self, sql):
        return self.stack.psql(sql)

    def n(self, sql):
        return int(self.q(sql))

    def fence(self, table, pk):
        out = self.q("SELECT state || ' ' || version FROM synchro.row_fences WHERE table_id = '%s' AND pk = '%s'"
                     % (table, pk))
        return tuple(out.split(" ")) if out else None

    def row(self, table, pk):
        lit = "'%s'" % pk
        out = self.q("SELECT row_to_json(t)::text FROM public.%s t WHERE id = %s" % (table, lit))
        return json.loads(out) if out else None

    def batches(self, dev):
        return self.n("SELECT count(*) FROM synchro.batches WHERE client_id = '%s'" % dev.client_id)

    def mutations(self, dev):
        return self.n("SELECT count(*) FROM synchro.mutations WHERE client_id = '%s'" % dev.client_id)

    def has_batch(self, dev, batch_id):
        return self.n("SELECT count(*) FROM synchro.batches WHERE client_id = '%s' AND batch_id = '%s'"
                      % (dev.client_id, batch_id)) > 0

    def epoch(self, dev):
        return self.n("SELECT accepted_write_epoch FROM synchro.clients WHERE client_id = '%s'" % dev.client_id)

    def stored(self, dev, batch_id):
        out = self.q("SELECT http_status || ' ' || encode(response, 'hex') FROM synchro.batches "
                     "WHERE client_id = '%s' AND batch_id = '%s' AND state = 'complete'" % (dev.client_id, batch_id))
        if not out:
            return None
        st, _, hx = out.partition(" ")
        return int(st), bytes.fromhex(hx)


class Dev:
    """A registered client of one user."""

    def __init__(self, ctx, user="alice", client_id=None):
        self.ctx = ctx
        self.user = user
        self.client_id = client_id or uid()
        self.generation = 0
        self.connect()

    def connect(self):
        r = self.ctx.http("POST", "/v3/connect", dumps({"client_id": self.client_id}), user=self.user)
        assert r.status == 200, "connect: %r" % r
        check_json_headers(r)
        j = check_canonical(r)
        assert set(j) == {"client_id", "client_generation", "schema", "server_time"}, j
        assert j["client_id"] == self.client_id
        assert j["client_generation"] == self.generation + 1, "generation %r after %r" % (j, self.generation)
        assert j["schema"] == self.ctx.schema, "connect schema %r, current %r" % (j["schema"], self.ctx.schema)
        assert SERVER_TIME_RE.match(j["server_time"])
        self.generation = j["client_generation"]
        return j

    def req(self, muts, batch_id=None, atomic=ABSENT, schema=None, generation=None):
        r = {"client_id": self.client_id, "client_generation": self.generation if generation is None else generation,
             "batch_id": batch_id or uid(), "schema": dict(schema or self.ctx.schema), "mutations": muts}
        if atomic is not ABSENT:
            r["atomic"] = atomic
        return r

    def send(self, req=None, raw=None, user=ABSENT, **kw):
        """POST /v3/push of req (or raw bytes) as this client's user (user=None: no credentials)."""
        return self.ctx.http("POST", "/v3/push", raw if raw is not None else dumps(req),
                             user=self.user if user is ABSENT else user, **kw)

    def ok(self, muts, schemas=None, **kw):
        """Pushes a new batch of muts; the 200 body validated; (request, response, outcomes by id)."""
        req = self.req(muts, **kw)
        r = self.send(req)
        outs = check_200(self.ctx, r, req, schemas)
        assert r.replay is None, "a first execution is not a replay: %r" % r
        return req, r, outs

    def one(self, m, **kw):
        return self.ok([m], **kw)[2][m["mutation_id"]]


def check_outcome(ctx, o, m, want_schema):
    assert isinstance(o, dict), o
    keys = set(o)
    assert OUTCOME_BASE <= keys, "outcome lacks %r: %r" % (sorted(OUTCOME_BASE - keys), o)
    assert o["mutation_id"] == m["mutation_id"], o
    assert o["table"] == m["table"], o
    assert o["pk"] == m["pk"], "pk echo %r, sent %r" % (o["pk"], m["pk"])
    assert o["operation"] == m["operation"], o
    assert schema_ref_ok(o["outcome_schema"]), o
    if want_schema is not None:
        assert o["outcome_schema"] == want_schema, "outcome_schema %r, want %r" % (o["outcome_schema"], want_schema)
    st = o["status"]
    code = o.get("code")
    extra = keys - OUTCOME_BASE
    if st == "applied":
        assert extra <= ROW_MEMBERS, "applied outcome has %r" % sorted(extra - ROW_MEMBERS)
        assert "server_version" in keys, "applied requires server_version: %r" % o
    elif st == "conflict":
        assert code in CONFLICT_CODES, "conflict code %r" % code
        assert {"code", "message"} <= keys and extra - {"code", "message"} <= ROW_MEMBERS, o
        if code == "row_not_found":
            assert not keys & ROW_MEMBERS, "true absence returns neither row nor version: %r" % o
        if "server_row" in keys:
            assert "server_version" in keys, "a conflict row needs its version: %r" % o
        if code in ("version_conflict", "row_already_exists"):
            assert {"server_row", "server_version"} <= keys, "a live row conflict returns the row: %r" % o
    elif st == "rejected_terminal":
        assert code in TERMINAL_CODES, "terminal code %r" % code
        want = OUTCOME_BASE | {"code", "message"}
        if code == "schema_incompatible":
            want |= INCOMPATIBLE_MEMBERS
        assert keys == want, "rejected_terminal %s members %r, want %r" % (code, sorted(keys), sorted(want))
        if code == "schema_incompatible":
            assert o["retryable"] is False, o
            assert schema_ref_ok(o["authored_schema"]) and schema_ref_ok(o["current_schema"]), o
            ids = o["incompatible_field_ids"]
            assert isinstance(ids, list) and all(isinstance(i, str) for i in ids), o
            assert ids == sorted(set(ids), key=lambda s: s.encode("utf-8")), "ids not sorted/unique: %r" % ids
        if code == "atomic_batch_rejected":
            assert o["message"] == "atomic batch rejected", o
    else:
        raise AssertionError("status %r" % st)
    if st == "applied":
        assert "code" not in keys and "message" not in keys, o
    else:
        assert isinstance(o["message"], str) and o["message"], "message required: %r" % o
    assert ("server_row" in keys) == ("row_checksum" in keys), "server_row and row_checksum go together: %r" % o
    if "server_version" in keys:
        assert isinstance(o["server_version"], str) and OPAQUE_RE.match(o["server_version"]), o
    if "server_row" in keys:
        row = o["server_row"]
        assert isinstance(row, dict), o
        ver = o["outcome_schema"]["version"]
        t = ctx.table(ver, o["table"]) if ver in ctx.manifests else None
        if t is not None:
            fields = {f["field_id"]: f for f in t["fields"]}
            assert set(row) == set(fields), "server_row fields %r, schema %d has %r" % (sorted(row), ver, sorted(fields))
            for fid, v in row.items():
                f = fields[fid]
                if v is None:
                    assert f["nullable"], "null for non-nullable %s" % fid
                else:
                    assert wire_ok(f["type"], v), "server_row.%s = %r is not a canonical %s" % (fid, v, f["type"])
        want_sum = row_checksum(o["outcome_schema"], o["table"], o["pk"]["field"], o["pk"]["value"], row)
        assert o["row_checksum"] == want_sum, "row_checksum %s, want %s" % (o["row_checksum"], want_sum)


def check_200(ctx, r, req, schemas=None):
    """A complete outcome partition of req in a canonical 200 body. schemas: mutation_id ->
    expected outcome_schema where it is not the request schema (historical bindings)."""
    assert r.status == 200, "want 200, got %r" % r
    check_json_headers(r)
    b = check_canonical(r)
    assert isinstance(b, dict) and set(b) == {"batch_id", "server_time", "accepted", "rejected"}, \
        "200 members %r" % (sorted(b) if isinstance(b, dict) else b)
    assert b["batch_id"] == req["batch_id"], "batch_id echo"
    assert isinstance(b["server_time"], str) and SERVER_TIME_RE.match(b["server_time"]), b["server_time"]
    assert isinstance(b["accepted"], list) and isinstance(b["rejected"], list)
    order = {m["mutation_id"]: i for i, m in enumerate(req["mutations"])}
    seen = {}
    for arr in ("accepted", "rejected"):
        last = -1
        for o in b[arr]:
            mid = o.get("mutation_id") if isinstance(o, dict) else None
            assert mid in order, "%s has an outcome for no request mutation: %r" % (arr, o)
            assert mid not in seen, "mutation %s appears twice" % mid
            assert order[mid] > last, "%s breaks request order at %s" % (arr, mid)
            last = order[mid]
            seen[mid] = o
            if arr == "accepted":
                assert o.get("status") == "applied", "accepted holds only applied: %r" % o
            else:
                assert o.get("status") in ("conflict", "rejected_terminal"), "rejected holds %r" % o.get("status")
    missing = [mid for mid in order if mid not in seen]
    assert not missing, "mutations missing from the partition: %r" % missing
    for m in req["mutations"]:
        want = (schemas or {}).get(m["mutation_id"], req["schema"])
        check_outcome(ctx, seen[m["mutation_id"]], m, want)
    codes = [o.get("code") for o in seen.values()]
    if req.get("atomic") is True:
        if b["rejected"]:
            assert not b["accepted"], "a failed atomic group accepts nothing"
            own = [o for o in b["rejected"] if o["code"] != "atomic_batch_rejected"]
            assert len(own) == 1, "a failed atomic group has exactly one own failure: %r" % codes
            for o in b["rejected"]:
                if o["code"] == "atomic_batch_rejected":
                    assert o["outcome_schema"] == req["schema"], o
    else:
        assert "atomic_batch_rejected" not in codes, "a non-atomic response never has atomic_batch_rejected"
    return seen


def expect(o, status, code=None, row=None, version=None):
    """row: True/False (present or not) or the exact server_row; version: True/False or the exact one."""
    assert o["status"] == status and o.get("code") == code, \
        "want %s/%s, got %s/%s: %r" % (status, code, o["status"], o.get("code"), o)
    if row is not None:
        assert ("server_row" in o) == bool(row), "server_row %s expected: %r" % ("" if row else "not", o)
        if isinstance(row, dict):
            assert o["server_row"] == row, "server_row %r, want %r" % (o["server_row"], row)
    if version is True:
        assert "server_version" in o, o
    elif version is False:
        assert "server_version" not in o, o
    elif version is not None:
        assert o.get("server_version") == version, "server_version %r, want %r" % (o.get("server_version"), version)
    return o
