# SPDX-License-Identifier: BSD-2-Clause
"""The chaos suite's clock steps, a fault of every topology (chaos_topology.py's Topology):

  clock_step  the wall clock of the responders' host (every synchro-fcgi of the stack) or of
              the first walsync's host (ws-a) steps to a new offset from the database's,
              between two hours behind and two hours ahead, as NTP steps a host's clock; the
              monotonic clock runs on, as it does on a real host. The processes run under
              libfaketime (Debian package faketime), which reads each host's offset from a
              file of its own within a second of a change.

What must stay right whatever the hosts' clocks say (checked after the run, with the
checker's own rules, which a step must not break either):
  - Retry-After: every 429 and 503 the devices were answered carries the configured
    Retry-After (1 s: synchro.conf's retry_after_s and the web servers' own 503s), never a
    value computed from a stepped clock;
  - the lease: its expiry and heartbeat are the database's clock (src/store/lease.c), so a
    step neither ends nor extends a holder's lease; the commit-to-changelog lag a holder
    stores in the lease row (lag_ms) is measured on the primary's clock, so it stays far
    below the smallest step (sampled every two seconds through the run).

Without libfaketime the fault is not drawn, and the run says so."""

import glob
import os
import threading
import time

OFFSETS_S = (-7200, -3600, -900, 0, 900, 3600, 7200)
RETRY_AFTER = b"1"
# Far below the smallest step: a lag measured across two hosts' clocks would pass it.
LAG_BOUND_MS = 600 * 1000
SAMPLE_EVERY_S = 2.0


def faketime_library():
    for pattern in ("/usr/lib/*/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1"):
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    return None


class ClockSteps:
    """Mixin of the topologies' base class: the processes of the two hosts started under
    libfaketime, the fault, the sampler of the lease row, the checks."""
    CLOCK_LIB = faketime_library()
    clock_faults = (("clock_step", 1),) if CLOCK_LIB else ()

    def clock_init(self, walsync_name):
        self.clock_walsync = walsync_name
        self.clock_offsets = {"responders": 0, "walsync": 0}
        self.clock_steps = 0
        self.clock_lag_max_ms = -1
        self.clock_lag_over = []      # (seconds into the run, writer_id, lag_ms) past the bound
        self.clock_samples = 0
        self._clock_stop = threading.Event()
        self._clock_thread = None

    def clock_file(self, host):
        return os.path.join(self.dir, "clock-%s" % host)

    def _clock_host(self, name):
        if name.startswith("fcgi"):
            return "responders"
        if name == self.clock_walsync:
            return "walsync"
        return None

    def spawn(self, name, argv, **kw):
        host = self._clock_host(name) if self.CLOCK_LIB else None
        if host:
            if not os.path.exists(self.clock_file(host)):
                self._write_offset(host, 0)
            env = dict(kw.pop("env", None) or os.environ)
            env.update({"LD_PRELOAD": self.CLOCK_LIB, "FAKETIME_TIMESTAMP_FILE": self.clock_file(host),
                        "FAKETIME_CACHE_DURATION": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"})
            # a sanitizer build: its runtime need not come first for this test's preload
            asan = env.get("ASAN_OPTIONS", "")
            env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "verify_asan_link_order=0"
            kw["env"] = env
        return super().spawn(name, argv, **kw)

    def _write_offset(self, host, offset):
        path = self.clock_file(host)
        with open(path + ".tmp", "w") as f:
            f.write("%+d\n" % offset)
        os.replace(path + ".tmp", path)

    def clock_start(self):
        if not self.CLOCK_LIB:
            return
        self._clock_thread = threading.Thread(target=self._sample_lease, name="clock-lease-sampler", daemon=True)
        self._clock_thread.start()

    def clock_stop(self):
        self._clock_stop.set()
        if self._clock_thread:
            self._clock_thread.join(30)

    def clock_step(self, rng):
        host = rng.choice(("responders", "walsync"))
        offset = rng.choice([o for o in OFFSETS_S if o != self.clock_offsets[host]])
        self._write_offset(host, offset)
        self.clock_offsets[host] = offset
        self.clock_steps += 1
        self.note("the %s host's clock stepped to %+d s from the database's" % (host, offset))
        return True

    def _sample_lease(self):
        while not self._clock_stop.wait(SAMPLE_EVERY_S):
            row = self.q("SELECT writer_id, lag_ms FROM synchro.writer_lease WHERE role = 'walsync'"
                         " AND lag_ms IS NOT NULL", check=False)
            if not row or "|" not in row:
                continue
            writer, lag = row.split("|", 1)
            try:
                lag = int(lag)
            except ValueError:
                continue
            self.clock_samples += 1
            self.clock_lag_max_ms = max(self.clock_lag_max_ms, lag)
            if lag > LAG_BOUND_MS:
                self.clock_lag_over.append((time.monotonic() - self.t0, writer, lag))

    def check_clock(self, checker):
        if not self.CLOCK_LIB:
            return
        for value, n in sorted(checker.proxy.retry_after.items(), key=lambda x: str(x[0])):
            if value != RETRY_AFTER:
                checker.v("%d 429/503 answer(s) with Retry-After %r, configured %s"
                          % (n, value, RETRY_AFTER.decode()))
        for at, writer, lag in self.clock_lag_over[:10]:
            checker.v("at %.1f s the lease row of %s said lag_ms %d (bound %d): a lag measured on a"
                      " stepped clock" % (at, writer, lag, LAG_BOUND_MS))

    def clock_figures(self):
        if not self.CLOCK_LIB:
            return {"clock_steps": "not run: libfaketime is not installed (Debian package faketime)"}
        return {"clock_steps": self.clock_steps, "clock_offsets_at_end_s": dict(self.clock_offsets),
                "lease_lag_ms_max": self.clock_lag_max_ms, "lease_lag_samples": self.clock_samples}
