# SPDX-License-Identifier: BSD-2-Clause
"""The chaos suite's topologies: the deployments doc/scaling.md and doc/operations.md tell
operators to build, each a ChaosStack (chaos_stack.py: PostgreSQL, two synchro-walsync,
synchro-fcgi, a web server, the server-side faults) with the faults its own parts make
natural (chaos_faults.py draws them with the others and counts each kind):

  nginx      nginx (conf/nginx/synchro.conf) before the responders.
  apache     Apache httpd with mod_proxy_fcgi (conf/apache/synchro-proxy-fcgi.conf) in
             nginx's place; its proxy timeout cut to the suite's 3 s as nginx's is.
  pgbouncer  the responders reach PostgreSQL through PgBouncer, pool_mode = transaction, 2
             server connections for the 4 responders ([database] pooler = transaction);
             walsync and synchroctl connect directly (doc/operations.md "PgBouncer").
             Faults: pgbouncer_restart (SIGTERM: every client and server connection cut at
             once, then started again), pgbouncer_server_terminate (pg_terminate_backend of
             every server connection the pool holds).
  replica    pull and the rebuild pages after the first read a streaming standby made
             with pg_basebackup -R ([database] pull_conninfo, doc/operations.md "Read
             replicas"). Faults: replica_restart (the standby stopped in immediate mode,
             then started), replica_replay_pause (replay held for 1-6 s, then resumed). The
             checker also reads the standby: once it replayed, its changelog and row fences
             are the primary's; and, as in every topology, no pull answered a cursor older
             than the one the device sent (fault_proxy.py records each).
  failover   a synchronous streaming standby (synchronous_standby_names names it) and every
             process (responders, both walsyncs, synchroctl) on a multi-host conninfo with
             target_session_attrs=read-write (doc/operations.md "Failover"). Fault, once at
             a random moment: primary_failover (the primary stopped in immediate mode, the
             standby promoted; the processes reconnect to it, walsync finds no slot and
             resolves the stream break, the devices rebuild; the run, its other faults
             and the checker go on against the new primary).
  hosts      two responder hosts in network namespaces, each its own nginx and responders,
             reaching the one PostgreSQL over TCP; the fault proxy balances between them;
             admission caps low enough to bind, sampled across both (chaos_hosts.py).
             Faults: host_partition, host_responders_kill.

`contrib/chaos --topology NAME` runs one; `--topology seed` picks one from the seed (pick()),
as the CI-size run (test_chaos.pgt) does with a seed that changes every day."""

import http.client
import os
import pwd
import shutil
import signal
import subprocess
import threading
import time

import synchro_e2e as e2e
from chaos_clock import ClockSteps
from chaos_disk import DISK_FAULTS, DiskFull
from chaos_stack import ChaosStack, FASTCGI_READ_TIMEOUT_S, WALSYNC_NAMES
from failover_stack import FailoverStack, SyncStandby
from pg_standby import Standby, _bin

TOPOLOGIES = ("nginx", "apache", "pgbouncer", "replica", "failover", "hosts")


def pick(seed):
    """The topology of a run whose seed is `seed`: consecutive seeds (the CI run's days) go
    through every topology in turn."""
    return TOPOLOGIES[seed % len(TOPOLOGIES)]


def missing(name):
    """Why the topology `name` cannot run here (a program it needs is not installed, ...),
    else None."""
    need = {"nginx": ["nginx"], "apache": ["apache2"], "pgbouncer": ["nginx", "pgbouncer"],
            "replica": ["nginx", "pg_basebackup"], "failover": ["nginx", "pg_basebackup"],
            "hosts": ["nginx"]}[name]
    pgbin = os.environ.get("PG_BINDIR", "/usr/lib/postgresql/15/bin")
    for prog in need:
        if not (shutil.which(prog) or os.path.exists("/usr/sbin/" + prog) or os.path.exists(os.path.join(pgbin, prog))):
            return "%s not installed" % prog
    if name == "hosts":
        import chaos_hosts
        return chaos_hosts.missing()
    return None


def make_stack(name, workers):
    if name == "hosts":
        from chaos_hosts import HostsTopology
        return HostsTopology(workers)
    return {"nginx": Topology, "apache": ApacheTopology, "pgbouncer": PgBouncerTopology,
            "replica": ReplicaTopology, "failover": FailoverTopology}[name](workers)


