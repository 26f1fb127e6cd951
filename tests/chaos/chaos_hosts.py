# SPDX-License-Identifier: BSD-2-Clause
"""The chaos suite's `hosts` topology: two responder hosts sharing one database, as
doc/scaling.md ("More responders, more hosts") tells operators to grow.

Each host is a network namespace the run makes itself (`ip netns add`), joined to the
database's side by a veth pair with addresses from a private /30; the names and the /29
of both hosts carry the run's pid, so two runs can coexist, and a namespace or link left
by a killed run (its pid dead) is removed, with the processes still inside, before a run
starts. Each host runs its own nginx (the shipped site, as the nginx topology, listening on
the host's address) and its own synchro-fcgi master with half of the responders (two at
least), both through `ip netns exec`; the responders reach PostgreSQL over TCP across the
veth (PostgreSQL listens on the database-side addresses, pg_hba lets the responders' role in
from the /29 with the stack's trust authentication), never over its UNIX socket, which
would cross namespaces. walsync, synchroctl and the checker stay on the database's side.
Live updates, where nginx's nchan is installed: each host's nginx includes its copy of
conf/nginx/synchro-live.conf whose publisher location also allows the database's side of the
host's link, and walsync publishes to the first host's publisher. Where redis-server is
installed too, one redis-server on the database's side (listening on the database side of each
veth) and each host's nchan in its Redis mode on it (nchan_use_redis): the proxy sends each
subscription to either host, so a device hears a commit published on the first host through
the second. Without redis-server each host's nchan keeps its channels in memory: only the
first host's subscribers hear the notifications, the second host's devices rely on their poll.
live_noise publishes to the first host too, nginx_reload reloads one host's nginx. A
partitioned first host loses the notifications meanwhile: the devices' poll brings the changes.
The fault proxy sends each request to one host by its own seeded random choice, as a load
balancer would, and records which host answered each push.

What it proves:
  admission caps hold across hosts  max_inflight and max_inflight_per_client are set low
      enough to bind under the chaos load. A sampler reads pg_locks (the advisory-lock key
      spaces src/pg/push_admission.c takes its slots in) every few milliseconds; the run
      fails if more first executions than max_inflight (slot holders, or batches in first
      execution) or more than max_inflight_per_client of one client were ever in flight at
      once, or if the sampler never saw a slot held (it would be reading the wrong space).
      The figures count the 429s each host answered and the samples with both hosts'
      responders holding slots at once.
  live updates across hosts  with Redis, every host answered some live subscription with a
      notification (200): the second host's come through Redis, since walsync and
      live_noise publish to the first host only; without Redis, the first host did.
  replays across hosts  batches answered 200 by both hosts, and replays (Synchro-Replay)
      answered by the other host than the one whose first execution the proxy saw; the
      checker's replay rule (every 200 of a batch byte-identical) holds for them as for every
      batch. The run fails if a host answered no push 200 (two hosts were not exercised).

Faults of its own:
  host_partition        one host's side of its veth down for 1-6 s, then up: the proxy's
                        requests to it fail (no connection within the proxy's connect
                        timeout: no answer), its responders lose PostgreSQL in the middle of
                        their transactions; the devices retry and the replays land on the
                        other host.
  host_responders_kill  one host's whole synchro-fcgi (its master and every responder)
                        killed with SIGKILL, then started again.

Needs root (network namespaces and veth links) and `ip` (iproute2): missing() says why
not."""

import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time

import psycopg2

import synchro_e2e as e2e
from chaos_topology import Topology
from live_stack import publisher_url

SHIPPED_LIVE = os.path.join(e2e.SRC, "conf/nginx/synchro-live.conf")

NS_PREFIX = "synchro-chaos-"          # namespaces: synchro-chaos-<pid>-h1, -h2
LINK_PREFIX = "syc"                   # links: syc<pid>h1 (database side), syc<pid>h1p (the host's)
SUBNET = (10, 254)                    # each run a /29 of 10.254.0.0/16, from its pid
HOSTS = ("h1", "h2")
# src/pg/push_admission.c: the advisory locks' fourth key field of each slot space
SPACE_TOTAL, SPACE_CLIENT, SPACE_BATCH = 0x5379, 0x537A, 0x537B
SAMPLE_EVERY_S = 0.02


