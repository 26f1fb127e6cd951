# SPDX-License-Identifier: BSD-2-Clause
"""The end-to-end stack for tests: a throwaway PostgreSQL (from tests/integration/with-pg),
synchro installed with contrib/example, synchro-fcgi on a UNIX socket, and real nginx or
Apache (mod_proxy_fcgi) with HTTP basic authentication for alice and bob. Real HTTP only.

Least privilege as in production (doc/operations.md, "Login roles"): synchroctl runs as the
cluster's superuser (admin.conf), the responders as APP_ROLE (LOGIN, member of synchro_app
only), synchro-walsync as WALSYNC_ROLE (LOGIN REPLICATION, member of synchro_walsync only);
the example's app-table grants are contrib/example/grants.sql. Stack(pgbouncer=True) puts
PgBouncer (transaction pooling) between the responders and PostgreSQL.

Every file a server's own user must read or execute (configuration, htpasswd, sockets, logs,
the responder binary that Apache's mod_fcgid spawns) lives in the stack's directory, which
that user can reach even when the build tree is readable by root only. Every process a stack
starts is stopped on every exit path: a failed start, a failed case, an exception, SIGTERM.

Logs: Stack.stop() scans the stack's logs for crashes and sanitizer reports, Runner.finish()
scans PostgreSQL's server log too (every suite ends with that case); assert_no_markers()
checks that values sent in requests reach no log (doc/contract.md#no-payloads-in-logs forbids
payloads in logs)."""

import atexit
import base64
import hashlib
import http.client
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

