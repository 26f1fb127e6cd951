#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""The chaos suite (doc/reliability.md): a whole local stack (PostgreSQL, two
synchro-walsync, synchro-fcgi, nginx, the fault proxy) and N simulated devices, each a real
libsynchro-client store driven through synchro-cli (and, by default, one a store of the
browser client in Chromium, tests/chaos/chaos_browser.py), for several users, writing at random
offline and online while memberships churn (shares, removals and moves between lists,
tests/chaos/chaos_churn.py) and faults are injected at random moments; then a final sync and
the checker over the whole history (tests/chaos/chaos_checker.py). Any violation fails the run
and prints the seed that reproduces its schedule.

Run inside a throwaway PostgreSQL: contrib/chaos [--topology NAME] [--seed N] [--minutes M]
[--devices D] [--browser-devices B] (or tests/integration/with-pg tests/chaos/chaos.py ...); the
topologies are in tests/chaos/chaos_topology.py. make check runs the CI-size run,
tests/chaos/test_chaos.pgt. Exit status 0: no violation; 1: a violation; 77: skipped."""

import argparse
import json
import os
import random
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../e2e"))
sys.path.insert(0, HERE)
import synchro_e2e as e2e  # noqa: E402
from chaos_browser import BrowserDevice, browsers_missing  # noqa: E402
from chaos_checker import Checker  # noqa: E402
from chaos_churn import Churn  # noqa: E402
from chaos_clock import ClockSteps  # noqa: E402
from chaos_device import Device, HOT_ITEMS, HOT_TODOS_PER_USER  # noqa: E402
from chaos_faults import Faults  # noqa: E402
from chaos_topology import TOPOLOGIES, make_stack, missing, pick  # noqa: E402
from fault_proxy import FaultProxy  # noqa: E402

CLI = os.environ.get("SYNCHRO_E2E_CLI") or os.path.join(e2e.BUILD, "src/client/synchro-cli")
USERS = ("alice", "bob", "carol")


def parse(argv):
    ap = argparse.ArgumentParser(prog="chaos", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=None, help="the seed of every random choice (default: from the clock)")
    ap.add_argument("--minutes", type=float, default=None, help="minutes of workload and faults")
    ap.add_argument("--seconds", type=float, default=None, help="seconds of workload and faults (CI size)")
    ap.add_argument("--devices", type=int, default=6, help="simulated devices (default 6), spread over 3 users")
    ap.add_argument("--topology", default="nginx", choices=TOPOLOGIES + ("seed",),
                    help="the deployment (tests/chaos/chaos_topology.py; default nginx); seed: one picked from the seed")
    ap.add_argument("--browser-devices", type=int, default=None,
                    help="how many of the devices are browser stores (Chromium; default 1 when the web build"
                         " and Chromium exist, else 0)")
    ap.add_argument("--workers", type=int, default=4, help="synchro-fcgi responders (default 4)")
    ap.add_argument("--no-faults", action="store_true", help="workload and checker only")
    ap.add_argument("--no-churn", action="store_true",
                    help="no membership churn (tests/chaos/chaos_churn.py: shares, removals and moves of to-dos"
                         " between lists during the run)")
    ap.add_argument("--fault-every", type=float, default=3.0, help="mean seconds between faults (default 3)")
    ap.add_argument("--figures", default=None, help="write the run's figures as JSON to this file")
    ap.add_argument("--sabotage", default=None,
                    help="the checker's own test: after the final sync, break the history on purpose"
                         " (comma-separated: %s) and pass only if the checker reports each" % ",".join(sorted(SABOTAGE)))
    a = ap.parse_args(argv)
    if a.seed is None:
        a.seed = int(time.time() * 1000) % 1000000007
    if a.topology == "seed":
        a.topology = pick(a.seed)
    if a.browser_devices is None:
        why = browsers_missing()
        a.browser_devices = 0 if why else min(1, a.devices)
        if why:
            print("chaos: no browser device: %s" % why, flush=True)
    elif a.browser_devices and browsers_missing():
        ap.error("--browser-devices: %s" % browsers_missing())
    a.browser_devices = max(0, min(a.browser_devices, a.devices))
    a.duration = a.seconds if a.seconds is not None else 60.0 * (a.minutes if a.minutes is not None else 1.0)
    return a


# The checker's own test (--sabotage): each kind breaks the finished history in one way, as a
# defect would, and names the violation the checker must then report.
SABOTAGE = {
    # an accepted mutation's changelog transition disappears
    "lose": ("SET session_replication_role = replica; DELETE FROM synchro.changelog WHERE ctid ="
             " (SELECT ctid FROM synchro.changelog WHERE mutation_id IS NOT NULL ORDER BY commit_lsn DESC LIMIT 1)",
             "(lost)"),
    # an accepted mutation's transition is there twice
    "double": ("SET session_replication_role = replica; INSERT INTO synchro.changelog SELECT * FROM"
               " (SELECT commit_lsn, ordinal + 1000000, xid, table_id, pk, version, state, mutation_id, client_id,"
               " user_id, owner_before, owner_after, committed_at, written_epoch FROM synchro.changelog"
               " WHERE mutation_id IS NOT NULL ORDER BY commit_lsn LIMIT 1) x",
               "(doubled)"),
    # a row changes behind every device's back (its replicas diverge)
    "diverge": ("UPDATE public.item SET qty = qty + 1 WHERE id = (SELECT min(id) FROM public.item"
                " WHERE deleted_at IS NULL)", "diverges"),
    # a pull answered a cursor older than the one its device sent (as a replica behind the
    # device would answer), recorded as the fault proxy records every pull
    "stale_pull": (None, "older than the"),
    # every live subscription a web server answered timed out without a notification (as when
    # its publisher refuses walsync), recorded as the fault proxy records each subscription
    "live_silent": (None, "answered no live subscription with a notification"),
    # the last pull delivered a to-do of a list its user does not read (as a pull without its
    # live scope check would), recorded as the fault proxy records every pull
    "scope_leak": (None, "outside its user's scope"),
    # a user shared a list behind the devices' backs (walsync delivers its rows at the next
    # pull, which never comes): the devices lack rows of their user's scope
    "scope_share": (None, "in its user's scope) diverges"),
    # a pull answered cursor_expired to a cursor nothing expired (as a share that made a
    # device rebuild would), recorded as the fault proxy records every pull
    "expire_ahead": (None, "at or past the horizon"),
}


def scope_sabotage(kind, stack, proxy, churn, devices):
    """A list with to-dos, not all of them the user's, and a user with a device who is not its
    member now: scope_leak records one of those to-dos as delivered by a pull at the last
    position; scope_share shares the list with the user on the server alone."""
    m = churn.model
    for lst in churn.lists:
        todos = [pk for pk in churn.todos if (m.now(("todo", pk)) or (None,))[0] == lst]
        for d in devices:
            if d.retired or d.client_id is None:
                continue
            if kind == "scope_leak" and not m.now(("lm", lst, d.user)):
                theirs = [pk for pk in todos if m.now(("todo", pk))[1] != d.user]
                if theirs:
                    row = {"id": theirs[0], "list_id": lst, "owner": m.now(("todo", theirs[0]))[1], "title": "x"}
                    proxy.deliveries.append((d.client_id, churn.done, churn.done, None, [(theirs[0], row)]))
                    return True
            if kind == "scope_share" and todos and not m.now(("lm", lst, d.user)) and \
                    any(m.now(("todo", pk))[1] != d.user for pk in todos):
                stack.run_sql_file("INSERT INTO public.list_member VALUES ('%s', '%s');" % (lst, d.user))
                return True
    return False


def sabotage(stack, kinds, proxy, churn=None, devices=()):
    expect = []
    for k in kinds:
        sql, needle = SABOTAGE[k]
        if k == "live_silent":
            if not stack.live_hosts():
                print("chaos: sabotage live_silent: no live updates here (no nchan); not expected", flush=True)
                continue
            # every subscription answered 408 (nothing in time), one at least on each web server
            live = proxy.live_by_upstream
            for index, _, _ in stack.live_hosts():
                n = sum(live.pop(key) for key in [key for key in live if key[0] == index])
                live[(index, 408)] = max(1, n)
        elif k in ("scope_leak", "scope_share"):
            if churn is None or not scope_sabotage(k, stack, proxy, churn, devices):
                print("chaos: sabotage %s: no list to break it with; not expected" % k, flush=True)
                continue
        elif k == "expire_ahead":
            cid, _, answered = proxy.pulls[-1]
            proxy.expired.append((cid, answered))
        elif sql is None:
            cid, _, answered = proxy.pulls[-1]
            proxy.pulls.append((cid, answered, "c1.0000000000000000.00000000"))
        else:
            stack.run_sql_file(sql + ";")
        expect.append((k, needle))
    time.sleep(3)  # walsync materializes the direct write
    return expect


def setup_hot_rows(stack, rng):
    """The hot rows: HOT_TODOS_PER_USER to-dos of each user (shared by that user's devices)
    and the HOT_ITEMS items (every user's scope), written directly into the app tables."""
    hot = {}
    sql = []
    for user in USERS:
        hot[user] = []
        for _ in range(HOT_TODOS_PER_USER):
            pk = "%08x-0000-4000-8000-%012x" % (rng.getrandbits(32), rng.getrandbits(48))
            hot[user].append(pk)
            sql.append("INSERT INTO public.todo (id, title, owner) VALUES ('%s', 'hot', '%s');" % (pk, user))
    for i in HOT_ITEMS:
        sql.append("INSERT INTO public.item (id, label, qty) VALUES (%d, 'hot-%d', 0);" % (i, i))
    stack.run_sql_file("\n".join(sql))
    return hot


def device_loop(dev, deadline, faults, errors):
    try:
        while time.monotonic() < deadline:
            dev.round(kill_prob=faults.device_kill_prob if faults else 0.0)
            time.sleep(dev.rng.uniform(0.0, 0.3))
    except Exception:  # noqa: BLE001 - reported as a violation
        errors.append("%s: the device loop failed:\n%s" % (dev.name, traceback.format_exc()))


def run(a):
    print("chaos: topology %s, seed %d, %.0f s, %d devices (%d in a browser), %d responders, faults %s"
          % (a.topology, a.seed, a.duration, a.devices, a.browser_devices, a.workers,
             "off" if a.no_faults else "every ~%.1f s" % a.fault_every),
          flush=True)
    if not ClockSteps.CLOCK_LIB and not a.no_faults:
        print("chaos: no clock steps: libfaketime is not installed (Debian package faketime)", flush=True)
    rng = random.Random("%d/main" % a.seed)
    stack = make_stack(a.topology, a.workers)
    proxy = None
    faults = None
    churn = None
    errors = []
    devices = []
    t_start = time.monotonic()
    try:
        stack.start_all()
        stack.install_mirror()
        proxy = FaultProxy(stack.upstreams(), "%d/proxy" % a.seed, connect_timeout=stack.upstream_connect_timeout)
        hot = setup_hot_rows(stack, rng)
        if not a.no_churn:
            churn = Churn(a.seed, USERS)
            churn.setup(stack.run_sql_file)
            proxy.position = churn.position
        for i in range(a.devices):
            user = USERS[i % len(USERS)]
            # the last --browser-devices devices are browser stores (tests/chaos/chaos_browser.py)
            kind = BrowserDevice if i >= a.devices - a.browser_devices else Device
            d = kind(i, user, e2e.USERS[user], stack.dir, proxy.url, CLI, a.seed)
            d.hot_todos = hot[user]
            devices.append(d)
        for d in devices:
            rc, out = d.run("connect")
            if rc != 0:
                raise AssertionError("%s: connect failed (%d): %s" % (d.name, rc, out))
            d.read_client_id()
        if not a.no_faults:
            faults = Faults(stack, proxy, devices, a.seed, a.fault_every)
        deadline = time.monotonic() + a.duration
        threads = [threading.Thread(target=device_loop, args=(d, deadline, faults, errors), daemon=True)
                   for d in devices]
        for t in threads:
            t.start()
        if churn:
            churn.start()
        if faults:
            faults.run_until(deadline)
        for t in threads:
            t.join(a.duration + 300)
            if t.is_alive():
                errors.append("a device loop did not end")
        if churn:
            churn.finish()
            errors.extend(churn.problems)
        if faults:
            faults.finish()
        t_work = time.monotonic() - t_start
        # The final sync: every fault healed, each device syncs until nothing is left to send.
        proxy.set_rates(0.0, 0.0)
        stack.heal_nginx()
        for d in devices:
            d.settle()
        checker = Checker(stack, proxy, devices, errors, churn=churn, faults=not a.no_faults)
        checker.wait_materialized()
        for d in devices:
            d.settle(rounds=3)
        expect = sabotage(stack, a.sabotage.split(","), proxy, churn, devices) if a.sabotage else []
        checker.check()
        fig = checker.figures(faults.counts() if faults else {}, a, t_work)
        fig["topology"] = a.topology
        fig["membership_churn"] = churn.figures() if churn else "off"
        fig.update(stack.topology_figures())
        fig["browser_devices"] = a.browser_devices
        fig["browser_operations"] = sum(len(d.authored) for d in devices if isinstance(d, BrowserDevice))
        fig["faults"]["browser_tab_kill_mid_sync"] = sum(d.counts.get("tab_killed_mid_sync", 0) for d in devices)
        fig["browser_idle_stretches"] = sum(d.counts.get("idle_stretches", 0) for d in devices)
        fig["browser_idle_stretches_pulled"] = sum(d.counts.get("idle_stretches_pulled", 0) for d in devices)
        fig["walsync_exits"] = list(stack.walsync_exits)
        fig["events"] = len(stack.events)
        print("\nevents:\n" + "".join("  %6.1f s  %s\n" % e for e in stack.events), flush=True)
        # each claim of the writer lease (the first, every takeover) raised the epoch by one
        fig["walsync_takeovers"] = stack.takeovers
        fig["walsync_lease_claims"] = int(stack.q("SELECT writer_epoch FROM synchro.writer_lease", check=False) or 0)
        print_figures(fig)
        if a.figures:
            with open(a.figures, "w") as f:
                json.dump(fig, f, indent=1, sort_keys=True)
        if expect:
            missed = [k for k, needle in expect if not any(needle in v for v in checker.violations)]
            print("\nchaos: sabotage %s: the checker reported %d violation(s)%s"
                  % (a.sabotage, len(checker.violations), ", missed: " + ",".join(missed) if missed else ""))
            for v in checker.violations[:10]:
                print("  - " + v.replace("\n", "\n    "))
            return 1 if missed else 0
        if checker.violations:
            stack.keep = True
            print("\nchaos: %d VIOLATION(S) (seed %d):" % (len(checker.violations), a.seed), flush=True)
            for v in checker.violations[:60]:
                print("  - " + v.replace("\n", "\n    "), flush=True)
            print("\nreproduce the schedule with: contrib/chaos --topology %s --seed %d --seconds %.0f --devices %d"
                  " --browser-devices %d" % (a.topology, a.seed, a.duration, a.devices, a.browser_devices), flush=True)
            return 1
        print("\nchaos: no violation (topology %s, seed %d)" % (a.topology, a.seed), flush=True)
        return 0
    except Exception:  # noqa: BLE001
        stack.keep = True
        traceback.print_exc()
        print("\nchaos: the run failed (topology %s, seed %d); reproduce with: contrib/chaos --topology %s"
              " --seed %d --seconds %.0f --devices %d --browser-devices %d"
              % (a.topology, a.seed, a.topology, a.seed, a.duration, a.devices, a.browser_devices), flush=True)
        stack.show_logs()
        return 1
    finally:
        if faults:
            faults.finish()
        if churn and churn.is_alive():
            churn.finish()
        for d in devices:
            if isinstance(d, BrowserDevice):
                d.close()
        if proxy:
            proxy.close()
        stack.stop()


def print_figures(fig):
    print("\nfigures:", flush=True)
    for k in sorted(fig):
        v = fig[k]
        if isinstance(v, dict):
            print("  %s: %s" % (k, ", ".join("%s %s" % kv for kv in sorted(v.items()))))
        else:
            print("  %s: %s" % (k, v))


def main(argv):
    a = parse(argv)
    for exe in (CLI, e2e.FCGI, e2e.WALSYNC, e2e.SYNCHROCTL):
        if not os.access(exe, os.X_OK):
            print("chaos: %s not built; skipping" % exe)
            return 77
    absent = missing(a.topology)
    if absent:
        print("chaos: topology %s: %s; skipping" % (a.topology, absent))
        return 77
    if "PGHOST" not in os.environ or "SYNCHRO_PG_DATA" not in os.environ:
        print("chaos: run inside tests/integration/with-pg (contrib/chaos does)", file=sys.stderr)
        return 2
    status = run(a)
    # PostgreSQL's server log: no backend crash (with-pg checks it again after exit).
    bad = e2e.crash_lines(e2e.pg_log())
    if bad or e2e._log_problems:
        print("chaos: crash lines in the logs (seed %d):\n  %s" % (a.seed, "\n  ".join((bad + e2e._log_problems)[:20])))
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
