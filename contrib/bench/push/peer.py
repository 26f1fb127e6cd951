# SPDX-License-Identifier: BSD-2-Clause
"""contrib/bench/push/peer.py: the push benchmark's peers and its write limit (bench.py runs them):
  - the docs peer: contrib/bench/push/peer/server.js, the upload endpoint a team writes itself
    as the sync engines' docs show it (express + node-postgres, one awaited statement per
    mutation);
  - the fast peer: contrib/bench/push/peer-fast/server.js, the same endpoint written for speed
    (fastify + postgres.js, one multi-row statement per operation kind per batch, pipelined);
  each with node:cluster running as many processes as synchro-fcgi has responders, behind the
  bench's own nginx (/peer/push, /peer-fast/push: the same basic authentication, proxied over
  keep-alive connections), on the same PostgreSQL in its own tables (peer/schema.sql). A peer's
  packages come from its package-lock.json by `npm ci` into BUILD/contrib/bench/push/<its
  directory> once; later runs reuse them and download nothing; what both peers share,
  peer_common.cjs, goes beside those directories;
  - the limit "trivial + same writes": contrib/bench/push/trivial_fcgi running LIMIT_SQL, the
    push's rows into public.item (through its version fence, as plain SQL's) and one ledger row,
    as one statement: one round trip per request, the body parsed by PostgreSQL."""

import filecmp
import json
import os
import shutil
import subprocess
import urllib.request

import synchro_e2e as e2e  # bench.py puts tests/e2e on the path

SRC = os.environ.get("SYNCHRO_SRCDIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "../../..")))
PEER_FILES = ("package.json", "package-lock.json", "server.js")
COMMON = "peer_common.cjs"  # both peers' require('../peer_common.cjs')
PEER_REPLAY_HEADER = "Idempotent-Replayed"
PEER_ROLE = "bench_peer"
LIMIT_APP = "bench-limit"
# Each peer: its directory under contrib/bench/push, URL path, stack process name,
# application_name, tables, the packages it names, and how the bench's lines call it.
PEERS = {
    "docs": {"dir": "peer", "path": "/peer/push", "proc": "peer", "app": "bench-peer",
             "item": "bench_peer.item", "batches": "bench_peer.batches", "packages": ("express", "pg"),
             "label": "the docs peer, express + pg"},
    "fast": {"dir": "peer-fast", "path": "/peer-fast/push", "proc": "fast", "app": "bench-peer-fast",
             "item": "bench_peer.fast_item", "batches": "bench_peer.fast_batches",
             "packages": ("fastify", "postgres"), "label": "the fast peer, fastify + postgres.js"},
}
PEER_SRC = os.path.join(SRC, "contrib/bench/push/peer")
PEER_PATH = PEERS["docs"]["path"]
PEER_APP = PEERS["docs"]["app"]

# $1 the request body, $2 the answer (trivial_fcgi with TRIVIAL_BODY_PARAM=1); $1 is text, so
# that a body PostgreSQL cannot read is never a bind parameter its log would quote.
LIMIT_SQL = """WITH b AS (SELECT $1::text::jsonb AS j),
rows AS (
	INSERT INTO public.item (id, label, qty, price, weight, due, seen_at, tags, blob, ref)
	SELECT (m->'pk'->>'value')::bigint, c->>'label', (c->>'qty')::integer, (c->>'price')::numeric,
	       (c->>'weight')::double precision, (c->>'due')::date, (c->>'seen_at')::timestamptz,
	       (c->>'tags')::jsonb, decode(c->>'blob', 'base64'), (c->>'ref')::uuid
	FROM b, jsonb_array_elements(b.j->'mutations') AS m, LATERAL (SELECT m->'columns' AS c) AS x)
INSERT INTO bench_peer.limit_batches (batch_id, response) SELECT (j->>'batch_id')::uuid, $2 FROM b"""


def install(build, which="docs"):
    """The peer's directory under BUILD with its node_modules from the lockfile, or (None, why)."""
    if os.environ.get("BENCH_PEER", "1") == "0":
        return None, "BENCH_PEER=0"
    missing = [t for t in ("node", "npm") if shutil.which(t) is None]
    if missing:
        return None, "%s not found (Debian: apt-get install nodejs npm)" % " and ".join(missing)
    name = PEERS[which]["dir"]
    src = os.path.join(SRC, "contrib/bench/push", name)
    d = os.path.abspath(os.path.join(build, "contrib/bench/push", name))
    os.makedirs(d, exist_ok=True)
    if os.path.realpath(d) != os.path.realpath(src):
        for s, dst in [(os.path.join(src, f), os.path.join(d, f)) for f in PEER_FILES] + \
                [(os.path.join(src, "..", COMMON), os.path.join(d, "..", COMMON))]:
            if not os.path.exists(dst) or not filecmp.cmp(s, dst, shallow=False):
                shutil.copyfile(s, dst)
    stamp = os.path.join(d, "node_modules", ".synchro-installed-lock")
    lock = os.path.join(d, "package-lock.json")
    if not (os.path.exists(stamp) and filecmp.cmp(lock, stamp, shallow=False)):
        r = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--prefer-offline",
                            "--cache", os.path.join(d, ".npm-cache")], cwd=d, capture_output=True, text=True)
        if r.returncode != 0:
            return None, "npm ci failed in %s: %s" % (d, (r.stderr or r.stdout).strip()[-400:])
        shutil.copyfile(lock, stamp)
    return d, None