SRC = os.environ.get("SYNCHRO_SRCDIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "../..")))
BUILD = os.environ.get("SYNCHRO_BUILDDIR", SRC)
SYNCHROCTL = os.path.join(BUILD, "src/ctl/synchroctl")
FCGI = os.path.join(BUILD, "src/fcgi/synchro-fcgi")
WALSYNC = os.path.join(BUILD, "src/walsync/synchro-walsync")
USERS = {"alice": "alice", "bob": "bob", "carol": "carol"}
# The login roles of contrib/example/roles.sql (the quickstart creates the same ones).
APP_ROLE = "synchro_fcgi"
WALSYNC_ROLE = "synchro_ws"
EXAMPLE = os.path.join(SRC, "contrib/example")
# PgBouncer's admin console user (no database role of that name is needed).
PGB_ADMIN = "pgbouncer_admin"
PGBOUNCER = shutil.which("pgbouncer") or ("/usr/sbin/pgbouncer" if os.path.exists("/usr/sbin/pgbouncer") else None)


def _service_user():
    """The user the web servers' workers run as when the tests run as root (Debian's)."""
    for name in ("www-data", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    return None


def stack_missing(name, *exes):
    """Why the stack of a suite cannot run here (printed as a skip), or None: every program of
    exes (default synchro-fcgi and synchro-walsync) built, and nginx installed."""
    exes = exes or (FCGI, WALSYNC)
    for exe in exes:
        if not os.access(exe, os.X_OK):
            return "%s: %s not built; skipping" % (name, exe)
    if not (shutil.which("nginx") or os.path.exists("/usr/sbin/nginx")):
        return "%s: nginx not installed; skipping" % name
    return None


def _tmpbase():
    """Where stack directories go: as root /tmp itself (as with-pg does), since a private
    TMPDIR may not be reachable for the servers' users; else the usual temporary directory."""
    return "/tmp" if os.getuid() == 0 else tempfile.gettempdir()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def doc_commands(target, doc="doc/performance.md"):
    """The lines of a document's ```sh blocks that run `make TARGET`, as printed."""
    out, on = [], False
    with open(os.path.join(SRC, doc)) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("```"):
                on = line == "```sh"
                continue
            words = line.split()
            if on and "make" in words and words[words.index("make") + 1:words.index("make") + 2] == [target]:
                out.append(line)
    return out


def wait_for(pred, timeout=20.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def canonical(obj):
    """JCS for the values tests build (strings, ints, bools, null, nested; no floats)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


# Stacks started and not yet stopped: a failing case shows their logs and keeps their directory.
_live = []
# Problems the log scans found (Stack.stop() adds its stack's; Runner.finish() reports them).
_log_problems = []


def _stop_live():
    for st in list(_live):
        try:
            st.stop()
        except Exception as e:  # noqa: BLE001 - stop the others whatever happens
            print("stopping the stack in %s: %r" % (st.dir, e), file=sys.stderr, flush=True)


def _on_signal(signum, _frame):
    # SystemExit unwinds through every finally and then atexit: the servers stop.
    raise SystemExit(128 + signum)


atexit.register(_stop_live)
for _sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(_sig, _on_signal)


# --- log scans ---------------------------------------------------------------------------------
# A crash anywhere: PostgreSQL's postmaster ("server process (PID n) was terminated by signal 11",
# also for walsenders and workers), a PANIC, an assertion (TRAP), a sanitizer report, a
# responder the synchro-fcgi master saw die of a fatal signal. A kill -9 a test sends on
# purpose is declared first with expect_backend_kill(pid).
CRASH_RES = [re.compile(p) for p in (
    r"\(PID (\d+)\) was terminated by (signal|exception)",
    r"terminated by signal",
    r"\bPANIC:",
    r"\bTRAP: ",
    r"ERROR: AddressSanitizer|AddressSanitizer:|LeakSanitizer|ThreadSanitizer|MemorySanitizer",
    r"runtime error:",
    r"killed by signal (4|6|7|8|11)\b",
)]
_expected_kills = set()


def expect_backend_kill(pid):
    """Declares that a test kills the PostgreSQL backend `pid` on purpose (kill -9 or another
    signal): the postmaster's "server process (PID pid) was terminated by signal" line is
    then not a crash. Call it before the kill."""
    _expected_kills.add(int(pid))


def crash_lines(text):
    """The lines of `text` that show a crash not declared with expect_backend_kill()."""
    bad = []
    for line in text.splitlines():
        m = CRASH_RES[0].search(line)
        if m and int(m.group(1)) in _expected_kills and m.group(2) == "signal":
            continue
        if any(r.search(line) for r in CRASH_RES):
            bad.append(line)
    return bad


def pg_log():
    """PostgreSQL's server log of the cluster (with-pg's $SYNCHRO_PG_LOG), "" when none."""
    path = os.environ.get("SYNCHRO_PG_LOG")
    if not path:
        return ""
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def assert_no_crash_in_pg_log():
    bad = crash_lines(pg_log())
    if bad:
        raise AssertionError("PostgreSQL's server log shows %d crash line(s):\n  %s"
                             % (len(bad), "\n  ".join(bad[:20])))


class Stack:
    def __init__(self, server="nginx", workers=2, extra_conf="", fcgi_conf=None, pgbouncer=False,
                 pgbouncer_pool_size=2, rate_limit=True):
        self.server = server
        # rate_limit=False: nginx without the site's limit_req (1000 requests/s per address,
        # burst 2000), for the load test and the benchmarks: every request they send comes from
        # 127.0.0.1, and a fast machine goes past that rate; they measure the responders' own
        # admission, not the web server's limit (test_server tests the limit)
        self.rate_limit = rate_limit
        self.workers = workers
        self.extra_conf = extra_conf
        # [fcgi] options of this stack over the defaults of write_conf (e.g. {"max_inflight_per_client": 0})
        self.fcgi_conf = dict(fcgi_conf or {})
        # pgbouncer=True: the responders reach PostgreSQL through PgBouncer (pool_mode =
        # transaction, start_pgbouncer); synchroctl, walsync and the tests' psql do not.
        self.pgbouncer = pgbouncer
        self.pgbouncer_pool_size = pgbouncer_pool_size
        self.pgb_dir = None
        self.pgb_port = None
        self.dir = tempfile.mkdtemp(prefix="synchro-e2e-", dir=_tmpbase())
        os.chmod(self.dir, 0o755)
        self.sock = os.path.join(self.dir, "synchro.sock")
        self.port = free_port()
        self.procs = {}
        # synchro.conf: the responders' (APP_ROLE); admin.conf: synchroctl's (the superuser).
        self.conf = os.path.join(self.dir, "synchro.conf")
        self.admin_conf = os.path.join(self.dir, "admin.conf")
        self.keep = False

    # --- lifecycle ---------------------------------------------------------
    def start(self):
        """Installs synchro and the example, starts the servers and waits for /healthz. A
        failed start stops whatever it had started (and keeps the directory) before raising."""
        self.keep = False
        _live.append(self)
        try:
            self.write_admin_conf()
            self.ctl("init")
            self.psql_file(os.path.join(EXAMPLE, "roles.sql"))
            self.psql_file(os.path.join(EXAMPLE, "schema.sql"))
            self.ctl("schema", "publish", os.path.join(EXAMPLE, "manifest.json"))
            if self.pgbouncer:
                self.start_pgbouncer(self.pgbouncer_pool_size)
            self.write_conf()
            self.start_fcgi()
            if self.server == "nginx":
                self.start_nginx()
            else:
                self.start_apache()
            wait_for(lambda: self.try_status("GET", "/healthz") == 200, what="healthz through " + self.server)
        except BaseException:
            self.keep = True
            self.show_logs()
            self.stop()
            raise
        return self

    def grant_app_tables(self):
        """The example's app-table grants: contrib/example/grants.sql, the one place they are."""
        self.psql_file(os.path.join(EXAMPLE, "grants.sql"))

    # Web servers first (no new requests), then the responders, walsync, PgBouncer.
    STOP_ORDER = ("nginx", "apache", "fcgi")

    def stop(self):
        """Stops every process of the stack (also after a failure, whatever state it is in),
        scans the stack's logs for crashes (Runner.finish() reports them) and removes the
        directory unless a failure asked to keep it."""
        try:
            names = [n for n in self.STOP_ORDER if n in self.procs]
            names += [n for n in self.procs if n not in names and n != "pgbouncer"]
            names += [n for n in ("pgbouncer",) if n in self.procs]
            for name in names:
                self.stop_proc(name)
        finally:
            if self in _live:
                _live.remove(self)
        bad = crash_lines(self.server_logs())
        if bad:
            self.keep = True
            _log_problems.append("stack %s (%s): %s" % (self.dir, self.server, "\n    ".join(bad[:20])))
        if self.keep:
            print("kept for inspection after a failure: %s" % self.dir, flush=True)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def log_names(self):
        """The names (NAME.log in the stack's directory) of every log its servers wrote."""
        try:
            return sorted(f[:-4] for f in os.listdir(self.dir) if f.endswith(".log"))
        except OSError:
            return []

    def server_logs(self):
        """Every log of the stack's servers (responders, walsync, web server, PgBouncer), joined."""
        return "".join("==> %s.log\n%s\n" % (n, self.log(n)) for n in self.log_names())

    def assert_no_markers(self, markers):
        """Asserts that no marker string (values a test sent in a request body: accepted and
        refused pushes, 400s) appears in any log: PostgreSQL's server log and every log of
        this stack. Call it while the stack runs; markers should be unique (uuid4 hex)."""
        markers = [m for m in markers if m]
        assert markers, "no marker to look for"
        found = []
        for name, text in [("postgresql", pg_log())] + [(n, self.log(n)) for n in self.log_names()]:
            for m in markers:
                if m in text:
                    line = next(l for l in text.splitlines() if m in l)
                    found.append("%s: %r in %r" % (name, m, line[:300]))
        if found:
            raise AssertionError("request values reached the logs:\n  " + "\n  ".join(found))

    def show_logs(self, lines=40):
        """The tails of the responders' and the web server's logs (they never hold bodies)."""
        for name in ("fcgi", "nginx-error", "apache-error", "pgbouncer", "walsync"):
            path = os.path.join(self.dir, name + ".log")
            if not os.path.exists(path):
                continue
            with open(path, "rb") as f:
                tail = f.read().decode("utf-8", "replace").splitlines()[-lines:]
            print("---- %s (last %d lines)" % (path, len(tail)), flush=True)
            for line in tail:
                print("  | " + line, flush=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def write_conf(self, **fcgi):
        opts = {"listen": self.sock, "listen_mode": "0666", "workers": str(self.workers),
                "lock_timeout_ms": "5000", "retry_after_s": "1"}
        opts.update({k: str(v) for k, v in self.fcgi_conf.items()})
        opts.update({k: str(v) for k, v in fcgi.items()})
        with open(self.conf, "w") as f:
            f.write("[database]\nconninfo = %s\n" % self.conninfo(APP_ROLE, via_pgbouncer=self.pgbouncer))
            if self.pgbouncer:
                f.write("pooler = transaction\n")
            f.write("\n[fcgi]\n")
            for k, v in opts.items():
                f.write("%s = %s\n" % (k, v))
            f.write(self.extra_conf)
        os.chmod(self.conf, 0o644)

    def conninfo(self, user, via_pgbouncer=False):
        """The stack's database as `user`, directly or through the stack's PgBouncer."""
        if via_pgbouncer:
            host, port = self.pgb_dir, self.pgb_port
        else:
            host, port = os.environ["PGHOST"], os.environ["PGPORT"]
        return "host=%s port=%s dbname=%s user=%s" % (host, port, os.environ["PGDATABASE"], user)

    def write_admin_conf(self):
        """synchroctl's configuration: the cluster's superuser (init, publish, admin work)."""
        with open(self.admin_conf, "w") as f:
            f.write("[database]\nconninfo = %s\n" % self.conninfo(os.environ.get("PGUSER", "postgres")))

    def ctl(self, *args, check=True):
        """synchroctl as the administrator (admin.conf). After a successful `schema publish`
        the example's grants are applied again: they have the last word (grant_app_tables)."""
        r = subprocess.run([SYNCHROCTL, "-c", self.admin_conf] + list(args), capture_output=True, text=True)
        if check and r.returncode != 0:
            raise AssertionError("synchroctl %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr))
        if r.returncode == 0 and list(args[:2]) == ["schema", "publish"]:
            self.grant_app_tables()
        return r

    def psql(self, sql, check=True):
        r = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql],
                           capture_output=True, text=True)
        if check and r.returncode != 0:
            raise AssertionError("psql: %s" % r.stderr)
        return r.stdout.strip()

    def psql_file(self, path):
        r = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", path], capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError("psql -f %s: %s" % (path, r.stderr))

    def spawn(self, name, argv, **kw):
        log = open(os.path.join(self.dir, name + ".log"), "ab")
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, **kw)
        return self.procs[name]

    def stop_proc(self, name, sig=signal.SIGTERM, timeout=20):
        """Stops a process the stack spawned (sig, then SIGKILL after timeout seconds) and
        then whatever is left of its process group (a web server's or a master's children)."""
        p = self.procs.pop(name, None)
        if p is None:
            return
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                self._killpg(p.pid)
                p.wait()
        # spawn() made each process the leader of a session and group of its own.
        self._killpg(p.pid)

    @staticmethod
    def _killpg(pgid):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def log(self, name):
        try:
            with open(os.path.join(self.dir, name + ".log"), "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def start_fcgi(self):
        self.spawn("fcgi", [FCGI, "-c", self.conf])
        wait_for(lambda: os.path.exists(self.sock), what="synchro-fcgi socket")

    def restart_fcgi(self, **fcgi):
        """Stops synchro-fcgi (SIGTERM: drain), rewrites the configuration with these [fcgi]
        options over the stack's own, starts it again and waits until /healthz answers 200
        through the web server. restart_fcgi() alone restores the stack's configuration."""
        self.stop_proc("fcgi")
        self.write_conf(**fcgi)
        if os.path.exists(self.sock):
            os.unlink(self.sock)
        self.start_fcgi()
        wait_for(lambda: self.try_status("GET", "/healthz") == 200, what="healthz after restarting synchro-fcgi")

    def start_walsync(self, name="walsync", wait=True, **walsync):
        """Starts synchro-walsync (process name `name`) with the stack's configuration plus a
        [walsync] section: writer_id = name and these options (e.g. lease_s=5). With wait,
        returns once it holds the writer lease and streams from the slot (a standby:
        wait=False): a write committed while the slot is still being created is never
        decoded, so tests must not write before."""
        opts = {"writer_id": name}
        opts.update({k: str(v) for k, v in walsync.items()})
        conf = os.path.join(self.dir, name + ".conf")
        with open(conf, "w") as f:
            # Always straight to PostgreSQL: PgBouncer does not carry replication connections.
            f.write("[database]\nconninfo = %s\n" % self.conninfo(WALSYNC_ROLE))
            f.write("\n[walsync]\n")
            for k, v in opts.items():
                f.write("%s = %s\n" % (k, v))
        proc = self.spawn(name, [WALSYNC, "-c", conf])
        if wait:
            def holds():
                if proc.poll() is not None:
                    raise AssertionError("synchro-walsync %s exited (%s): %s" % (name, proc.returncode, self.log(name)))
                return self.psql("SELECT writer_id FROM synchro.writer_lease"
                                 " WHERE lease_until > now()", check=False) == name and \
                    self.psql("SELECT EXISTS (SELECT 1 FROM pg_replication_slots s"
                              " JOIN pg_stat_replication r ON r.pid = s.active_pid"
                              " WHERE s.slot_name = '%s' AND r.state <> 'startup')" % opts.get("slot", "synchro"),
                              check=False) == "t"
            wait_for(holds, what="synchro-walsync %s to hold the writer lease and stream" % name)
        return proc

    # --- the PostgreSQL of tests/integration/with-pg -------------------------
    @staticmethod
    def pg_ctl(*args):
        run = os.environ.get("SYNCHRO_PG_RUN", "").split()
        argv = run + [os.path.join(os.environ["PG_BINDIR"], "pg_ctl"), "-D", os.environ["SYNCHRO_PG_DATA"]] + list(args)
        r = subprocess.run(argv, capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError("pg_ctl %s: exit %d: %s%s" % (" ".join(args), r.returncode, r.stdout, r.stderr))

    def pg_stop(self, mode="fast"):
        """Stops the cluster (fast: open sessions are terminated, their transactions roll back)."""
        self.pg_ctl("-m", mode, "-w", "-t", "60", "stop")

    def pg_start(self):
        """Starts the cluster again on its port and socket directory (as with-pg did)."""
        self.pg_ctl("-l", os.environ["SYNCHRO_PG_LOG"], "-w", "-t", "60", "-o", "-p %s" % os.environ["PGPORT"], "start")

    def htpasswd(self):
        path = os.path.join(self.dir, "htpasswd")
        with open(path, "w") as f:
            for user, pw in USERS.items():
                digest = base64.b64encode(hashlib.sha1(pw.encode()).digest()).decode()
                f.write("%s:{SHA}%s\n" % (user, digest))
        os.chmod(path, 0o644)
        return path

    # nginx's worker_connections in the harness (2 workers); a subclass may raise it
    nginx_worker_connections = 512

    def nginx_site(self):
        """The shipped site (conf/nginx/synchro.conf) with this stack's port, socket and
        password file; a subclass edits what it returns (a limit, a timeout), the rest as shipped."""
        site = open(os.path.join(SRC, "conf/nginx/synchro.conf")).read()
        if not self.rate_limit:
            site = "\n".join(line for line in site.split("\n") if "limit_req" not in line)
        return (site.replace("listen 127.0.0.1:8080;", "listen 127.0.0.1:%d;" % self.port)
                    .replace("/run/synchro/synchro.sock", self.sock)
                    .replace("/etc/nginx/synchro.htpasswd", self.htpasswd()))

    def write_nginx_conf(self, d, site, error_log, workers):
        """Writes d/nginx.conf: nginx in the foreground with its pid and temporary files in
        d, the site inside its http block; returns its path."""
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write("""daemon off;
worker_processes %(workers)d;
pid %(d)s/nginx.pid;
error_log %(log)s warn;
%(user)s
events { worker_connections %(wc)d; }
http {
    access_log off;
    client_body_temp_path %(d)s/nginx-body;
    fastcgi_temp_path %(d)s/nginx-fastcgi;
    proxy_temp_path %(d)s/nginx-proxy;
    uwsgi_temp_path %(d)s/nginx-uwsgi;
    scgi_temp_path %(d)s/nginx-scgi;
%(site)s
}
""" % {"d": d, "log": error_log, "site": site, "workers": workers, "user": self.nginx_user(),
       "wc": self.nginx_worker_connections})
        return conf

    def start_nginx(self):
        d = self.dir
        log = os.path.join(d, "nginx-error.log")
        conf = self.write_nginx_conf(d, self.nginx_site(), log, 2)
        self.spawn("nginx", ["nginx", "-p", d, "-c", conf, "-e", log])

    @staticmethod
    def nginx_user():
        """As root, nginx's workers run as the service user (as Debian's nginx does), so
        that the stack shows what that user can reach; otherwise as the current user."""
        if os.getuid() != 0:
            return ""
        return "user %s;" % (_service_user() or "root")

    def install_binary(self, path):
        """A copy of the program `path` in the stack's directory, executable by everyone: a
        server that runs it as its own user (mod_fcgid as www-data) may not reach the build."""
        bindir = os.path.join(self.dir, "bin")
        os.makedirs(bindir, exist_ok=True)
        os.chmod(bindir, 0o755)
        copy = os.path.join(bindir, os.path.basename(path))
        shutil.copy2(path, copy)
        os.chmod(copy, 0o755)
        return copy

    # --- PgBouncer (pool_mode = transaction) between the responders and PostgreSQL -------
    def start_pgbouncer(self, pool_size=2):
        """Starts PgBouncer in the stack's directory: UNIX socket only, pool_mode =
        transaction, auth_type = trust with a userlist naming APP_ROLE, `pool_size` server
        connections for the stack's database (fewer than the responders, so they share
        them). As root it runs as the cluster's owner (PgBouncer refuses root). Returns once
        APP_ROLE can run a query through it; Stack.stop() stops it."""
        if PGBOUNCER is None:
            raise AssertionError("pgbouncer is not installed")
        d = os.path.join(self.dir, "pgbouncer")
        os.mkdir(d)
        os.chmod(d, 0o755)
        self.pgb_dir, self.pgb_port = d, free_port()
        db = os.environ["PGDATABASE"]
        with open(os.path.join(d, "userlist.txt"), "w") as f:
            f.write('"%s" ""\n"%s" ""\n' % (APP_ROLE, PGB_ADMIN))
        ini = os.path.join(d, "pgbouncer.ini")
        with open(ini, "w") as f:
            f.write("""[databases]
%(db)s = host=%(pghost)s port=%(pgport)s dbname=%(db)s pool_size=%(pool)d

[pgbouncer]
listen_addr =
listen_port = %(port)d
unix_socket_dir = %(d)s
unix_socket_mode = 0777
auth_type = trust
auth_file = %(d)s/userlist.txt
admin_users = %(admin)s
pool_mode = transaction
max_client_conn = 200
default_pool_size = %(pool)d
min_pool_size = 0
reserve_pool_size = 0
server_lifetime = 3600
server_idle_timeout = 600
log_connections = 0
log_disconnections = 0
""" % {"db": db, "pghost": os.environ["PGHOST"], "pgport": os.environ["PGPORT"], "pool": pool_size,
                "port": self.pgb_port, "d": d, "admin": PGB_ADMIN})
        run = []
        if os.getuid() == 0:
            owner = "postgres" if self._user_exists("postgres") else "nobody"
            shutil.chown(d, owner)
            for f in ("userlist.txt", "pgbouncer.ini"):
                os.chmod(os.path.join(d, f), 0o644)
            run = ["runuser", "-u", owner, "--"]
        # In the foreground; without a logfile it logs to stderr, into pgbouncer.log.
        p = self.spawn("pgbouncer", run + [PGBOUNCER, ini])

        def ready():
            if p.poll() is not None:
                raise AssertionError("pgbouncer exited (%s): %s" % (p.returncode, self.log("pgbouncer")))
            r = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-h", d, "-p", str(self.pgb_port), "-U", APP_ROLE,
                                "-d", db, "-c", "SELECT 1"], capture_output=True, text=True)
            return r.returncode == 0 and r.stdout.strip() == "1"
        wait_for(ready, what="pgbouncer to pass a query")
        return p

    def pgbouncer_show(self, what):
        """SHOW `what` on PgBouncer's admin console (e.g. "pools", "stats"): a list of dicts,
        every value a string. The console's user is PGB_ADMIN (trust, over the socket)."""
        r = subprocess.run(["psql", "-X", "-q", "-A", "-F", "\t", "-P", "footer=off", "-h", self.pgb_dir,
                            "-p", str(self.pgb_port), "-U", PGB_ADMIN, "-d", "pgbouncer", "-c", "SHOW " + what],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError("pgbouncer SHOW %s: %s" % (what, r.stderr))
        lines = r.stdout.splitlines()
        head = lines[0].split("\t")
        return [dict(zip(head, line.split("\t"))) for line in lines[1:]]

    @staticmethod
    def _user_exists(name):
        try:
            pwd.getpwnam(name)
            return True
        except KeyError:
            return False

    # modules a subclass loads besides those start_apache() always loads (e.g. ["reqtimeout"])
    apache_extra_modules = []

    def apache_snippet(self):
        """The shipped mod_proxy_fcgi snippet (conf/apache/synchro-proxy-fcgi.conf) with this
        stack's socket and password file; a subclass edits what it returns (a timeout)."""
        snippet = open(os.path.join(SRC, "conf/apache/synchro-proxy-fcgi.conf")).read()
        return (snippet.replace("/run/synchro/synchro.sock", self.sock)
                       .replace("/etc/apache2/synchro.htpasswd", self.htpasswd()))

    def start_apache(self):
        d = self.dir
        conf = os.path.join(d, "apache.conf")
        mods = ["mpm_event", "authn_core", "authn_file", "authz_core", "authz_user", "authz_host",
                "auth_basic", "proxy", "proxy_fcgi", "headers", "setenvif", "mime", "env", "rewrite"]
        mods += self.apache_extra_modules
        loads = "\n".join("LoadModule %s_module /usr/lib/apache2/modules/mod_%s.so" % (m, m) for m in mods)
        snippet = self.apache_snippet()
        user = "User www-data\nGroup www-data\n" if os.getuid() == 0 else ""
        with open(conf, "w") as f:
            f.write("""ServerRoot %(d)s
ServerName 127.0.0.1
Listen 127.0.0.1:%(port)d
PidFile %(d)s/apache.pid
ErrorLog %(d)s/apache-error.log
LogLevel warn
DefaultRuntimeDir %(d)s
TypesConfig /dev/null
Mutex file:%(d)s default
%(user)s
%(loads)s
<VirtualHost 127.0.0.1:%(port)d>
%(snippet)s
</VirtualHost>
""" % {"d": d, "port": self.port, "loads": loads, "snippet": snippet, "user": user})
        self.spawn("apache", ["apache2", "-f", conf, "-DFOREGROUND"])

    # --- HTTP ----------------------------------------------------------------
    def request(self, method, path, body=None, user="alice", protocol="3", headers=None, raw=None, timeout=30,
                address="127.0.0.1"):
        h = {}
        if user is not None:
            h["Authorization"] = "Basic " + base64.b64encode(("%s:%s" % (user, USERS.get(user, "wrong"))).encode()).decode()
        if protocol is not None:
            h["Synchro-Protocol"] = protocol
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        if data is not None:
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        c = http.client.HTTPConnection(address, self.port, timeout=timeout)
        try:
            c.request(method, path, body=data, headers=h)
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()

    def try_status(self, method, path):
        try:
            return self.request(method, path, user=None, protocol=None, timeout=2)[0]
        except OSError:
            return None

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body, **kw)

    def connect(self, user="alice", client_id=None):
        client_id = client_id or str(uuid.uuid4())
        status, _, body = self.post("/v3/connect", {"client_id": client_id}, user=user)
        assert status == 200, (status, body)
        return json.loads(body)


def scan_logs():
    """Fails on a crash in PostgreSQL's server log or in the log of any stack stopped so far."""
    assert_no_crash_in_pg_log()
    if _log_problems:
        raise AssertionError("crashes in the servers' logs:\n  " + "\n  ".join(_log_problems))


class Runner:
    """A tiny test runner: named cases, each failure reported, exit status for automake."""

    def __init__(self):
        self.failures = []
        self.ran = 0

    def case(self, name, fn, *args):
        self.ran += 1
        t0 = time.monotonic()
        try:
            fn(*args)
            print("PASS %s (%.2fs)" % (name, time.monotonic() - t0), flush=True)
        except Exception as e:  # noqa: BLE001 - every failure is reported
            import traceback
            self.failures.append(name)
            print("FAIL %s: %r" % (name, e), flush=True)
            traceback.print_exc()
            for st in list(_live):
                st.keep = True
                st.show_logs()

    def finish(self):
        """Ends the suite: the log scan as a case of its own (no PostgreSQL backend crash
        in the server log, none of the problems the stacks' scans found), then the summary
        and the exit status. Call it after every stack has stopped."""
        _stop_live()
        ran = self.ran
        self.case("logs: no PostgreSQL backend crash, no crash or sanitizer report in any server's log",
                  scan_logs)
        print("%d cases, %d failed" % (self.ran, len(self.failures)))
        for f in self.failures:
            print("  failed: " + f)
        return 1 if self.failures or ran == 0 else 0
