#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""How the push golden vectors were derived, independently of the C code.

Each vector is a hand-written request body and, written by hand beside it, the normalized arrays of
doc/contract.md#normalized-mutation for it (normalized_mutation, the batch prefix). Nothing
here derives a normalized form from the request: a normalization bug in
src/core cannot agree with these files by construction. This script only
serializes the hand-written arrays (a small RFC 8785 writer below), hashes
them and writes the files:

  NN-name.json       the request body (exact bytes; whitespace and member order vary)
  NN-name.user       the authenticated user, when it is not "alice"
  NN-name.expected   `synchroctl fingerprint --user USER` output (JCS, no newline)
  NN-name.preimages  JCS(normalized_batch), then JCS(normalized_mutation_scope) of each
                     mutation, one per line (`synchroctl fingerprint --preimages`)
  rows/NN-name.json  a row checksum input; rows/NN-name.expected its checksum,
                     rows/NN-name.preimage its preimage
  invalid/NN-name.json, .message   negative vectors: the exact 400 message

Run `python3 gen.py` in this directory to rewrite every file; `git diff` must
then be empty.
"""

import hashlib
import json
import os
import sys

BATCH_DOMAIN = b"synchro:v3:push-batch-fingerprint:v1"
MUTATION_DOMAIN = b"synchro:v3:push-mutation-fingerprint:v1"
ROW_DOMAIN = b"synchro:v3:row-checksum:v1"


class Raw(str):
    """JCS text written by hand: ECMAScript numbers Python's repr spells differently."""