def missing():
    """Why the topology cannot run here, else None."""
    if os.getuid() != 0:
        return "not root (uid %d), and making network namespaces and veth links needs it" % os.getuid()
    if not shutil.which("ip"):
        return "ip (iproute2) not installed"
    probe = "%sprobe-%d" % (NS_PREFIX, os.getpid())
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return "no network namespaces here (ip netns add: %s)" % r.stderr.strip()
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _ip(*args, ns=None, check=True):
    argv = ["ip"] + (["-n", ns] if ns else []) + [str(a) for a in args]
    r = subprocess.run(argv, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError("%s: exit %d: %s" % (" ".join(argv), r.returncode, r.stderr.strip()))
    return r


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def remove_stale():
    """Namespaces (and the processes left inside them) and links of earlier runs whose pid
    is dead: a run killed before its stop() left them. Returns what it removed."""
    removed = []
    for line in _ip("netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.match(re.escape(NS_PREFIX) + r"(?:probe-)?(\d+)(?:-h\d+)?$", name)
        if m and not _alive(int(m.group(1))):
            pids = _ip("netns", "pids", name, check=False).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            _ip("netns", "del", name, check=False)
            removed.append(name)
    for line in _ip("-o", "link", "show", check=False).stdout.splitlines():
        m = re.match(r"\d+: (" + LINK_PREFIX + r"(\d+)h\d+p?)[@:]", line)
        if m and not _alive(int(m.group(2))):
            if _ip("link", "del", m.group(1), check=False).returncode == 0:
                removed.append(m.group(1))
    return removed


class Host:
    """One responder host: its namespace, veth pair, addresses, directory and processes."""

    def __init__(self, label, pid, net, n, stack_dir):
        self.label = label
        self.ns = "%s%d-%s" % (NS_PREFIX, pid, label)
        self.link = "%s%d%s" % (LINK_PREFIX, pid, label)      # the database's side
        self.peer = self.link + "p"                            # the host's side
        base = "%d.%d.%d" % (SUBNET[0], SUBNET[1], net // 256)
        low = net % 256 + 4 * n
        self.db_ip = "%s.%d" % (base, low + 1)
        self.ip = "%s.%d" % (base, low + 2)
        self.dir = os.path.join(stack_dir, label)
        self.sock = os.path.join(self.dir, "synchro.sock")
        self.conf = os.path.join(self.dir, "synchro.conf")
        self.fcgi = "fcgi-" + label
        self.nginx = "nginx-" + label
        self.partitioned = False
        self.made = False

    def make(self):
        self.made = True
        _ip("netns", "add", self.ns)
        _ip("link", "add", self.link, "type", "veth", "peer", "name", self.peer)
        _ip("link", "set", self.peer, "netns", self.ns)
        _ip("addr", "add", self.db_ip + "/30", "dev", self.link)
        _ip("link", "set", self.link, "up")
        _ip("addr", "add", self.ip + "/30", "dev", self.peer, ns=self.ns)
        _ip("link", "set", self.peer, "up", ns=self.ns)
        _ip("link", "set", "lo", "up", ns=self.ns)

    def unmake(self):
        if not self.made:
            return
        pids = _ip("netns", "pids", self.ns, check=False).stdout.split()
        for pid in pids:  # none once the stack stopped its processes; a leftover all the same
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        _ip("link", "del", self.link, check=False)
        _ip("netns", "del", self.ns, check=False)
        self.made = False

    def set_link(self, up):
        _ip("link", "set", self.peer, "up" if up else "down", ns=self.ns)
        self.partitioned = not up


def _pick_net(pid):
    """A /29 of 10.254.0.0/16 from the pid, skipping one any address of this machine is in."""
    used = set()
    for line in _ip("-o", "-4", "addr", "show", check=False).stdout.splitlines():
        m = re.search(r"inet (\d+)\.(\d+)\.(\d+)\.(\d+)/", line)
        if m and (int(m.group(1)), int(m.group(2))) == SUBNET:
            used.add(int(m.group(3)) * 256 + int(m.group(4)) // 8 * 8)
    for i in range(8192):
        net = ((pid + i) % 8192) * 8
        if net not in used:
            return net
    raise AssertionError("no free /29 in %d.%d.0.0/16" % SUBNET)


class HostsTopology(Topology):
    name = "hosts"
    faults = Topology.faults + (("host_partition", 2), ("host_responders_kill", 1))
    MAX_INFLIGHT = 2               # of the 4 responders (2 a host): binds under 6 devices
    MAX_INFLIGHT_PER_CLIENT = 1
    PARTITION_S = (1.0, 6.0)
    # a load balancer's connect timeout: a partitioned host is given up on (no answer)
    upstream_connect_timeout = 2

    # Test instrumentation: each mutation a first execution writes holds it FIRST_EXECUTION_DELAY_S
    # longer (a busier database's push), so that first executions overlap and the caps bind
    # under the suite's few devices; replays never write a mutation and are not held.
    FIRST_EXECUTION_DELAY_S = 0.04
    DELAY_SQL = """
CREATE FUNCTION public.chaos_first_execution_delay() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog AS $$
BEGIN
	PERFORM pg_sleep(%s);
	RETURN NULL;
END $$;
CREATE TRIGGER chaos_first_execution_delay AFTER INSERT ON synchro.mutations
	FOR EACH ROW EXECUTE FUNCTION public.chaos_first_execution_delay();
"""

    def __init__(self, workers):
        super().__init__(workers)
        self.fcgi_conf.update(max_inflight=self.MAX_INFLIGHT, max_inflight_per_client=self.MAX_INFLIGHT_PER_CLIENT)
        self.workers = max(2, workers // 2)   # each host's
        self.hosts = []
        self.partitions = 0
        self.restarts = 0
        self.fault_threads = []
        self.sample = {"samples": 0, "errors": 0, "with_slot": 0, "at_cap": 0, "both_hosts": 0,
                       "max_total": 0, "max_batches": 0, "max_per_client": 0}
        self.sample_over = []        # descriptions of samples past a cap (the first few)
        self._sampler_stop = threading.Event()
        self._sampler = None
        self.host_figures = {}
        self.nginx_argv = {}         # each host's nginx command line, to start it again
        self.nginx_restarts = 0      # nginx restarted by heal_nginx

    # --- the network and the database's listening addresses -------------------------------
    def start_all(self):
        try:
            for name in remove_stale():
                self.note("removed %s, left by an earlier run" % name)
            pid = os.getpid()
            net = _pick_net(pid)
            self.hosts = [Host(label, pid, net, n, self.dir) for n, label in enumerate(HOSTS)]
            for h in self.hosts:
                h.make()
                os.mkdir(h.dir)
                os.chmod(h.dir, 0o755)
            self.listen_on_links(net)
        except BaseException:
            self.unmake_hosts()
            raise
        super().start_all()
        self._sampler = threading.Thread(target=self._sample_admission, name="admission-sampler", daemon=True)
        self._sampler.start()

    def install_mirror(self):
        super().install_mirror()
        self.run_sql_file(self.DELAY_SQL % self.FIRST_EXECUTION_DELAY_S)

    def listen_on_links(self, net):
        """PostgreSQL listens on the database side of each veth too (a restart: the setting
        needs one), and lets the responders' role in from the /29, trusted as on the socket."""
        hba = os.path.join(os.environ["SYNCHRO_PG_DATA"], "pg_hba.conf")
        with open(hba, "a") as f:
            f.write("host %s %s %d.%d.%d.%d/29 trust\n" % (os.environ["PGDATABASE"], e2e.APP_ROLE, SUBNET[0],
                                                          SUBNET[1], net // 256, net % 256))
        self.q("ALTER SYSTEM SET listen_addresses = '%s'" % ",".join(h.db_ip for h in self.hosts))
        self.pg_stop("fast")
        self.pg_start()

    def unmake_hosts(self):
        for h in self.hosts:
            try:
                h.unmake()
            except Exception as e:  # noqa: BLE001 - remove the others whatever happens
                self.note("removing %s: %r" % (h.ns, e))

    def stop(self):
        self._sampler_stop.set()
        if self._sampler is not None:
            self._sampler.join(10)
        try:
            super().stop()
        finally:
            self.unmake_hosts()

    # --- each host's synchro-fcgi and nginx ----------------------------------------------
    def write_conf(self, **fcgi):
        super().write_conf(**fcgi)
        with open(self.conf) as f:
            lines = f.read().split("\n")
        for h in self.hosts:
            out = []
            for line in lines:
                if line.startswith("conninfo = "):
                    line = "conninfo = host=%s port=%s dbname=%s user=%s" % (
                        h.db_ip, os.environ["PGPORT"], os.environ["PGDATABASE"], e2e.APP_ROLE)
                elif line.startswith("listen = "):
                    line = "listen = " + h.sock
                out.append(line)
            with open(h.conf, "w") as f:
                f.write("\n".join(out))
            os.chmod(h.conf, 0o644)

    def start_fcgi(self):
        for h in self.hosts:
            self.start_host_fcgi(h)

    def start_host_fcgi(self, h):
        if os.path.exists(h.sock):
            os.unlink(h.sock)
        self.spawn(h.fcgi, ["ip", "netns", "exec", h.ns, e2e.FCGI, "-c", h.conf])
        e2e.wait_for(lambda: os.path.exists(h.sock), timeout=60, what="synchro-fcgi socket of " + h.label)

    # --- live updates: nchan, on one Redis where redis-server is installed ------------------
    def redis(self):
        return self.live_updates() and shutil.which("redis-server") is not None

    def live_hosts(self):
        if self.redis():
            return [(i, h.label, "nchan's Redis carries the first host's publishes to every host")
                    for i, h in enumerate(self.hosts)]
        return [(0, self.hosts[0].label, "walsync publishes to it")] if self.live_updates() else []

    def notify_url(self):
        return publisher_url(self.port, self.hosts[0].ip)

    def publisher_address(self, rng):
        return self.hosts[0].ip   # as walsync: the second host's notifications all come through Redis

    def nginx_names(self):
        return [h.nginx for h in self.hosts]

    def start_redis(self):
        """redis-server on the database's side of every host's link; returns its port."""
        port = e2e.free_port()
        self.spawn("redis", ["redis-server", "--port", str(port), "--bind"] + [h.db_ip for h in self.hosts] +
                   ["--protected-mode", "no", "--save", "", "--appendonly", "no"])
        e2e.wait_for(lambda: self._redis_up(port), timeout=30, what="redis-server")
        return port

    def _redis_up(self, port):
        try:
            socket.create_connection((self.hosts[0].db_ip, port), timeout=1).close()
            return True
        except OSError:
            return False

    def live_conf(self, h, redis_port):
        """conf/nginx/synchro-live.conf for host h: its publisher reachable from the database's
        side of h's link (walsync's and live_noise's source), and nchan on the Redis when
        redis_port is set (else in memory)."""
        text = open(SHIPPED_LIVE).read()
        if redis_port is not None:
            redis = "\n    nchan_use_redis on;\n    nchan_redis_url redis://%s:%d;" % (h.db_ip, redis_port)
            for line in ("    nchan_channel_id $synchro_user;", "    nchan_channel_id $1;"):
                assert line in text, "conf/nginx/synchro-live.conf has no '%s'" % line.strip()
                text = text.replace(line, line + redis)
        assert "    allow 127.0.0.1;\n" in text, "conf/nginx/synchro-live.conf changed its publisher's rule"
        text = text.replace("    allow 127.0.0.1;\n", "    allow 127.0.0.1;\n    allow %s;\n" % h.db_ip)
        path = os.path.join(h.dir, "synchro-live.conf")
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o644)
        return path

    def start_nginx(self):
        base = self.nginx_site()
        redis_port = self.start_redis() if self.redis() else None
        for h in self.hosts:
            site = base.replace("listen 127.0.0.1:%d;" % self.port, "listen %s:%d;" % (h.ip, self.port))
            assert site != base, "the nginx site changed its listen line"
            site = site.replace(self.sock, h.sock)
            if self.live_updates():
                assert SHIPPED_LIVE in site, "the nginx site does not include conf/nginx/synchro-live.conf"
                site = site.replace(SHIPPED_LIVE, self.live_conf(h, redis_port))
            # the load balancer's health checks come from the database's side of the link
            assert "allow 127.0.0.1;" in site, "the nginx site changed its /healthz rule"
            site = site.replace("allow 127.0.0.1;", "allow 127.0.0.1;\n        allow %s;" % h.db_ip)
            log = os.path.join(self.dir, h.nginx + "-error.log")
            conf = self.write_nginx_conf(h.dir, site, log, 1)
            self.nginx_argv[h.nginx] = ["ip", "netns", "exec", h.ns, "nginx", "-p", h.dir, "-c", conf, "-e", log]
            self.spawn(h.nginx, self.nginx_argv[h.nginx])
        for h in self.hosts:
            e2e.wait_for(lambda: self.host_status(h, "/healthz") == 200, timeout=60, what="healthz of " + h.label)

    def upstreams(self):
        return [(h.ip, self.port) for h in self.hosts]

    def host_status(self, h, path):
        try:
            return self.request("GET", path, user=None, protocol=None, timeout=2, host=h)[0]
        except OSError:
            return None

    def request(self, *args, host=None, **kw):
        """The e2e Stack's request, to one host (default: the first one not partitioned)."""
        h = host or next((x for x in self.hosts if not x.partitioned), self.hosts[0])
        return super().request(*args, address=h.ip, **kw)

    def responder_masters(self):
        return {self.procs[h.fcgi].pid for h in self.hosts if h.fcgi in self.procs}

    def show_logs(self, lines=40):
        super().show_logs(lines)
        for name in [h.fcgi for h in self.hosts] + [h.nginx + "-error" for h in self.hosts]:
            tail = self.log(name).splitlines()[-lines:]
            if tail:
                print("---- %s.log (last %d lines)" % (name, len(tail)), flush=True)
                for line in tail:
                    print("  | " + line, flush=True)

    # --- faults ---------------------------------------------------------------------------
    def topology_fault(self, kind, rng):
        if kind == "host_partition":
            with self.lock:
                if any(h.partitioned for h in self.hosts):
                    return False  # one host at a time: the other answers meanwhile
                h = rng.choice(self.hosts)
                h.set_link(False)
                self.partitions += 1
                self.note("%s partitioned (its veth down)" % h.label)
            t = threading.Thread(target=self._heal_after, args=(h, rng.uniform(*self.PARTITION_S)), daemon=True)
            t.start()
            self.fault_threads.append(t)
            return True
        if kind == "host_responders_kill":
            with self.lock:
                up = [h for h in self.hosts if not h.partitioned]
                if not up:
                    return False
                h = rng.choice(up)
                p = self.procs.pop(h.fcgi, None)
                if p is None:
                    return False
                self._killpg(p.pid)
                p.wait()
                self.note("%s: synchro-fcgi master and responders SIGKILL" % h.label)
                self.start_host_fcgi(h)
                e2e.wait_for(lambda: self.host_status(h, "/healthz") == 200, timeout=60,
                             what="healthz of %s after its restart" % h.label)
                self.restarts += 1
                self.note("%s: synchro-fcgi started" % h.label)
            return True
        return super().topology_fault(kind, rng)

    def _heal_after(self, h, seconds):
        time.sleep(seconds)
        with self.lock:
            self._heal(h)

    def _heal(self, h):
        if h.partitioned:
            h.set_link(True)
            self.note("%s reconnected (its veth up)" % h.label)

    def continue_all(self):
        super().continue_all()
        with self.lock:
            for h in self.hosts:
                if h.made:
                    self._heal(h)

    # --- admission across hosts -----------------------------------------------------------
    SAMPLE_SQL = ("SELECT l.objsubid, l.classid::bigint, l.pid, host(a.client_addr) FROM pg_locks l"
                  " LEFT JOIN pg_stat_activity a ON a.pid = l.pid"
                  " WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid IN (%d, %d, %d)"
                  " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
                  % (SPACE_TOTAL, SPACE_CLIENT, SPACE_BATCH))

    def _sample_admission(self):
        """Every SAMPLE_EVERY_S: the first executions in flight (total slots, batch locks)
        and each client's slots, as pg_locks shows them; the largest counts ever seen."""
        db = None
        by_ip = {h.ip: h.label for h in self.hosts}
        s = self.sample
        while not self._sampler_stop.wait(SAMPLE_EVERY_S):
            try:
                if db is None:
                    db = psycopg2.connect("", connect_timeout=5)
                    db.autocommit = True
                with db.cursor() as cur:
                    cur.execute(self.SAMPLE_SQL)
                    rows = cur.fetchall()
            except psycopg2.Error:
                s["errors"] += 1  # PostgreSQL restarting: again on a new connection
                try:
                    if db is not None:
                        db.close()
                except psycopg2.Error:
                    pass
                db = None
                time.sleep(0.2)
                continue
            total = {pid for space, _, pid, _ in rows if space == SPACE_TOTAL}
            batches = {pid for space, _, pid, _ in rows if space == SPACE_BATCH}
            clients = {}
            for space, key1, pid, _ in rows:
                if space == SPACE_CLIENT:
                    clients.setdefault(key1, set()).add(pid)
            per_client = max((len(p) for p in clients.values()), default=0)
            hosts = {by_ip.get(ip, ip) for space, _, _, ip in rows if space == SPACE_TOTAL}
            s["samples"] += 1
            s["with_slot"] += 1 if total else 0
            s["at_cap"] += 1 if len(total) >= self.MAX_INFLIGHT else 0
            s["both_hosts"] += 1 if len(hosts) > 1 else 0
            s["max_total"] = max(s["max_total"], len(total))
            s["max_batches"] = max(s["max_batches"], len(batches))
            s["max_per_client"] = max(s["max_per_client"], per_client)
            if (len(total) > self.MAX_INFLIGHT or len(batches) > self.MAX_INFLIGHT or
                    per_client > self.MAX_INFLIGHT_PER_CLIENT) and len(self.sample_over) < 5:
                self.sample_over.append("%d slot holders (%s), %d batches in first execution, %d slots of one client"
                                        % (len(total), ", ".join(sorted(hosts)), len(batches), per_client))
        if db is not None:
            db.close()

    def check_topology(self, checker):
        super().check_topology(checker)
        self._sampler_stop.set()
        if self._sampler is not None:
            self._sampler.join(10)
        s = self.sample
        if self.sample_over:
            checker.v("admission: more in flight than the caps (max_inflight %d, max_inflight_per_client %d)"
                      " across the hosts: %s" % (self.MAX_INFLIGHT, self.MAX_INFLIGHT_PER_CLIENT,
                                                 "; ".join(self.sample_over)))
        if s["with_slot"] == 0:
            checker.v("admission: the sampler never saw a slot held in %d samples (does it read the"
                      " module's lock space?)" % s["samples"])
        proxy = checker.proxy
        labels = dict(enumerate(h.label for h in self.hosts))
        answers = {}
        for (i, status), n in proxy.by_upstream.items():
            answers.setdefault(labels[i], {})[str(status)] = n
        push_200 = {label: 0 for label in labels.values()}
        both = replays = replays_other = 0
        for bid, seen in proxy.push_answers.items():
            ok = [(labels[i], replay) for i, status, replay in seen if status == 200]
            for label, _ in ok:
                push_200[label] += 1
            if len({label for label, _ in ok}) > 1:
                both += 1
            first = {label for label, replay in ok if not replay}
            for label, replay in ok:
                if replay:
                    replays += 1
                    if first and label not in first:
                        replays_other += 1
        for label, n in push_200.items():
            if n == 0:
                checker.v("hosts: %s answered no push with 200 (two hosts were not exercised)" % label)
        # the hosts that must have answered a notification: check_live (super().check_topology)
        live_200 = {label: proxy.live_by_upstream.get((i, 200), 0) for i, label in labels.items()}
        self.host_figures = {
            "hosts_requests_by_status": {"%s %s" % (label, st): n for label, by in answers.items()
                                         for st, n in by.items()},
            "hosts_429": {label: answers.get(label, {}).get("429", 0) for label in labels.values()},
            "hosts_live_notifications": live_200 if self.live_updates() else "no live updates (no nchan)",
            "hosts_live_channels": ("nchan's Redis" if self.redis() else "nchan's memory, per host")
            if self.live_updates() else "none",
            "hosts_push_200": push_200,
            "hosts_batches_answered_200_by_both": both,
            "hosts_replays": replays,
            "hosts_replays_on_the_other_host": replays_other,
            "admission_caps": "max_inflight %d, max_inflight_per_client %d" % (self.MAX_INFLIGHT,
                                                                              self.MAX_INFLIGHT_PER_CLIENT),
            "admission_samples": dict(s),
        }

    # Debian's nchan (1.3.6) on Redis: once in a few runs, after nginx_reload, every new worker
    # of that host died of SIGSEGV as it started, for as long as the run went on. That is a
    # crash of nginx's module, not of Synchro; an operator who sees it restarts nginx. So the
    # final sync starts with each such nginx restarted, said in the report and counted.
    CRASH_LOOP = "exited on signal 11"

    def heal_nginx(self):
        healed = 0
        for h in self.hosts:
            tail = self.log(h.nginx + "-error").splitlines()[-20:]
            if sum(self.CRASH_LOOP in line for line in tail) < 10:
                continue
            self.stop_proc(h.nginx)
            self.spawn(h.nginx, self.nginx_argv[h.nginx])
            e2e.wait_for(lambda: self.host_status(h, "/healthz") == 200, timeout=60,
                         what="healthz of " + h.label + " after its restart")
            self.note("%s: its workers died of SIGSEGV as they started (nchan); nginx restarted" % h.nginx)
            print("chaos: %s's new workers kept dying of SIGSEGV as they started (nchan on Redis, after a"
                  " reload); restarted it before the final sync" % h.nginx, flush=True)
            healed += 1
        self.nginx_restarts += healed
        return healed

    def topology_figures(self):
        fig = super().topology_figures()
        fig.update(self.host_figures)
        fig["nginx_restarted_after_worker_crashes"] = self.nginx_restarts
        fig["host_partitions"] = self.partitions
        fig["host_responders_restarts"] = self.restarts
        return fig
