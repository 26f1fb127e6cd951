# SPDX-License-Identifier: BSD-2-Clause
"""A small disk for the database's tables, for the tests of a full disk
(tests/e2e/test_disk_full.pgt, the chaos suite's db_disk_full): a tmpfs of a few megabytes
mounted in the run's temporary directory (SYNCHRO_PG_TMP), holding a tablespace that the
database's tables and indexes move to (and its default_tablespace, so that tables created
later follow them); the disk is filled with a filler file until ENOSPC and freed again.
pg_wal stays where it is: commits still write their WAL, while every write that must extend
a table or index file fails with SQLSTATE 53100 (disk_full).

    disk = TmpfsDisk("disk", size_mb=64).mount()   # MountRefused when mount is not permitted
    disk.create_tablespace(); disk.move_database()     # or disk.move_tables(name, tables)
    disk.fill(); ...; disk.free()
    disk.unmount()          # also after a failure; lazily, while the server still has files open

Mounting needs root (the tests and CI run as root); the tablespace's directory belongs to the
cluster's owner (SYNCHRO_PG_RUN's user)."""

import errno
import os
import shutil
import subprocess
import tempfile

TABLESPACE = "synchro_disk"


class MountRefused(Exception):
    """mount(8) is not permitted here (not root, or no tmpfs in this namespace)."""


def _owner():
    run = os.environ.get("SYNCHRO_PG_RUN", "").split()
    return run[2] if len(run) > 2 else None


def psql(sql, host=None, port=None, check=True):
    """One statement (or a script, one statement at a time) as the cluster's superuser."""
    argv = ["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"]
    if host:
        argv += ["-h", host, "-p", str(port)]
    r = subprocess.run(argv, input=sql, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError("psql: %s" % r.stderr.strip())
    return r.stdout.strip() if r.returncode == 0 else None


class TmpfsDisk:
    def __init__(self, name="disk", size_mb=64, base=None):
        base = base or os.environ.get("SYNCHRO_PG_TMP") or tempfile.gettempdir()
        self.size_mb = size_mb
        self.mnt = tempfile.mkdtemp(prefix=name + ".", dir=base)
        os.chmod(self.mnt, 0o755)
        # the tablespace's directory (the cluster's owner's), and the filler beside it
        self.location = os.path.join(self.mnt, "ts")
        self.filler = os.path.join(self.mnt, "filler")
        self.mounted = False

    def mount(self):
        """Mounts the tmpfs and makes the tablespace's directory; MountRefused when mount is not
        permitted (the directory is removed again)."""
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm,mode=0755" % self.size_mb,
                            "synchro-disk", self.mnt], capture_output=True, text=True)
        if r.returncode != 0:
            shutil.rmtree(self.mnt, ignore_errors=True)
            why = r.stderr.strip().splitlines()
            raise MountRefused("mount -t tmpfs: %s" % (why[0] if why else "exit %d" % r.returncode))
        self.mounted = True
        os.mkdir(self.location, 0o700)
        if _owner():
            shutil.chown(self.location, _owner())
        return self

    def create_tablespace(self, name=TABLESPACE):
        psql("CREATE TABLESPACE %s LOCATION '%s';\nGRANT CREATE ON TABLESPACE %s TO PUBLIC;\n"
             % (name, self.location, name))

    @staticmethod
    def move_tables(name, tables):
        """These tables (schema-qualified) and their indexes into the tablespace `name`."""
        for t in tables:
            psql("ALTER TABLE %s SET TABLESPACE %s;\n"
                 "DO $$DECLARE i regclass; BEGIN FOR i IN SELECT indexrelid::regclass FROM pg_index"
                 " WHERE indrelid = '%s'::regclass LOOP EXECUTE format('ALTER INDEX %%s SET TABLESPACE %%I', i, '%s');"
                 " END LOOP; END$$;\n" % (t, name, t, name))

    @staticmethod
    def move_database(name=TABLESPACE):
        """Every table, index and materialized view of the database in pg_default (the system
        catalogs excepted) into the tablespace, and the database's default_tablespace, so that
        the sessions opened from now on create theirs there too."""
        psql("ALTER TABLE ALL IN TABLESPACE pg_default SET TABLESPACE %s;\n"
             "ALTER INDEX ALL IN TABLESPACE pg_default SET TABLESPACE %s;\n"
             "ALTER MATERIALIZED VIEW ALL IN TABLESPACE pg_default SET TABLESPACE %s;\n"
             "ALTER DATABASE %s SET default_tablespace = %s;\n"
             % (name, name, name, os.environ["PGDATABASE"], name))

    # Relations of the database with storage left in pg_default (sequences are updated in
    # place and never grow, so they may stay).
    LEFT_SQL = ("SELECT count(*) FROM pg_class WHERE oid >= 16384 AND reltablespace = 0"
                " AND relkind IN ('r', 'i', 't', 'm')")

    def free_bytes(self):
        st = os.statvfs(self.mnt)
        return st.f_bavail * st.f_frsize

    def used_mb(self):
        st = os.statvfs(self.mnt)
        return (st.f_blocks - st.f_bfree) * st.f_frsize / 1048576.0

    def fill(self):
        """Fills the disk: the filler file takes every free byte (fallocate, then writes of
        a page until ENOSPC, since the server may take pages meanwhile). Returns the filler's
        size in bytes."""
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            chunk = self.free_bytes()
            while chunk >= 65536:
                try:
                    os.posix_fallocate(fd, os.fstat(fd).st_size, chunk)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    chunk //= 2
                    continue
                chunk = self.free_bytes()
            page = b"\0" * 4096
            while True:
                try:
                    os.write(fd, page)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    break
            return os.fstat(fd).st_size
        finally:
            os.close(fd)

    def free(self):
        """Space back: the filler removed. True when there was one."""
        try:
            os.unlink(self.filler)
            return True
        except FileNotFoundError:
            return False

    def unmount(self):
        """The filler removed and the tmpfs detached (umount -l: the server may still hold its
        files open; the memory is freed once it closes them), its directory removed."""
        if self.mounted:
            self.free()
            subprocess.run(["umount", "-l", self.mnt], capture_output=True)
            self.mounted = False
        try:
            os.rmdir(self.mnt)
        except OSError:
            pass
