# SPDX-License-Identifier: BSD-2-Clause
"""The chaos suite's database-disk-full fault, a mixin of every topology (chaos_topology.py's
Topology):

  db_disk_full  the disk of the database's tables and indexes filled until ENOSPC, held full
                for 1-6 s, then freed. Every write that must grow a table or an index fails
                with SQLSTATE 53100 meanwhile (pg_wal has room: commits of what fits still
                happen): pushes answer 503 and commit nothing, walsync's changelog writes
                fail and are tried again, pulls answer from what is there.

At stack start, before synchro is installed, a tmpfs is mounted in the run's temporary
directory with a tablespace on it that the database's tables and indexes and its
default_tablespace move to (tests/e2e/pg_disk.py), so that everything synchro, the example
app and the suite's own instrumentation create lives there. stop() unmounts it, also after a
failure. A topology with a streaming standby (replica, failover) makes it with
pg_basebackup --tablespace-mapping into a tmpfs of its own (standby_disk_args()), a little
larger, which is never filled: the replica replays what the primary wrote; after a failover
the fault fills the promoted standby's disk, the current primary's.

The fault holds the stack's lock while the disk is full: no other server-side fault (an
immediate restart of PostgreSQL, whose crash recovery must be able to write, a failover)
happens meanwhile. Where mount is not permitted (not root) the fault is left out of the
draw, with a line saying so."""

import time

import synchro_e2e as e2e
from chaos_stack import WALSYNC_NAMES
from pg_disk import TmpfsDisk, MountRefused  # tests/e2e, on sys.path (chaos.py)

DISK_MB = 256                 # the tables' disk (a cap: tmpfs takes memory only for what it holds)
STANDBY_MARGIN_MB = 64        # the standby's is larger: its replay must never find it full
HOLD_S = (1.0, 6.0)
DISK_FAULTS = (("db_disk_full", 1),)


class DiskFull:
    """Mixin of the topologies: the tables' disk, the standby's, and the fault."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.disk = None
        self.standby_disk = None
        self.disk_refused = None
        self.disk_full_s = 0.0        # seconds the disk was held full, summed

    def disk_setup(self):
        """The tmpfs and its tablespace, before synchro is installed (once; a topology with a
        standby calls it before pg_basebackup)."""
        if self.disk is not None or self.disk_refused is not None:
            return
        try:
            self.disk = TmpfsDisk("chaos-disk", DISK_MB).mount()
        except MountRefused as e:
            self.disk_refused = str(e)
            self.faults = tuple(f for f in self.faults if f[0] != "db_disk_full")
            print("chaos: db_disk_full left out: %s" % e, flush=True)
            return
        self.disk.create_tablespace()
        self.disk.move_database()
        self.note("the tables' disk: a tmpfs of %d MB" % DISK_MB)

    def standby_disk_args(self):
        """pg_basebackup's arguments that put the standby's copy of the tablespace on a tmpfs
        of its own (none without the primary's)."""
        self.disk_setup()
        if self.disk is None:
            return []
        self.standby_disk = TmpfsDisk("chaos-standby-disk", DISK_MB + STANDBY_MARGIN_MB).mount()
        return ["--tablespace-mapping=%s=%s" % (self.disk.location, self.standby_disk.location)]

    def start_all(self):
        self.disk_setup()
        super().start_all()

    def current_disk(self):
        """The disk of the current primary: the promoted standby's after a failover."""
        return self.standby_disk if getattr(self, "failed_over", False) else self.disk

    def disk_fault(self, rng):
        """Fills the current primary's disk, holds it full, frees it (the fault loop waits:
        every other server-side fault would wait for the lock anyway)."""
        hold = rng.uniform(*HOLD_S)
        with self.lock:
            disk = self.current_disk()  # under the lock: a failover moves it
            if disk is None:
                return False
            t0 = time.monotonic()
            try:
                filled = disk.fill()
                self.note("the database's disk full (a filler of %.0f MB, %.1f MB used); %.1f s"
                          % (filled / 1048576.0, disk.used_mb() - filled / 1048576.0, hold))
                time.sleep(hold)
            finally:
                disk.free()
                self.disk_full_s += time.monotonic() - t0
                self.note("the database's disk freed")
        return True

    def stop(self):
        try:
            super().stop()
        finally:
            for disk in (self.disk, self.standby_disk):
                if disk is not None:
                    disk.unmount()

    def disk_figures(self):
        """Seconds held full, the tables' size at the end, and what the fault did: the pushes
        the primaries' logs show refused with SQLSTATE 53100 (answered 503), and the failed
        changelog writes in the walsyncs' logs."""
        disk = self.current_disk()
        logs = e2e.pg_log()
        sb = getattr(self, "standby", None)
        if sb is not None and getattr(self, "failed_over", False):
            try:
                with open(sb.log, "rb") as f:
                    logs += f.read().decode("utf-8", "replace")
            except OSError:
                pass
        return {"db_disk_full_seconds": round(self.disk_full_s, 1),
                "db_disk_used_mb": round(disk.used_mb(), 1) if disk is not None else None,
                "db_disk_full_pushes_refused": logs.count("not committed: SQLSTATE 53100"),
                "db_disk_full_changelog_writes_failed": sum(self.log(n).count("No space left on device")
                                                            for n in WALSYNC_NAMES)}