def edit_site(site, ports):
    """The bench's nginx site with each peer's path proxied to it (ports: which -> port): the
    same authentication as /v3/, HTTP/1.1 keep-alive connections to the upstream, the user in
    X-Remote-User."""
    auth = [line for line in site.split("\n") if "auth_basic_user_file" in line][0].strip()
    assert "    location / {" in site
    upstreams = ""
    for which, port in sorted(ports.items()):
        upstreams += "upstream bench_%s {\n    server 127.0.0.1:%d;\n    keepalive 64;\n}\n" % (which, port)
        location = """    location = %s {
        auth_basic "synchro";
        %s
        proxy_pass http://bench_%s;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header X-Remote-User $remote_user;
        proxy_read_timeout 60s;
    }

    location / {""" % (PEERS[which]["path"], auth, which)
        site = site.replace("    location / {", location, 1)
    return upstreams + site


def create_tables(stack):
    """The peer's and the limit's tables and the peer's role (peer/schema.sql), once per stack."""
    stack.psql_file(os.path.join(PEER_SRC, "schema.sql"))


def versions(peer_dir, which="docs"):
    """'express 5.3.0, pg 8.23.1': what npm ci installed."""
    out = []
    for name in PEERS[which]["packages"]:
        try:
            with open(os.path.join(peer_dir, "node_modules", name, "package.json")) as f:
                out.append("%s %s" % (name, json.load(f)["version"]))
        except (OSError, ValueError, KeyError):
            out.append("%s ?" % name)
    return ", ".join(out)


def start(stack, peer_dir, workers, port, which="docs"):
    """The peer's cluster (create_tables first), until it answers /healthz."""
    proc = PEERS[which]["proc"]
    env = dict(os.environ, PEER_PORT=str(port), PEER_WORKERS=str(workers), PGUSER=PEER_ROLE,
               NODE_ENV="production")
    stack.spawn(proc, ["node", os.path.join(peer_dir, "server.js")], env=env, cwd=peer_dir)

    def up():
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=2) as r:
                return r.status == 200
        except OSError:
            if stack.procs[proc].poll() is not None:
                raise SystemExit("the %s peer ended: %s" % (which, stack.log(proc)[-800:]))
            return False
    e2e.wait_for(up, timeout=60, what="the %s peer's /healthz" % which)
