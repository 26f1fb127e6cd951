# SPDX-License-Identifier: BSD-2-Clause
"""The chaos suite's fault schedule: from the run's seed, faults at random moments (mean
interval --fault-every), each kind counted:

  drop_after_commit, reset_mid_response   the fault proxy, on a share of the responses
  responder_sigkill                       a synchro-fcgi responder killed (the master forks anew)
  responder_sigstop                       a responder stopped past nginx's fastcgi_read_timeout
  postgres_restart_immediate              pg_ctl stop -m immediate, then start
  walsync_leader_sigkill                  the lease holder killed; the standby takes over
  walsync_leader_sigstop                  the lease holder stopped past its lease, then continued
  device_sigkill_mid_sync                 a device's synchro-cli sync killed (the devices count it)
  device_store_full                       a device's sync with its store's disk full (a file size
                                          limit a few kB past the store's files), then verify
  changelog_compact                       synchroctl changelog compact --before 2s (each five
                                          minutes, once at least): devices behind it rebuild
  schema_publish                          once: manifest v2 without todo.note
  generation_expiry                       a device's client id connects anew (each minute, twice
                                          at least)
  device_retired                          a device retired with queued intents (each ten minutes,
                                          once at least)

and the topology's own kinds (chaos_topology.py: the replication slot dropped, a host's clock
stepped (chaos_clock.py) and the tables' disk full (chaos_disk.py) in every topology; PgBouncer
restarted, its server connections terminated, the replica restarted or its replay paused, the
primary failed over), drawn with the random ones.

The one-shot events happen at seeded random moments of the run (the publish near its middle);
so does one fault of every random kind, so that each run has each kind at least once."""

import random
import threading
import time

DROP_RATE = 0.06
RESET_RATE = 0.04
DEVICE_KILL_PROB = 0.08
WEIGHTS = (("responder_sigkill", 4), ("responder_sigstop", 3), ("walsync_leader_sigkill", 3),
           ("walsync_leader_sigstop", 1), ("postgres_restart_immediate", 1))
PG_RESTART_MIN_GAP_S = 20


