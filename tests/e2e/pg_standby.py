# SPDX-License-Identifier: BSD-2-Clause
"""A streaming standby of the throwaway PostgreSQL of tests/integration/with-pg, for the e2e
suites: `pg_basebackup -R` from the primary (PGHOST, PGPORT: trust on the socket, including
replication, initdb's default pg_hba.conf) into SYNCHRO_PG_TMP, the standby on its own socket
directory and port, run as the cluster's owner (SYNCHRO_PG_RUN) when the tests run as root.

    sb = Standby().create().start()
    sb.psql("SELECT pg_is_in_recovery()")
    sb.pause(); sb.resume(); sb.wait_replayed()
    sb.stop(); sb.start(); sb.configure("recovery_min_apply_delay = '4s'"); sb.restart()
    sb.destroy()      # stops it (also from atexit) and removes its directory

Nothing here is specific to pull: the failover suites can promote it (sb.promote())."""

import atexit
import os
import shutil
import subprocess
import tempfile
import time

_live = []


def _run_prefix():
    return os.environ.get("SYNCHRO_PG_RUN", "").split()


def _bin(name):
    return os.path.join(os.environ.get("PG_BINDIR", "/usr/lib/postgresql/15/bin"), name)


def _primary_psql(sql):
    r = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError("psql (primary) %r: %s" % (sql, r.stderr))
    return r.stdout.strip()


def _free_port():
    """A port other than the primary's (without TCP it only names the socket file in the
    standby's own directory)."""
    port = 20000 + (os.getpid() * 7 + int(time.monotonic() * 1000)) % 20000
    return port if str(port) != os.environ.get("PGPORT") else port + 1


class Standby:
    def __init__(self, name="standby"):
        base = os.environ.get("SYNCHRO_PG_TMP") or tempfile.gettempdir()
        self.dir = tempfile.mkdtemp(prefix=name + ".", dir=base)
        self.data = os.path.join(self.dir, "data")
        self.sock = os.path.join(self.dir, "sock")
        self.log = os.path.join(self.dir, "server.log")
        self.port = _free_port()
        self.running = False
        os.mkdir(self.sock)
        os.chmod(self.dir, 0o755)
        run = _run_prefix()
        if run:
            # runuser -u USER --: the cluster's owner must own what the standby writes.
            owner = run[2]
            subprocess.run(["chown", "-R", owner, self.dir], check=True)
        _live.append(self)

    def _as_owner(self, argv, check=True):
        r = subprocess.run(_run_prefix() + argv, capture_output=True, text=True)
        if check and r.returncode != 0:
            raise AssertionError("%s: exit %d: %s%s" % (" ".join(argv), r.returncode, r.stdout, r.stderr))
        return r

    def create(self, args=()):
        """pg_basebackup -R (streaming the WAL it needs) from the primary, with these arguments
        too (e.g. --tablespace-mapping), then the standby's own socket, port and log settings
        over the copied postgresql.conf."""
        self._as_owner([_bin("pg_basebackup"), "-h", os.environ["PGHOST"], "-p", os.environ["PGPORT"],
                        "-U", os.environ.get("PGUSER", "postgres"), "-D", self.data, "-R", "-X", "stream",
                        "-c", "fast", "--no-sync"] + list(args))
        conf = os.path.join(self.data, "postgresql.conf")
        extra = ("\n# pg_standby.py\nport = %d\nunix_socket_directories = '%s'\nhot_standby = on\n"
                 "hot_standby_feedback = on\nmax_standby_streaming_delay = 30s\nwal_receiver_status_interval = 1s\n"
                 "track_counts = on\n" % (self.port, self.sock))
        # The copied file belongs to the owner; root appends, the owner keeps it.
        with open(conf, "a") as f:
            f.write(extra)
        return self

    def configure(self, lines):
        """Appends settings to the standby's postgresql.conf (later lines win; restart to apply)."""
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write("\n" + lines.strip() + "\n")

    def restart(self):
        self.stop()
        return self.start()

    def start(self):
        self._as_owner([_bin("pg_ctl"), "-D", self.data, "-l", self.log, "-w", "-t", "60", "start"])
        self.running = True
        self.wait(lambda: self.psql("SELECT pg_is_in_recovery()", check=False) == "t", "the standby to accept reads")
        return self

    def stop(self, mode="fast"):
        if self.running:
            self._as_owner([_bin("pg_ctl"), "-D", self.data, "-m", mode, "-w", "-t", "60", "stop"], check=False)
            self.running = False

    def promote(self):
        self._as_owner([_bin("pg_ctl"), "-D", self.data, "-w", "-t", "60", "promote"])

    def destroy(self):
        self.stop("immediate")
        if self in _live:
            _live.remove(self)
        shutil.rmtree(self.dir, ignore_errors=True)

    def conninfo(self, user, dbname=None):
        return "host=%s port=%d dbname=%s user=%s connect_timeout=2" % (
            self.sock, self.port, dbname or os.environ["PGDATABASE"], user)

    def psql(self, sql, check=True):
        r = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", self.sock, "-p",
                            str(self.port), "-c", sql], capture_output=True, text=True)
        if check and r.returncode != 0:
            raise AssertionError("psql (standby) %r: %s" % (sql, r.stderr))
        return r.stdout.strip() if r.returncode == 0 else None

    @staticmethod
    def wait(pred, what, timeout=30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pred():
                return
            time.sleep(0.05)
        raise AssertionError("timed out waiting for %s" % what)

    # --- replay ----------------------------------------------------------------
    def pause(self):
        """Holds replay (pg_wal_replay_pause) and waits until it is paused."""
        self.psql("SELECT pg_wal_replay_pause()")
        self.wait(lambda: self.psql("SELECT pg_get_wal_replay_pause_state()") == "paused", "replay to pause")

    def resume(self):
        self.psql("SELECT pg_wal_replay_resume()")

    def replay_lsn(self):
        return self.psql("SELECT pg_last_wal_replay_lsn()")

    def wait_replayed(self, timeout=30.0):
        """Until the standby replayed the primary's flush position of now."""
        target = _primary_psql("SELECT pg_current_wal_flush_lsn()")
        self.wait(lambda: self.psql("SELECT pg_last_wal_replay_lsn() >= '%s'::pg_lsn" % target) == "t",
                  "the standby to replay %s" % target, timeout)

    def behind(self):
        """Whether the standby has not replayed the primary's flush position of now."""
        target = _primary_psql("SELECT pg_current_wal_flush_lsn()")
        return self.psql("SELECT pg_last_wal_replay_lsn() < '%s'::pg_lsn" % target) == "t"


@atexit.register
def _stop_live():
    for sb in list(_live):
        sb.destroy()