def jcs(v):
    """RFC 8785 for the values used here: no float goes through repr unless it is plain."""
    if isinstance(v, Raw):
        return str(v)
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        assert abs(v) < 2**53
        return str(v)
    if isinstance(v, float):
        r = repr(v)
        assert "e" not in r and not r.endswith(".0"), "write %r as Raw" % v
        return r
    if isinstance(v, str):
        # json.dumps escapes exactly what JCS escapes: " \\ and U+0000..U+001F
        # (\b \t \n \f \r short, the rest \u00xx lowercase); everything else raw.
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ",".join(jcs(x) for x in v) + "]"
    if isinstance(v, dict):
        # JCS orders object members by UTF-16 code units
        keys = sorted(v, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(jcs(k) + ":" + jcs(v[k]) for k in keys) + "}"
    raise TypeError(v)


def sha(domain, preimage):
    return hashlib.sha256(domain + b"\x00" + preimage.encode("utf-8")).hexdigest()


HERE = os.path.dirname(os.path.abspath(__file__))

# Fixed identities (hand-picked, lowercase, non-nil).
CLIENT = "0b7e7c52-3f4a-4d2e-9a61-5c0f1e2d3b4a"
BATCH = "5d1c9f3e-8a7b-4c6d-b2e1-0f9a8b7c6d5e"
H7 = "7777777777777777777777777777777777777777777777777777777777777777"
H8 = "8b1a9953c4611296a827abf8c47804d7e6c49c6b7c6d5f4e3a2b1c0d9e8f7a6b"
S7 = ["7", H7]
S8 = ["8", H8]
M1 = "11111111-1111-4111-8111-111111111111"
M2 = "22222222-2222-4222-8222-222222222222"
M3 = "33333333-3333-4333-8333-333333333333"
T1 = "a0a0a0a0-0000-4000-8000-000000000001"
T2 = "a0a0a0a0-0000-4000-8000-000000000002"
T3 = "a0a0a0a0-0000-4000-8000-000000000003"
CV = "2026-07-18T09:15:00.123Z"

ENVELOPE = '"client_id":"%s","client_generation":12,"batch_id":"%s","schema":{"version":8,"hash":"%s"}' % (
    CLIENT, BATCH, H8)


def prefix(tag="batch-v1", user="alice", gen="12", schema=S8):
    return [tag, user, CLIENT, gen, BATCH, schema]


def nm(mid, table, pk, schema, op, base, cv, columns):
    """normalized_mutation, exactly the element order of doc/contract.md#normalized-mutation."""
    return ["mutation-v1", mid, table, pk, schema, op, base, cv, columns]


VECTORS = []


def vector(name, body, mutations, pre=None, user="alice"):
    VECTORS.append((name, body, mutations, pre or prefix(user=user), user))


# --- presence forms and operations -------------------------------------------

vector("01-insert-empty-columns", """{%s,"mutations":[
 {"mutation_id":"%s","table":"todo","pk":{"field":"id","value":"%s"},
  "authored_schema":{"version":8,"hash":"%s"},"operation":"insert",
  "client_version":"%s","columns":{}}]}
""" % (ENVELOPE, M1, T1, H8, CV),
    [nm(M1, "todo", ["id", T1], S8, "insert", [0], CV, [1, []])])

vector("02-insert-columns-null", """{%s,"mutations":[
 {"mutation_id":"%s","table":"todo","pk":{"field":"id","value":"%s"},
  "authored_schema":{"version":8,"hash":"%s"},"operation":"insert",
  "client_version":"%s","columns":{"title":"Buy milk","note":null,"done":false}}]}
""" % (ENVELOPE, M1, T1, H8, CV),
    [nm(M1, "todo", ["id", T1], S8, "insert", [0], CV,
        [1, [["done", False], ["note", None], ["title", "Buy milk"]]])])

vector("03-update", """{%s,"mutations":[
 {"operation":"update","base_version":"v1.AbC-9","columns":{"done":true},
  "mutation_id":"%s","table":"todo","pk":{"value":"%s","field":"id"},
  "authored_schema":{"hash":"%s","version":8},"client_version":"2026-07-18T09:15:00Z"}]}
""" % (ENVELOPE, M2, T1, H8),
    [nm(M2, "todo", ["id", T1], S8, "update", [1, "v1.AbC-9"], "2026-07-18T09:15:00Z",
        [1, [["done", True]]])])

vector("04-delete", """{%s,"mutations":[
 {"mutation_id":"%s","table":"todo","pk":{"field":"id","value":"%s"},
  "authored_schema":{"version":8,"hash":"%s"},"operation":"delete",
  "base_version":"v2","client_version":"2026-07-18T09:15:00.123456789Z"}]}
""" % (ENVELOPE, M3, T1, H8),
    [nm(M3, "todo", ["id", T1], S8, "delete", [1, "v2"], "2026-07-18T09:15:00.123456789Z",
        [0])])

# --- every portable wire value type -------------------------------------------

vector("05-wire-types", r"""{%s,"mutations":[
 {"mutation_id":"%s","table":"item","pk":{"field":"id","value":"9007199254740993"},
  "authored_schema":{"version":8,"hash":"%s"},"operation":"insert","client_version":"%s",
  "columns":{
   "t_text":"h\u00e9llo \"q\" \\ \/ tab\t nl\n ctrl\u001f del\u007f \u2603",
   "t_int32":-2147483648,
   "t_int64":"-9223372036854775808",
   "t_float64":3.25,
   "t_numeric":"-12.5",
   "t_bool":true,
   "t_timestamp":"2026-07-18T12:34:56.789012Z",
   "t_date":"2026-07-18",
   "t_uuid":"00000000-0000-0000-0000-000000000000",
   "t_bytes":"3q2+7w==",
   "t_json":"{\"a\":[1,2],\"b\":null}",
   "t_null":null,
   "t_unknown":{"z":[1,{"y":false}],"a":"x"}}}]}
""" % (ENVELOPE, M1, H8, CV),
    [nm(M1, "item", ["id", "9007199254740993"], S8, "insert", [0], CV, [1, [
        ["t_bool", True],
        ["t_bytes", "3q2+7w=="],
        ["t_date", "2026-07-18"],
        ["t_float64", Raw("3.25")],
        ["t_int32", -2147483648],
        ["t_int64", "-9223372036854775808"],
        ["t_json", '{"a":[1,2],"b":null}'],
        ["t_null", None],
        ["t_numeric", "-12.5"],
        ["t_text", 'h\u00e9llo "q" \\ / tab\t nl\n ctrl\u001f del\u007f \u2603'],
        ["t_timestamp", "2026-07-18T12:34:56.789012Z"],
        # a field whose manifest is unknown keeps its exact JSON value (JCS)
        ["t_unknown", {"a": "x", "z": [1, {"y": False}]}],
        ["t_uuid", "00000000-0000-0000-0000-000000000000"],
    ]])])

# --- field order: unsigned UTF-8 bytes, not UTF-16 ----------------------------
# U+FB33 is EF AC B3 in UTF-8 and FB33 in UTF-16; U+1F600 is F0 9F 98 80 in UTF-8
# and D83D DE00 in UTF-16. UTF-8 order puts U+FB33 first, UTF-16 the emoji.
# Inside a column *value* (an object) JCS itself orders members by UTF-16.

assert "\ufb33".encode() < "\U0001f600".encode()
assert "\ufb33".encode("utf-16-be") > "\U0001f600".encode("utf-16-be")

vector("06-utf8-field-order", r"""{%s,"mutations":[
 {"mutation_id":"%s","table":"todo","pk":{"field":"id","value":"%s"},
  "authored_schema":{"version":8,"hash":"%s"},"operation":"update","base_version":"b",
  "client_version":"%s",
  "columns":{"\ud83d\ude00":1,"z":{"\ufb33":true,"\ud83d\ude00":false},"ab":3,"\ufb33":2,
             "a":4,"\u00e9":5,"Z":6,"a b":7}}]}
""" % (ENVELOPE, M1, T1, H8, CV),
    [nm(M1, "todo", ["id", T1], S8, "update", [1, "b"], CV, [1, [
        ["Z", 6],
        ["a", 4],
        ["a b", 7],
        ["ab", 3],
        ["z", Raw('{"\U0001f600":false,"\ufb33":true}')],
        ["\u00e9", 5],
        ["\ufb33", 2],
        ["\U0001f600", 1],
    ]])])

# --- two schemas: authored schema differs from the request schema -------------

vector("07-two-schemas", """{%s,"mutations":[
 {"mutation_id":"%s","table":"todo","pk":{"field":"id","value":"%s"},
  "authored_schema":{"version":7,"hash":"%s"},"operation":"insert",
  "client_version":"%s","columns":{"title":"old shape","legacy":1}},
 {"mutation_id":"%s","table":"todo","pk":{"field":"id","value":"%s"},
  "authored_schema":{"version":8,"hash":"%s"},"operation":"insert",
  "client_version":"%s","columns":{"title":"new shape"}}]}
""" % (ENVELOPE, M1, T1, H7, CV, M2, T2, H8, CV),
    [nm(M1, "todo", ["id", T1], S7, "insert", [0], CV,
        [1, [["legacy", 1], ["title", "old shape"]]]),
     nm(M2, "todo", ["id", T2], S8, "insert", [0], CV, [1, [["title", "new shape"]]])])

# --- opaque versions with odd ASCII -------------------------------------------

ODD = " !\"#$%&'()*+,-./0123456789:;<=>?@AZ[\\]^_`az{|}~"
LONG = "~" * 64 + "0" * 64
assert len(LONG) == 128
vector("08-opaque-versions", r"""{%s,"mutations":[
 {"mutation_id":"%s","table":"todo","pk":{"field":"id","value":"%s"},
  "authored_schema":{"version":8,"hash":"%s"},"operation":"update",
  "base_version":" !\"#$%%&'()*+,-.\/0123456789:;<=>?@AZ[\\]^_`az{|}~",
  "client_version":"%s","columns":{"title":"x"}},
 {"mutation_id":"%s","table":"todo","pk":{"field":"id","value":"%s"},
  "authored_schema":{"version":8,"hash":"%s"},"operation":"delete",
  "base_version":"%s","client_version":"%s"}]}
""" % (ENVELOPE, M1, T1, H8, CV, M2, T2, H8, LONG, CV),
    [nm(M1, "todo", ["id", T1], S8, "update", [1, ODD], CV, [1, [["title", "x"]]]),
     nm(M2, "todo", ["id", T2], S8, "delete", [1, LONG], CV, [0])])

# --- multi-mutation order and the atomic tag ----------------------------------
# 09 and 10 hold the same three mutations in another order: the batch
# fingerprint differs, each mutation fingerprint is the same. 11 is 09 with
# "atomic": true: only the batch fingerprint changes.

MA = """{"mutation_id":"%s","table":"todo","pk":{"field":"id","value":"%s"},
  "authored_schema":{"version":8,"hash":"%s"},"operation":"insert",
  "client_version":"%s","columns":{"title":"a"}}""" % (M1, T1, H8, CV)
MB = """{"mutation_id":"%s","table":"todo","pk":{"field":"id","value":"%s"},
  "authored_schema":{"version":8,"hash":"%s"},"operation":"update","base_version":"vb",
  "client_version":"%s","columns":{"done":true}}""" % (M2, T2, H8, CV)
MC = """{"mutation_id":"%s","table":"item","pk":{"field":"id","value":"42"},
  "authored_schema":{"version":8,"hash":"%s"},"operation":"delete","base_version":"vc",
  "client_version":"%s"}""" % (M3, H8, CV)
NA = nm(M1, "todo", ["id", T1], S8, "insert", [0], CV, [1, [["title", "a"]]])
NB = nm(M2, "todo", ["id", T2], S8, "update", [1, "vb"], CV, [1, [["done", True]]])
NC = nm(M3, "item", ["id", "42"], S8, "delete", [1, "vc"], CV, [0])

vector("09-order-abc", "{%s,\"mutations\":[\n %s,\n %s,\n %s]}\n" % (ENVELOPE, MA, MB, MC),
       [NA, NB, NC])
vector("10-order-cab", "{\"mutations\":[\n %s,\n %s,\n %s],\r\n\t%s}" % (MC, MA, MB, ENVELOPE),
       [NC, NA, NB])
vector("11-atomic", "{\"atomic\":true,%s,\"mutations\":[\n %s,\n %s,\n %s]}\n" % (
    ENVELOPE, MA, MB, MC), [NA, NB, NC], pre=prefix(tag="atomic-batch-v1"))

# --- absent and null stay distinct ---------------------------------------------
# The same insert with {"note": null} and with {}: [1,[["note",null]]] vs [1,[]];
# a delete has no columns at all: [0].

vector("12-absent-vs-null", """{%s,"mutations":[
 {"mutation_id":"%s","table":"todo","pk":{"field":"id","value":"%s"},
  "authored_schema":{"version":8,"hash":"%s"},"operation":"insert",
  "client_version":"%s","columns":{"note":null}},
 {"mutation_id":"%s","table":"todo","pk":{"field":"id","value":"%s"},
  "authored_schema":{"version":8,"hash":"%s"},"operation":"insert",
  "client_version":"%s","columns":{}},
 {"mutation_id":"%s","table":"todo","pk":{"field":"id","value":"%s"},
  "authored_schema":{"version":8,"hash":"%s"},"operation":"delete","base_version":"v",
  "client_version":"%s"}]}
""" % (ENVELOPE, M1, T1, H8, CV, M2, T1, H8, CV, M3, T1, H8, CV),
    [nm(M1, "todo", ["id", T1], S8, "insert", [0], CV, [1, [["note", None]]]),
     nm(M2, "todo", ["id", T1], S8, "insert", [0], CV, [1, []]),
     nm(M3, "todo", ["id", T1], S8, "delete", [1, "v"], CV, [0])])

# --- numbers: the JCS (ECMAScript) form of the submitted value -----------------

vector("13-number-forms", """{%s,"mutations":[
 {"mutation_id":"%s","table":"counter","pk":{"field":"n","value":4.20e1},
  "authored_schema":{"version":8,"hash":"%s"},"operation":"insert","client_version":"%s",
  "columns":{"a":2.50,"b":1E2,"c":-0.0,"d":1e20,"e":1e21,"f":0.000001,"g":1e-7,
             "h":123456789012345678901234567890,"i":5e-324,"j":1.7976931348623157e308,
             "k":[-1.5e-3, 9007199254740993]}}]}
""" % (ENVELOPE, M1, H8, CV),
    [nm(M1, "counter", ["n", Raw("42")], S8, "insert", [0], CV, [1, [
        ["a", Raw("2.5")],
        ["b", Raw("100")],
        ["c", Raw("0")],
        ["d", Raw("100000000000000000000")],
        ["e", Raw("1e+21")],
        ["f", Raw("0.000001")],
        ["g", Raw("1e-7")],
        ["h", Raw("1.2345678901234568e+29")],
        ["i", Raw("5e-324")],
        ["j", Raw("1.7976931348623157e+308")],
        ["k", Raw("[-0.0015,9007199254740992]")],
    ]])])

# --- user and escapes: non-ASCII user, \u escapes decoded before hashing -------

vector("14-user-and-escapes", r"""{"client_id":"%s","client_generation":9007199254740991,
 "batch_id":"%s","schema":{"version":9007199254740991,"hash":"%s"},"mutations":[
 {"mutation_id":"%s","table":"t\u00e2che","pk":{"field":"cl\u00e9","value":"k\u0001\"\\"},
  "authored_schema":{"version":1,"hash":"%s"},"operation":"insert","client_version":"%s",
  "columns":{"\u00e9t\u00e9":"\ud83d\ude00","tab key":"x"}}]}
""" % (CLIENT, BATCH, H8, M1, H7, CV),
    [nm(M1, "t\u00e2che", ["cl\u00e9", "k\u0001\"\\"], ["1", H7], "insert", [0], CV,
        [1, [["tab key", "x"], ["\u00e9t\u00e9", "\U0001f600"]]])],
    pre=prefix(user="Zo\u00eb \U0001f642", gen="9007199254740991",
               schema=["9007199254740991", H8]),
    user="Zo\u00eb \U0001f642")

# --- row checksums (doc/contract.md#row-checksum) ------------------------------------------

ROWS = [
    ("01-todo",
     {"schema": {"version": 8, "hash": H8}, "table": "todo",
      "pk": {"field": "id", "value": T1},
      "server_row": {"title": "Buy milk", "done": False, "note": None, "owner": "alice"}},
     ["row-v1", S8, "todo", ["id", T1],
      [["done", False], ["note", None], ["owner", "alice"], ["title", "Buy milk"]]]),
    ("02-utf8-order",
     {"schema": {"version": 7, "hash": H7}, "table": "item",
      "pk": {"field": "id", "value": "-42"},
      "server_row": {"\U0001f600": 1, "\ufb33": 2, "qty": 3, "weight": Raw("1.5"),
                     "tags": "{\"a\":1}", "blob": "AAE=", "due": "2026-01-31"}},
     ["row-v1", S7, "item", ["id", "-42"],
      [["blob", "AAE="], ["due", "2026-01-31"], ["qty", 3], ["tags", "{\"a\":1}"],
       ["weight", Raw("1.5")], ["\ufb33", 2], ["\U0001f600", 1]]]),
    ("03-pk-only",
     {"schema": {"version": 8, "hash": H8}, "table": "counter",
      "pk": {"field": "n", "value": 7}, "server_row": {}},
     ["row-v1", S8, "counter", ["n", 7], []]),
]

# --- negative vectors: one per 400 rule, with the exact message -----------------

BASE_MUT = {"mutation_id": M1, "table": "todo", "pk": {"field": "id", "value": T1},
            "authored_schema": {"version": 8, "hash": H8}, "operation": "insert",
            "client_version": CV, "columns": {"title": "x"}}


def env(**kw):
    d = {"client_id": CLIENT, "client_generation": 12, "batch_id": BATCH,
         "schema": {"version": 8, "hash": H8}, "mutations": [dict(BASE_MUT)]}
    for k, v in kw.items():
        if v is DROP:
            del d[k]
        else:
            d[k] = v
    return d


DROP = object()


def mut(**kw):
    d = dict(BASE_MUT)
    for k, v in kw.items():
        if v is DROP:
            del d[k]
        else:
            d[k] = v
    return d


def one(**kw):
    return env(mutations=[mut(**kw)])


UPD = dict(operation="update", base_version="v1")
DEL = dict(operation="delete", base_version="v1", columns=DROP)

DUP_ENVELOPE = '{"client_id":"%s","client_id":"%s"}' % (CLIENT, CLIENT)
DUP_COLUMN = ('{%s,"mutations":[{"mutation_id":"%s","table":"todo",'
              '"pk":{"field":"id","value":"%s"},"authored_schema":{"version":8,"hash":"%s"},'
              '"operation":"insert","client_version":"%s","columns":{"title":"x","title":"y"}}]}'
              % (ENVELOPE, M1, T1, H8, CV))
assert DUP_COLUMN.count('"title"') == 2

INVALID = [
    # The reader's messages (src/core/json_parse.c) pass through unchanged.
    ("empty-body", "", "invalid JSON at byte 0: value expected"),
    ("malformed-json", '{"client_id" "x"}', "invalid JSON at byte 13: ':' expected"),
    ("trailing-data", jcs(env()) + "{}",
     "invalid JSON at byte %d: unexpected data after the value" % len(jcs(env()))),
    ("duplicate-envelope-member", DUP_ENVELOPE,
     "invalid JSON at byte %d: duplicate member name" % DUP_ENVELOPE.index('"client_id"', 2)),
    ("duplicate-column", DUP_COLUMN,
     "invalid JSON at byte %d: duplicate member name" % DUP_COLUMN.rindex('"title"')),
    ("root-not-object", '["not","an","object"]', "(root): must be an object"),
    ("unknown-envelope-member", env(foo=1), '(root): unknown member "foo"'),
    ("client-id-missing", env(client_id=DROP), "client_id: required"),
    ("client-id-null", env(client_id=None), "client_id: not a canonical UUID"),
    ("client-id-uppercase", env(client_id=CLIENT.upper()), "client_id: not a canonical UUID"),
    ("client-id-nil", env(client_id="00000000-0000-0000-0000-000000000000"),
     "client_id: not a canonical UUID"),
    ("client-generation-missing", env(client_generation=DROP), "client_generation: required"),
    ("client-generation-zero", env(client_generation=0),
     "client_generation: not a positive integer literal at most 9007199254740991"),
    ("client-generation-fraction", '{"client_id":"%s","client_generation":1.0,"batch_id":"%s",'
     '"schema":{"version":8,"hash":"%s"},"mutations":[%s]}' % (CLIENT, BATCH, H8, jcs(BASE_MUT)),
     "client_generation: not a positive integer literal at most 9007199254740991"),
    ("client-generation-too-big", env(client_generation=Raw("9007199254740992")),
     "client_generation: not a positive integer literal at most 9007199254740991"),
    ("client-generation-string", env(client_generation="12"),
     "client_generation: not a positive integer literal at most 9007199254740991"),
    ("batch-id-missing", env(batch_id=DROP), "batch_id: required"),
    ("batch-id-invalid", env(batch_id="5d1c9f3e8a7b4c6db2e10f9a8b7c6d5e"),
     "batch_id: not a canonical UUID"),
    ("schema-missing", env(schema=DROP), "schema: required"),
    ("schema-invalid", env(schema={"version": 8}), "schema: not a schema reference"),
    ("schema-extra-member", env(schema={"version": 8, "hash": H8, "x": 1}),
     "schema: not a schema reference"),
    ("atomic-false", env(atomic=False), "atomic: only true is allowed"),
    ("atomic-null", env(atomic=None), "atomic: only true is allowed"),
    ("atomic-string", env(atomic="true"), "atomic: only true is allowed"),
    ("mutations-missing", env(mutations=DROP), "mutations: required"),
    ("mutations-not-array", env(mutations={}), "mutations: must be an array"),
    ("mutations-empty", env(mutations=[]), "mutations: must hold 1 to 1000 mutations"),
    ("mutation-not-object", env(mutations=[mut(), []]), "mutations[1]: must be an object"),
    ("mutation-unknown-member", one(upsert=True), 'mutations[0]: unknown member "upsert"'),
    ("mutation-id-missing", one(mutation_id=DROP), "mutations[0].mutation_id: required"),
    ("mutation-id-invalid", one(mutation_id="not-a-uuid"),
     "mutations[0].mutation_id: not a canonical UUID"),
    ("mutation-id-duplicate", env(mutations=[mut(), mut(mutation_id=M2), mut()]),
     "mutations[2].mutation_id: duplicates mutations[0]"),
    ("table-missing", one(table=DROP), "mutations[0].table: required"),
    ("table-empty", one(table=""),
     "mutations[0].table: must be 1 to 63 octets of UTF-8 without control characters"),
    ("table-too-long", one(table="t" * 64),
     "mutations[0].table: must be 1 to 63 octets of UTF-8 without control characters"),
    ("table-control", one(table="to\u0085do"),
     "mutations[0].table: must be 1 to 63 octets of UTF-8 without control characters"),
    ("table-number", one(table=1),
     "mutations[0].table: must be 1 to 63 octets of UTF-8 without control characters"),
    ("pk-missing", one(pk=DROP), "mutations[0].pk: required"),
    ("pk-not-object", one(pk=["id", T1]),
     'mutations[0].pk: must be an object {"field","value"}'),
    ("pk-unknown-member", one(pk={"field": "id", "value": T1, "type": "uuid"}),
     'mutations[0].pk: unknown member "type"'),
    ("pk-field-missing", one(pk={"value": T1}), "mutations[0].pk.field: required"),
    ("pk-field-empty", one(pk={"field": "", "value": T1}),
     "mutations[0].pk.field: must be 1 to 63 octets of UTF-8 without control characters"),
    ("pk-value-missing", one(pk={"field": "id"}), "mutations[0].pk.value: required"),
    ("pk-value-null", one(pk={"field": "id", "value": None}),
     "mutations[0].pk.value: must be a string or a number"),
    ("pk-value-object", one(pk={"field": "id", "value": {"id": T1}}),
     "mutations[0].pk.value: must be a string or a number"),
    ("pk-value-bool", one(pk={"field": "id", "value": True}),
     "mutations[0].pk.value: must be a string or a number"),
    ("pk-value-overflow", one(pk={"field": "id", "value": Raw("1e400")}),
     "mutations[0].pk.value: number out of range"),
    ("authored-schema-missing", one(authored_schema=DROP),
     "mutations[0].authored_schema: required"),
    ("authored-schema-invalid", one(authored_schema={"version": 0, "hash": H8}),
     "mutations[0].authored_schema: not a schema reference"),
    ("operation-missing", one(operation=DROP), "mutations[0].operation: required"),
    ("operation-upsert", one(operation="upsert"),
     'mutations[0].operation: unsupported operation "upsert" '
     "(push accepts only insert, update, delete)"),
    ("operation-create", one(operation="create"),
     'mutations[0].operation: unsupported operation "create" '
     "(push accepts only insert, update, delete)"),
    ("operation-uppercase", one(operation="INSERT"),
     'mutations[0].operation: unsupported operation "INSERT" '
     "(push accepts only insert, update, delete)"),
    ("operation-not-string", one(operation=1),
     'mutations[0].operation: must be "insert", "update" or "delete"'),
    ("client-version-missing", one(client_version=DROP), "mutations[0].client_version: required"),
    ("client-version-offset", one(client_version="2026-07-18T09:15:00+02:00"),
     "mutations[0].client_version: not an RFC 3339 UTC timestamp"),
    ("insert-base-version", one(base_version="v1"),
     "mutations[0].base_version: must be absent for insert"),
    ("insert-base-version-null", one(base_version=None),
     "mutations[0].base_version: must be absent for insert"),
    ("insert-columns-missing", one(columns=DROP), "mutations[0].columns: required for insert"),
    ("insert-columns-null", one(columns=None), "mutations[0].columns: must be an object"),
    ("insert-columns-array", one(columns=[["title", "x"]]),
     "mutations[0].columns: must be an object"),
    ("update-base-version-missing", one(operation="update"),
     "mutations[0].base_version: required for update"),
    ("update-base-version-null", one(operation="update", base_version=None),
     "mutations[0].base_version: must be a non-empty opaque version "
     "(printable ASCII, at most 128 octets)"),
    ("update-base-version-empty", one(operation="update", base_version=""),
     "mutations[0].base_version: must be a non-empty opaque version "
     "(printable ASCII, at most 128 octets)"),
    ("update-base-version-too-long", one(operation="update", base_version="v" * 129),
     "mutations[0].base_version: must be a non-empty opaque version "
     "(printable ASCII, at most 128 octets)"),
    ("update-base-version-non-ascii", one(operation="update", base_version="v\u00e9"),
     "mutations[0].base_version: must be a non-empty opaque version "
     "(printable ASCII, at most 128 octets)"),
    ("update-columns-missing", one(columns=DROP, **UPD),
     "mutations[0].columns: required for update"),
    ("update-columns-empty", one(columns={}, **UPD),
     "mutations[0].columns: must not be empty for update"),
    ("update-columns-null", one(columns=None, **UPD), "mutations[0].columns: must be an object"),
    ("delete-base-version-missing", one(operation="delete", columns=DROP),
     "mutations[0].base_version: required for delete"),
    ("delete-columns-present", one(operation="delete", base_version="v1", columns={}),
     "mutations[0].columns: must be absent for delete"),
    ("delete-columns-null", one(operation="delete", base_version="v1", columns=None),
     "mutations[0].columns: must be absent for delete"),
    ("columns-too-many", one(columns={"c%03d" % k: k for k in range(257)}),
     "mutations[0].columns: more than 256 columns"),
    ("column-field-id-control", one(columns={"ti\ntle": "x"}),
     'mutations[0].columns["ti\\u000atle"]: field id must be 1 to 63 octets of UTF-8 '
     "without control characters"),
    ("column-field-id-too-long", one(columns={"\u00e9" * 32: "x"}),
     'mutations[0].columns["' + "\u00e9" * 24 + '..."]: field id must be 1 to 63 octets '
     "of UTF-8 without control characters"),
    ("column-number-overflow", one(columns={"w": [1, Raw("-1e400")]}),
     'mutations[0].columns["w"]: number out of range'),
    ("atomic-repeated-row", env(atomic=True, mutations=[mut(), mut(mutation_id=M2, **DEL)]),
     "mutations[1]: atomic request repeats the table and pk of mutations[0]"),
    ("atomic-repeated-numeric-pk", env(atomic=True, mutations=[
        mut(table="counter", pk={"field": "n", "value": 42}),
        mut(mutation_id=M2, table="counter", pk={"field": "n", "value": Raw("4.2e1")})]),
     "mutations[1]: atomic request repeats the table and pk of mutations[0]"),
]


def write(path, data):
    with open(path, "wb") as f:
        f.write(data.encode("utf-8"))


def main():
    for name, body, muts, pre, user in VECTORS:
        # the request must be valid JSON whose structure the vector describes
        json.loads(body)
        write(os.path.join(HERE, name + ".json"), body)
        if user != "alice":
            write(os.path.join(HERE, name + ".user"), user)
        elif os.path.exists(os.path.join(HERE, name + ".user")):
            os.unlink(os.path.join(HERE, name + ".user"))
        norm = [jcs(m) for m in muts]
        batch = "[" + ",".join(jcs(x) for x in pre) + ",[" + ",".join(norm) + "]]"
        scopes = [jcs(["mutation-scope-v1", user, CLIENT, Raw(n)]) for n in norm]
        out = {"batch_fingerprint": sha(BATCH_DOMAIN, batch),
               "mutations": [{"mutation_id": m[1], "fingerprint": sha(MUTATION_DOMAIN, s)}
                             for m, s in zip(muts, scopes)]}
        write(os.path.join(HERE, name + ".expected"), jcs(out))
        write(os.path.join(HERE, name + ".preimages"), "".join(p + "\n" for p in [batch] + scopes))
    for name, inp, arr in ROWS:
        write(os.path.join(HERE, "rows", name + ".json"), jcs(inp) + "\n")
        pre = jcs(arr)
        write(os.path.join(HERE, "rows", name + ".preimage"), pre)
        write(os.path.join(HERE, "rows", name + ".expected"), sha(ROW_DOMAIN, pre))
    n = 0
    for name, body, message in INVALID:
        if body is None:
            continue
        n += 1
        # a string is the exact body; a structure is written as JCS and a newline
        text = body if isinstance(body, str) else jcs(body) + "\n"
        write(os.path.join(HERE, "invalid", "%02d-%s.json" % (n, name)), text)
        write(os.path.join(HERE, "invalid", "%02d-%s.message" % (n, name)), message)
    return 0


if __name__ == "__main__":
    sys.exit(main())