class Faults:
    def __init__(self, stack, proxy, devices, seed, every):
        self.stack = stack
        self.proxy = proxy
        self.devices = devices
        self.rng = random.Random("%d/faults" % seed)
        self.every = every
        self.device_kill_prob = DEVICE_KILL_PROB
        self.weights = WEIGHTS + tuple(getattr(stack, "faults", ()))
        self._counts = {k: 0 for k, _ in self.weights}
        self._counts.update({"schema_publish": 0, "generation_expiry": 0, "device_retired": 0,
                             "changelog_compact": 0})
        self.threads = []
        self.last_pg_restart = 0.0
        self.retired_device = None
        self.tries = {}
        self.finished = False
        proxy.set_rates(DROP_RATE, RESET_RATE)

    def counts(self):
        c = dict(self._counts)
        c.update(self.proxy.counts)
        c["device_sigkill_mid_sync"] = sum(d.counts["killed_mid_sync"] for d in self.devices)
        c["device_store_full"] = sum(d.counts.get("store_full", 0) for d in self.devices)
        return c

    def _pick(self):
        kinds = [k for k, w in self.weights for _ in range(w)]
        return self.rng.choice(kinds)

    def run_until(self, deadline):
        start = time.monotonic()
        span = deadline - start
        # one publish; a generation expiry a minute (two at least); a retirement every ten
        # minutes (one at least), never of the last devices
        one_shots = [(start + span * self.rng.uniform(0.40, 0.50), "schema_publish")]
        one_shots += [(start + span * self.rng.uniform(0.2, 0.8), "changelog_compact")
                      for _ in range(max(1, int(span / 300)))]
        one_shots += [(start + span * self.rng.uniform(0.1, 0.9), "generation_expiry")
                      for _ in range(max(2, int(span / 60)))]
        one_shots += [(start + span * self.rng.uniform(0.3, 0.9), "device_retired")
                      for _ in range(min(max(1, int(span / 600)), len(self.devices) // 3))]
        # every random kind at least once, whatever the draw
        one_shots += [(start + span * self.rng.uniform(0.1, 0.85), "random:" + k) for k, _ in self.weights]
        one_shots.sort()
        next_fault = start + self.rng.expovariate(1.0 / self.every)
        while True:
            now = time.monotonic()
            if now >= deadline - 2.0:
                break
            if one_shots and one_shots[0][0] <= now:
                _, kind = one_shots.pop(0)
                ok = self.fault(kind[7:]) if kind.startswith("random:") else self.one_shot(kind)
                if kind == "random:postgres_restart_immediate":
                    self.last_pg_restart = time.monotonic()
                tries = self.tries.get(kind, 0) + 1
                self.tries[kind] = tries
                if not ok and tries < 10 and kind != "device_retired" or (not ok and tries < 3):
                    # not possible right now (no leader during a takeover, the server down):
                    # again a little later
                    one_shots.append((time.monotonic() + 2.0, kind))
                    one_shots.sort()
                continue
            if next_fault <= now:
                kind = self._pick()
                if kind == "postgres_restart_immediate" and now - self.last_pg_restart < PG_RESTART_MIN_GAP_S:
                    kind = "responder_sigkill"
                self.fault(kind)
                if kind == "postgres_restart_immediate":
                    self.last_pg_restart = time.monotonic()
                next_fault = time.monotonic() + self.rng.expovariate(1.0 / self.every)
                continue
            time.sleep(min(0.1, max(0.0, min(next_fault, one_shots[0][0] if one_shots else next_fault) - now)))

    def fault(self, kind):
        st = self.stack
        if kind == "responder_sigkill":
            ok = st.kill_responder(self.rng)
        elif kind == "responder_sigstop":
            # in a thread: the stop lasts past nginx's timeout while other faults go on
            t = threading.Thread(target=st.stop_responder, args=(random.Random(self.rng.random()),), daemon=True)
            t.start()
            self.threads.append(t)
            ok = True
        elif kind == "walsync_leader_sigkill":
            ok = st.kill_leading_walsync()
        elif kind == "walsync_leader_sigstop":
            if st.walsync_stopped is not None:
                return False
            t = threading.Thread(target=st.stop_leading_walsync, daemon=True)
            t.start()
            self.threads.append(t)
            ok = True
        elif kind == "postgres_restart_immediate":
            ok = st.restart_postgres()
        else:
            ok = st.topology_fault(kind, self.rng)
        if ok:
            self._counts[kind] += 1
        return ok

    def one_shot(self, kind):
        st = self.stack
        live = [d for d in self.devices if not d.retired and d.client_id]
        ok = False
        if kind == "changelog_compact":
            ok = st.compact_changelog()
        elif kind == "schema_publish":
            ok = st.publish_without_note()
        elif kind == "generation_expiry":
            d = self.rng.choice(live)
            # not under the device's lock: the expiry may land in the middle of its sync
            ok = st.expire_generation(d)
        elif kind == "device_retired":
            if len(live) < 3:
                return True  # none left to spare
            d = self.rng.choice(live[1:])
            with d.lock:
                # queued work first: writes that are never sent (and maybe one sent whose
                # answer is lost), then the retirement, then the device tries to sync
                for _ in range(3):
                    todo, item = d.known()
                    own = [p for p in todo if p not in d.hot_todos]
                    w = d._one_write(todo, item, own)
                    if w:
                        d.write(*w)
                if st.retire(d):
                    ok = True
                    d.retired = True
                    self.retired_device = d
                    d.sync()
        if ok:
            self._counts[kind] += 1
        return ok

    def finish(self):
        if self.finished:
            return
        self.finished = True
        for t in self.threads:
            t.join(30)
        self.stack.continue_all()
        self.proxy.set_rates(0.0, 0.0)