class Topology(DiskFull, ClockSteps, ChaosStack):
    """nginx, the responders, PostgreSQL, two walsyncs; the faults every topology has:

    walsync_slot_dropped  the leading walsync's walsender terminated and its replication slot
                          dropped: walsync creates it again and resolves the stream break
                          (doc/operations.md "Slot continuity": every cursor expires, devices
                          rebuild). The transactions committed in the gap never reach the
                          changelog: right after the break the fault reads their xids from the
                          WAL (pg_walinspect, between the break's materialized and slot
                          positions), and the checker excuses exactly the accepted mutations of
                          those transactions from "one transition" and their rows from the
                          chain rule; the devices' replicas must still converge.
    clock_step            the responders' or a walsync's host clock stepped (chaos_clock.py).
    db_disk_full          the disk of the database's tables full for 1-6 s, then space back
                          (DiskFull, chaos_disk.py).
    live_noise            with live updates (nginx's nchan): a notification for a user that
                          no commit made: a cursor long passed, one past anything written, or
                          a malformed body; devices pull or ignore it, and converge.
    nginx_reload          with live updates: nginx reloaded (SIGHUP) under the subscriptions.
    (Every other fault hits live updates too: a walsync leader killed between its changelog
    write and its notifications, the fault proxy dropping or resetting a subscription.)"""
    name = "nginx"
    # (kind, weight): drawn with chaos_faults.WEIGHTS, injected by topology_fault
    faults = (("walsync_slot_dropped", 1), ("live_noise", 2), ("nginx_reload", 1)) + \
        ClockSteps.clock_faults + DISK_FAULTS
    SLOT = "synchro"

    def __init__(self, workers, **kw):
        super().__init__(workers=workers, **kw)
        self.gap_xids = set()      # xids (32 bits) of transactions committed in a stream break's gap
        self.breaks_seen = 0
        self.break_threads = []
        self.clock_init(WALSYNC_NAMES[0])

    def start_all(self):
        super().start_all()
        self.clock_start()

    def stop(self):
        try:
            self.clock_stop()
        finally:
            super().stop()

    # each accepted mutation's transaction id (test instrumentation, as the changelog mirror)
    XID_SQL = """
ALTER SYSTEM SET wal_keep_size = '1GB';
SELECT pg_reload_conf();
CREATE EXTENSION IF NOT EXISTS pg_walinspect;
CREATE TABLE public.chaos_mutation_xid (mutation_id uuid NOT NULL, xid bigint NOT NULL);
CREATE FUNCTION public.chaos_mutation_xid() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog AS $$
BEGIN
	INSERT INTO public.chaos_mutation_xid VALUES (NEW.mutation_id, txid_current() % 4294967296);
	RETURN NULL;
END $$;
CREATE TRIGGER chaos_mutation_xid AFTER INSERT ON synchro.mutations
	FOR EACH ROW EXECUTE FUNCTION public.chaos_mutation_xid();
"""

    def install_mirror(self):
        super().install_mirror()
        self.run_sql_file(self.XID_SQL)

    def topology_fault(self, kind, rng):
        if kind == "walsync_slot_dropped":
            return self.drop_slot()
        if kind == "clock_step":
            return self.clock_step(rng)
        if kind == "db_disk_full":
            return self.disk_fault(rng)
        if kind == "live_noise":
            return self.live_noise(rng)
        if kind == "nginx_reload":
            return self.nginx_reload(rng)
        raise AssertionError("%s: no fault %s" % (self.name, kind))

    NOISE = (b'{"cursor":"c1.0000000000000000.00000000"}', b'{"cursor":"c1.ffffffffffffffff.7fffffff"}',
             b'{"cursor":"c1.zz"}', b"<script>alert(1)</script>")

    def live_noise(self, rng):
        if not self.live_updates():
            return False
        user, body = rng.choice(sorted(e2e.USERS)), rng.choice(self.NOISE)
        c = http.client.HTTPConnection(self.publisher_address(rng), self.port, timeout=5)
        try:
            c.request("POST", "/v3/live-publish/" + user, body=body)
            ok = c.getresponse().status in (201, 202)
        except OSError:
            ok = False
        finally:
            c.close()
        if ok:
            self.note("a notification no commit made, for %s" % user)
        return ok

    # where live_noise publishes, and the nginx processes nginx_reload picks one of (names
    # in self.procs); the hosts topology has one of each per host
    def publisher_address(self, rng):
        return "127.0.0.1"

    def nginx_names(self):
        return ["nginx"]

    def nginx_reload(self, rng):
        names = self.nginx_names()
        name = rng.choice(names) if len(names) > 1 else names[0]
        p = self.procs.get(name)
        if not self.live_updates() or p is None or p.poll() is not None:
            return False
        os.kill(p.pid, signal.SIGHUP)
        self.note("%s reloaded" % name)
        return True

    def drop_slot(self):
        with self.lock:
            if self.break_threads and self.break_threads[-1].is_alive():
                return False  # the last break is not resolved yet
            before = int(self.q("SELECT count(*) FROM synchro.stream_breaks", check=False) or -1)
            if before < 0:
                return False
            for _ in range(20):
                r = self.q("SELECT pg_terminate_backend(active_pid, 5000) FROM pg_replication_slots"
                           " WHERE slot_name = '%s' AND active_pid IS NOT NULL" % self.SLOT, check=False)
                r = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-c",
                                    "SELECT pg_drop_replication_slot('%s')" % self.SLOT], capture_output=True, text=True)
                if r.returncode == 0:
                    break
                if "does not exist" in r.stderr:
                    return False
                time.sleep(0.05)
            else:
                return False
            self.note("replication slot %s dropped" % self.SLOT)
        t = threading.Thread(target=self._read_gap, args=(before,), daemon=True)
        t.start()
        self.break_threads.append(t)
        return True

    def _read_gap(self, before):
        """Once walsync recorded the break: the xids committed between its materialized and
        slot positions, from the WAL (still there: read right away)."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            row = self.q("SELECT materialized_lsn, slot_lsn FROM synchro.stream_breaks ORDER BY break_id"
                         " OFFSET %d LIMIT 1" % before, check=False)
            if row:
                lo, hi = row.split("|")
                try:
                    xids = self.q("SELECT string_agg(DISTINCT xid::text, ' ') FROM pg_get_wal_records_info("
                                  "'%s', '%s') WHERE resource_manager = 'Transaction'"
                                  " AND record_type LIKE 'COMMIT%%'" % (lo, hi))
                except AssertionError:
                    # The server restarted or failed over between the two reads: again.
                    time.sleep(0.5)
                    continue
                with self.lock:
                    self.gap_xids.update(int(x) for x in xids.split())
                    self.breaks_seen += 1
                    self.note("stream break resolved: %s..%s, %d transaction(s) in the gap"
                              % (lo, hi, len(xids.split())))
                return
            time.sleep(0.5)
        self.note("no stream break recorded after the slot was dropped")

    def continue_all(self):
        super().continue_all()
        for t in self.break_threads:
            t.join(130)

    def stream_gap_mutations(self):
        """The mutation ids whose transactions committed in a stream break's gap."""
        if not self.gap_xids:
            return set()
        rows = self.q("SELECT mutation_id, xid FROM public.chaos_mutation_xid").split("\n")
        return {m for m, x in (r.split("|") for r in rows if r) if int(x) in self.gap_xids}

    def check_topology(self, checker):
        """After the final sync and the checker's own rules: the topology's (violations
        through checker.v)."""
        self.check_clock(checker)
        self.check_live(checker)

    # The web servers whose subscribers must hear notifications: (the fault proxy's upstream
    # index, name, why it must). With live updates, the one nginx hears walsync's publishes.
    def live_hosts(self):
        return [(0, "nginx", "walsync publishes to it")] if self.live_updates() else []

    def check_live(self, checker):
        """Every web server that should deliver notifications and answered live subscriptions
        (only a device that keeps one open, the browser's, subscribes; each writes all along,
        and its own commits notify its user's channel) answered some with one (200): else its
        publisher refused walsync, or its subscribers never heard."""
        live = checker.proxy.live_by_upstream
        for index, label, why in self.live_hosts():
            answered = sum(n for (i, status), n in live.items() if i == index and status != 0)
            if answered and live.get((index, 200), 0) == 0:
                checker.v("live: %s answered no live subscription with a notification (200) of %d, though %s"
                          % (label, answered, why))

    def heal_nginx(self):
        """Before the final sync: restarts an nginx whose workers keep dying (the hosts
        topology; see HostsTopology.heal_nginx). Here one nginx has no such case."""
        return 0

    def topology_figures(self):
        fig = {"stream_breaks": self.breaks_seen, "stream_break_gap_transactions": len(self.gap_xids)}
        fig.update(self.clock_figures())
        fig.update(self.disk_figures())
        return fig


