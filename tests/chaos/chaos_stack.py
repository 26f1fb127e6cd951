# SPDX-License-Identifier: BSD-2-Clause
"""The chaos suite's stack: the e2e harness's Stack (tests/e2e/synchro_e2e.py: the throwaway
PostgreSQL of with-pg, synchro installed with contrib/example, synchro-fcgi behind real
nginx) with two synchro-walsync instances (a leader and a standby on short leases), nginx's
fastcgi_read_timeout cut to a few seconds (so that a SIGSTOPped responder outlives it), and
the server-side faults: a responder killed with SIGKILL or stopped with SIGSTOP past that
timeout, PostgreSQL restarted in immediate mode, the leading walsync killed, a schema publish,
a generation expiry (another connect of a device's client id) and a client retirement.

A supervisor thread restarts a walsync that exited (as systemd's Restart= would); every
process is one this stack started, and Stack.stop() stops them all."""

import json
import os
import signal
import subprocess
import threading
import time

import synchro_e2e as e2e
from live_stack import live_site, load_nchan, nchan_missing, publisher_url

FASTCGI_READ_TIMEOUT_S = 3
WALSYNC_OPTS = {"lease_s": 4, "renew_s": 1, "stale_heartbeat_s": 3}
WALSYNC_NAMES = ("ws-a", "ws-b")


