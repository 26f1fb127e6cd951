# SPDX-License-Identifier: BSD-2-Clause
"""The failover suites' stack (doc/operations.md "Failover"): the with-pg primary plus a
synchronous streaming standby (pg_standby.py: pg_basebackup -R; synchronous_standby_names on the
primary names it once it streams, so every acknowledged commit is flushed on it), and the
stack's responders, synchroctl and walsync on one multi-host conninfo that names both servers
with target_session_attrs=read-write: whichever is the primary is the one they reach.

    sb = SyncStandby().create().start(); sb.make_synchronous()
    stack = FailoverStack(sb, ...); stack.start()
    stack.fail_over()          # the primary stopped (immediate), the standby promoted
    stack.psql(...)            # the new primary from then on
"""

import os
import subprocess
import time

import synchro_e2e as e2e
from pg_standby import Standby


# The standby's walreceiver reports cluster_name as its application_name. Never '*' in
# synchronous_standby_names: walsync's logical walsender would be a candidate, and a commit
# would wait for walsync, which waits for commits.
STANDBY_NAME = "synchro_standby"


class SyncStandby(Standby):
    def create(self):
        super().create()
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write("cluster_name = '%s'\n" % STANDBY_NAME)
        return self

    def make_synchronous(self):
        """Once the standby streams, the primary waits for its flush at every commit
        (synchronous_commit = on, the default; synchronous_standby_names names it)."""
        self.wait(lambda: _primary_psql("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")
                  != "0", "the standby to stream")
        _primary_psql("ALTER SYSTEM SET synchronous_standby_names = '%s'" % STANDBY_NAME)
        _primary_psql("SELECT pg_reload_conf()")
        self.wait(lambda: _primary_psql("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")
                  != "0", "the standby to be synchronous")
        return self


def _primary_psql(sql):
    r = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError("psql (primary) %r: %s" % (sql, r.stderr))
    return r.stdout.strip()


class FailoverStack(e2e.Stack):
    """Stack whose every conninfo names the primary, then the standby, read-write only."""

    def __init__(self, standby, **kw):
        super().__init__(**kw)
        self.standby = standby
        self.failed_over = False

    def conninfo(self, user, via_pgbouncer=False):
        assert not via_pgbouncer
        return ("host=%s,%s port=%s,%d dbname=%s user=%s target_session_attrs=read-write connect_timeout=2"
                % (self.primary_host, self.standby.sock, self.primary_port, self.standby.port,
                   os.environ["PGDATABASE"], user))

    def start(self):
        # The with-pg primary as it was at the start (the environment moves at the failover).
        self.primary_host = os.environ["PGHOST"]
        self.primary_port = os.environ["PGPORT"]
        return super().start()

    def fail_over(self):
        """Stops the primary at once (no shutdown checkpoint, every session cut) and promotes
        the standby; psql and synchroctl of this process reach the new primary afterwards.
        Returns (stopped_at, promoted_at): time.monotonic() when the stop was asked for, when
        the promotion was done; and time.time() of the stop's request as self.stopped_wall."""
        self.stopped_wall = time.time()
        stopped = time.monotonic()
        self.pg_stop("immediate")
        self.standby.promote()
        promoted = time.monotonic()
        os.environ["PGHOST"] = self.standby.sock
        os.environ["PGPORT"] = str(self.standby.port)
        self.failed_over = True
        return stopped, promoted

    def restore_environment(self):
        """PGHOST/PGPORT back to the with-pg server (its cleanup stops it by its data directory
        and ignores that it is already down)."""
        os.environ["PGHOST"] = self.primary_host
        os.environ["PGPORT"] = self.primary_port