class ApacheTopology(Topology):
    name = "apache"

    def __init__(self, workers):
        super().__init__(workers, server="apache")

    def apache_snippet(self):
        # mod_proxy_fcgi's timeout as nginx's fastcgi_read_timeout in the suite: a stopped
        # responder is given up on
        snippet = super().apache_snippet()
        target = 'fcgi://localhost/v3/"'
        assert target in snippet, "conf/apache/synchro-proxy-fcgi.conf changed its ProxyPass"
        return snippet.replace(target, target + " timeout=%d" % FASTCGI_READ_TIMEOUT_S)


class PgBouncerTopology(Topology):
    name = "pgbouncer"
    faults = Topology.faults + (("pgbouncer_restart", 1), ("pgbouncer_server_terminate", 2))

    def __init__(self, workers):
        super().__init__(workers, pgbouncer=True, pgbouncer_pool_size=2)
        self.server_connections_terminated = 0

    def topology_fault(self, kind, rng):
        if kind == "pgbouncer_restart":
            return self.restart_pgbouncer()
        if kind == "pgbouncer_server_terminate":
            return self.terminate_server_connections()
        return super().topology_fault(kind, rng)

    def restart_pgbouncer(self):
        """SIGTERM (PgBouncer's immediate shutdown: every connection cut), then the same
        configuration started again (as its owner when the suite runs as root)."""
        with self.lock:
            self.stop_proc("pgbouncer")
            self.note("PgBouncer stopped (SIGTERM)")
            run = []
            if os.getuid() == 0:
                run = ["runuser", "-u", pwd.getpwuid(os.stat(self.pgb_dir).st_uid).pw_name, "--"]
            p = self.spawn("pgbouncer", run + [e2e.PGBOUNCER, os.path.join(self.pgb_dir, "pgbouncer.ini")])

            def ready():
                if p.poll() is not None:
                    raise AssertionError("pgbouncer exited (%s): %s" % (p.returncode, self.log("pgbouncer")[-2000:]))
                r = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-h", self.pgb_dir, "-p", str(self.pgb_port),
                                    "-U", e2e.APP_ROLE, "-d", os.environ["PGDATABASE"], "-c", "SELECT 1"],
                                   capture_output=True, text=True)
                return r.returncode == 0 and r.stdout.strip() == "1"
            e2e.wait_for(ready, timeout=60, what="pgbouncer to pass a query after its restart")
            self.note("PgBouncer started")
        return True

    def terminate_server_connections(self):
        """pg_terminate_backend of the pool's server connections (every session of the
        responders' role: in this topology only PgBouncer opens them)."""
        with self.lock:
            n = self.q("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename = '%s'"
                       " AND backend_type = 'client backend' AND pid <> pg_backend_pid()" % e2e.APP_ROLE,
                       check=False)
            if not n or not n.isdigit() or int(n) == 0:
                return False
            self.server_connections_terminated += int(n)
            self.note("pg_terminate_backend of %s PgBouncer server connection(s)" % n)
        return True

    def topology_figures(self):
        fig = super().topology_figures()
        fig["pgbouncer_server_connections_terminated"] = self.server_connections_terminated
        return fig