class ChaosStack(e2e.Stack):
    # server, pgbouncer, ...: e2e.Stack's; the topologies (chaos_topology.py) choose them
    def __init__(self, workers=4, server="nginx", **kw):
        super().__init__(server=server, workers=workers,
                         fcgi_conf={"pull_wait_ms": 8000, "lock_timeout_ms": 3000, "max_inflight_per_client": 0},
                         **kw)
        self.events = []              # (monotonic time, text), for the report
        self.walsync_exits = []
        self.stopped_pids = set()     # responders under SIGSTOP (always continued)
        self.walsync_stopped = None   # a walsync under SIGSTOP (always continued)
        self.takeovers = 0            # the lease passed from one walsync to the other
        self._leader = None
        self._restart_at = {}         # a killed leader comes back once the standby took over
        self._sup_stop = threading.Event()
        self._sup = None
        self.lock = threading.RLock()  # one server-side fault at a time
        self.t0 = time.monotonic()

    def note(self, text):
        self.events.append((time.monotonic() - self.t0, text))

    # nginx with a short fastcgi_read_timeout: a stopped responder is given up on (503)
    def nginx_site(self):
        site = super().nginx_site()
        assert "fastcgi_read_timeout 60s;" in site, "conf/nginx/synchro.conf changed its timeout"
        site = site.replace("fastcgi_read_timeout 60s;", "fastcgi_read_timeout %ds;" % FASTCGI_READ_TIMEOUT_S)
        return live_site(site) if self.live_updates() else site

    # live updates (conf/nginx/synchro-live.conf, walsync's notify_url) on every topology with
    # nginx, where its nchan module is installed (the hosts topology also needs redis-server)
    def live_updates(self):
        return self.server == "nginx" and not nchan_missing("chaos")

    def write_nginx_conf(self, d, site, error_log, workers):
        conf = super().write_nginx_conf(d, site, error_log, workers)
        if self.live_updates():
            load_nchan(conf)
        return conf

    def walsync_opts(self):
        opts = dict(WALSYNC_OPTS)
        if self.live_updates():
            opts["notify_url"] = self.notify_url()
        return opts

    def notify_url(self):
        return publisher_url(self.port)

    def start_all(self):
        self.start()
        self.start_walsync(WALSYNC_NAMES[0], wait=True, **self.walsync_opts())
        self.start_walsync(WALSYNC_NAMES[1], wait=False, **self.walsync_opts())
        self._sup = threading.Thread(target=self._supervise, name="walsync-supervisor", daemon=True)
        self._sup.start()

    def _supervise(self):
        while not self._sup_stop.wait(0.5):
            with self.lock:
                lead = self.leader()
                if lead and lead != self._leader:
                    if self._leader:
                        self.takeovers += 1
                        self.note("walsync %s took the lease over" % lead)
                    self._leader = lead
                for name in WALSYNC_NAMES:
                    p = self.procs.get(name)
                    if p is not None and p.poll() is not None:
                        if p.returncode != -signal.SIGKILL:
                            self.walsync_exits.append("%s exited with %s" % (name, p.returncode))
                        self.procs.pop(name)
                        self._restart_at[name] = time.monotonic()
                    if name not in self.procs and (time.monotonic() >= self._restart_at.get(name, 0) or
                                                   (lead and lead != name)):
                        self.start_walsync(name, wait=False, **self.walsync_opts())
                        self.note("walsync %s restarted" % name)

    def stop(self):
        self._sup_stop.set()
        if self._sup is not None:
            self._sup.join(10)
        self.continue_all()
        super().stop()

    # the fault proxy's upstreams (the web server; a topology of several hosts names each)
    # and its connect timeout (None: the proxy's default)
    upstream_connect_timeout = None

    def upstreams(self):
        return [("127.0.0.1", self.port)]

    # --- queries --------------------------------------------------------------------------
    def q(self, sql, check=True):
        return self.psql(sql, check=check)

    def leader(self):
        return self.q("SELECT writer_id FROM synchro.writer_lease WHERE lease_until > now()", check=False)

    def responder_masters(self):
        """The pids of the synchro-fcgi masters whose children are the responders."""
        master = self.procs.get("fcgi")
        return {master.pid} if master is not None else set()

    def responders(self):
        masters = self.responder_masters()
        if not masters:
            return []
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % entry) as f:
                    stat = f.read()
            except OSError:
                continue
            # pid (comm) state ppid ...: comm may hold spaces, so split after its ")"
            fields = stat.rpartition(")")[2].split()
            if len(fields) > 1 and int(fields[1]) in masters:
                pids.append(int(entry))
        return pids

    # --- faults ---------------------------------------------------------------------------
    def kill_responder(self, rng):
        with self.lock:
            pids = [p for p in self.responders() if p not in self.stopped_pids]
            if not pids:
                self.note("no responder to kill (%d stopped)" % len(self.stopped_pids))
                return False
            pid = rng.choice(pids)
            os.kill(pid, signal.SIGKILL)
            self.note("responder %d SIGKILL" % pid)
            return True

    def stop_responder(self, rng):
        """SIGSTOP a responder past nginx's fastcgi_read_timeout, then SIGCONT it."""
        with self.lock:
            pids = [p for p in self.responders() if p not in self.stopped_pids]
            if not pids:
                return False
            pid = rng.choice(pids)
            os.kill(pid, signal.SIGSTOP)
            self.stopped_pids.add(pid)
            self.note("responder %d SIGSTOP" % pid)
        time.sleep(FASTCGI_READ_TIMEOUT_S + 1.5)
        with self.lock:
            self._cont(pid)
        return True

    def _cont(self, pid):
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
        self.stopped_pids.discard(pid)
        self.note("responder %d SIGCONT" % pid)

    def continue_all(self):
        with self.lock:
            for pid in list(self.stopped_pids):
                self._cont(pid)
            self._cont_walsync()

    def restart_postgres(self):
        with self.lock:
            self.note("PostgreSQL stop -m immediate")
            self.pg_stop("immediate")
            time.sleep(0.5)
            self.pg_start()
            self.note("PostgreSQL started")
        return True

    def kill_leading_walsync(self):
        with self.lock:
            lead = self.leader()
            p = self.procs.get(lead)
            if p is None or p.poll() is not None:
                return False
            p.send_signal(signal.SIGKILL)
            p.wait()
            self.procs.pop(lead)
            self.note("leading walsync %s SIGKILL" % lead)
            # The standby takes over (lease_s, stale_heartbeat_s); the supervisor brings the
            # killed one back as a standby after that, or after 15 s at the latest.
            self._restart_at[lead] = time.monotonic() + 15
        return True

    def stop_leading_walsync(self):
        """SIGSTOP the lease holder past its lease (the standby takes over), then SIGCONT it:
        a displaced writer whose writes the lease guard must refuse."""
        with self.lock:
            lead = self.leader()
            p = self.procs.get(lead)
            if p is None or p.poll() is not None:
                return False
            p.send_signal(signal.SIGSTOP)
            self.walsync_stopped = p
            self.note("leading walsync %s SIGSTOP" % lead)
        time.sleep(WALSYNC_OPTS["lease_s"] + 3)
        with self.lock:
            self._cont_walsync()
        return True

    def _cont_walsync(self):
        p, self.walsync_stopped = self.walsync_stopped, None
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGCONT)
            self.note("walsync SIGCONT")

    # Every changelog row, mirrored in the same transaction (test instrumentation): the
    # checker reads the history below the compaction horizon from the mirror.
    MIRROR_SQL = """
CREATE TABLE public.chaos_changelog_mirror (LIKE synchro.changelog INCLUDING ALL);
CREATE FUNCTION public.chaos_mirror() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog AS $$
BEGIN
	INSERT INTO public.chaos_changelog_mirror SELECT NEW.*;
	RETURN NULL;
END $$;
CREATE TRIGGER chaos_mirror AFTER INSERT ON synchro.changelog
	FOR EACH ROW EXECUTE FUNCTION public.chaos_mirror();
"""

    def install_mirror(self):
        self.run_sql_file(self.MIRROR_SQL)

    def compact_changelog(self):
        """synchroctl changelog compact --before 2s: devices whose cursor falls below the
        horizon are answered 409 cursor_expired and rebuild."""
        with self.lock:
            r = self.ctl("changelog", "compact", "--before", "2s", check=False)
            self.note("changelog compact (exit %d)" % r.returncode)
        return r.returncode == 0

    def publish_without_note(self):
        """Publishes manifest v2: contrib/example's manifest without todo.note (queued
        intents that set it become schema_incompatible; others go on in a successor batch
        after 422 schema_mismatch)."""
        manifest = json.load(open(os.path.join(e2e.EXAMPLE, "manifest.json")))
        todo = manifest["tables"][0]
        todo["fields"] = [f for f in todo["fields"] if f["field_id"] != "note"]
        path = os.path.join(self.dir, "manifest-v2.json")
        with open(path, "w") as f:
            json.dump(manifest, f)
        with self.lock:
            try:
                r = self.ctl("schema", "publish", path, check=False)
            except AssertionError:  # the grants after it (the server went away): again later
                return False
            if r.returncode != 0:
                return False
            self.note("schema v2 published (todo without note)")
        return True

    def expire_generation(self, device):
        """Another connect of the device's client id: its generation expires (409
        client_generation_expired, reconnect, successor batch). Tried again while another
        fault makes the server answer 503."""
        if device.client_id is None:
            return False
        for _ in range(20):
            try:
                status, _, _ = self.post("/v3/connect", {"client_id": device.client_id}, user=device.user,
                                         timeout=30)
            except OSError:
                status = 0
            if status == 200:
                self.note("generation of %s expired" % device.name)
                return True
            time.sleep(1)
        return False

    def retire(self, device):
        r = self.ctl("client", "retire", "--user", device.user, device.client_id, check=False)
        self.note("%s retired (synchroctl exit %d)" % (device.name, r.returncode))
        return r.returncode == 0

    def run_sql_file(self, sql):
        r = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1"], input=sql, capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError("psql: %s" % r.stderr)