class ReplicaTopology(Topology):
    name = "replica"
    reads_behind = True  # pulls read the standby: the checker places them by their cursors
    faults = Topology.faults + (("replica_restart", 1), ("replica_replay_pause", 2))
    REPLAY_PAUSE_S = (1.0, 6.0)

    def __init__(self, workers):
        super().__init__(workers)
        self.standby = None
        self.paused = False
        self.threads = []

    def start_all(self):
        # before synchro is installed: the standby replays the install as everything after
        self.standby = Standby("chaos-standby").create(self.standby_disk_args()).start()
        super().start_all()

    def write_conf(self, **fcgi):
        super().write_conf(**fcgi)
        with open(self.conf) as f:
            text = f.read()
        text = text.replace("[database]\n", "[database]\npull_conninfo = %s\n"
                            % self.standby.conninfo(e2e.APP_ROLE), 1)
        with open(self.conf, "w") as f:
            f.write(text)
        os.chmod(self.conf, 0o644)

    def stop(self):
        try:
            super().stop()
        finally:
            if self.standby is not None and not self.keep:
                self.standby.destroy()
            elif self.standby is not None:
                self.standby.stop("immediate")

    def topology_fault(self, kind, rng):
        if kind == "replica_restart":
            with self.lock:
                if self.paused:
                    return False
                self.standby.stop("immediate")
                self.note("standby stopped (immediate)")
                time.sleep(rng.uniform(0.0, 2.0))
                self.standby.start()
                self.note("standby started")
            return True
        if kind == "replica_replay_pause":
            with self.lock:
                if self.paused or self.standby.psql("SELECT pg_wal_replay_pause()", check=False) is None:
                    return False
                self.paused = True
                self.note("standby replay paused")
            t = threading.Thread(target=self._resume_after, args=(rng.uniform(*self.REPLAY_PAUSE_S),), daemon=True)
            t.start()
            self.threads.append(t)
            return True
        return super().topology_fault(kind, rng)

    def _resume_after(self, seconds):
        time.sleep(seconds)
        with self.lock:
            self._resume()

    def _resume(self):
        if self.paused:
            self.standby.psql("SELECT pg_wal_replay_resume()", check=False)
            self.paused = False
            self.note("standby replay resumed")

    def continue_all(self):
        super().continue_all()
        with self.lock:
            if self.standby is not None and self.standby.running:
                self._resume()

    # what the checker compares, on either server: (entries, last position, digest)
    HISTORY_SQL = ("SELECT count(*), COALESCE(max(commit_lsn)::text, ''), COALESCE(md5(string_agg("
                   "concat_ws('/', commit_lsn, ordinal, table_id, pk, version, state, mutation_id), ',' "
                   "ORDER BY commit_lsn, ordinal)), '') FROM synchro.changelog")
    FENCES_SQL = ("SELECT count(*), COALESCE(md5(string_agg(concat_ws('/', table_id, pk, state, version, mutation_id),"
                  " ',' ORDER BY table_id, pk)), '') FROM synchro.row_fences")

    def check_topology(self, checker):
        """The standby, once it replayed the primary's flush position: still in recovery, its
        changelog and row fences the primary's."""
        super().check_topology(checker)
        try:
            self.standby.wait_replayed(timeout=120)
        except AssertionError as e:
            checker.v("replica: %s" % e)
            return
        if self.standby.psql("SELECT pg_is_in_recovery()") != "t":
            checker.v("replica: the standby left recovery")
        for what, sql in (("changelog", self.HISTORY_SQL), ("row fences", self.FENCES_SQL)):
            primary, replica = self.q(sql), self.standby.psql(sql)
            if primary != replica:
                checker.v("replica: its %s (%s) is not the primary's (%s) after replay" % (what, replica, primary))

    def topology_figures(self):
        reads = self.standby.psql("SELECT COALESCE(sum(seq_scan + COALESCE(idx_scan, 0)), 0)"
                                  " FROM pg_stat_user_tables WHERE schemaname = 'synchro'", check=False)
        fig = super().topology_figures()
        fig["replica_reads"] = int(reads) if reads and reads.isdigit() else None
        return fig


class FailoverTopology(Topology, FailoverStack):
    """The primary, a synchronous standby, every conninfo naming both (FailoverStack);
    primary_failover once (weight 0: never drawn, only the one run of each kind)."""
    name = "failover"
    faults = Topology.faults + (("primary_failover", 0),)

    def __init__(self, workers):
        super().__init__(workers, standby=None)
        self.failovers = 0

    def start_all(self):
        self.standby = SyncStandby("chaos-failover").create(self.standby_disk_args()).start()
        super().start_all()
        self.standby.make_synchronous()

    def stop(self):
        try:
            super().stop()
        finally:
            if self.failed_over:
                self.restore_environment()
            if self.standby is not None:
                if self.keep:
                    self.standby.stop("immediate")
                else:
                    self.standby.destroy()

    def topology_fault(self, kind, rng):
        if kind != "primary_failover":
            return super().topology_fault(kind, rng)
        with self.lock:
            if self.failed_over:
                return True
            before = int(self.q("SELECT count(*) FROM synchro.stream_breaks", check=False) or 0)
            self.note("primary stop -m immediate")
            self.fail_over("stop")
            self.failovers += 1
            self.note("standby promoted: the new primary")
        t = threading.Thread(target=self._read_gap, args=(before,), daemon=True)
        t.start()
        self.break_threads.append(t)
        return True

    def restart_postgres(self):
        """postgres_restart_immediate of whichever server is the primary."""
        if not self.failed_over:
            return super().restart_postgres()
        with self.lock:
            self.note("new primary stop -m immediate")
            self.standby.stop("immediate")
            time.sleep(0.5)
            sb = self.standby
            sb._as_owner([_bin("pg_ctl"), "-D", sb.data, "-l", sb.log, "-w", "-t", "60", "start"])
            sb.running = True
            self.note("new primary started")
        return True

    def topology_figures(self):
        fig = super().topology_figures()
        fig["failovers"] = self.failovers
        return fig
