# SPDX-License-Identifier: BSD-2-Clause
"""bench-live's watcher of a device program (bench.py's browser page through web_live.mjs,
zero.py's Zero client through zero/zero.mjs): the program prints one JSON line
{"ready": true} once it is subscribed, then one line {"pk": ID, "m": M} per row id it sees
for the first time, M the moment in ms on CLOCK_MONOTONIC (Node's process.hrtime), the clock
of Python's time.monotonic(): the bench times every change on that one clock. The program
ends when its stdin closes."""

import json
import subprocess
import threading


class Watcher:
    """The program argv running; seen[pk] = the time.monotonic() (s) it first saw pk."""

    def __init__(self, argv, what, cwd=None):
        self.what = what
        self.seen, self.cond = {}, threading.Condition()
        self.p = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        if not line or not json.loads(line).get("ready"):
            raise RuntimeError("%s ended before it was subscribed (exit %s)" % (what, self.p.wait()))
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.p.stdout:
            m = json.loads(line)
            with self.cond:
                self.seen.setdefault(m["pk"], m["m"] / 1000.0)
                self.cond.notify_all()

    def wait(self, pk, timeout):
        """When pk was seen (time.monotonic() seconds), or None if not within timeout s."""
        with self.cond:
            self.cond.wait_for(lambda: pk in self.seen, timeout)
            return self.seen.get(pk)

    def close(self, timeout=60):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=timeout)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()
            self.p.wait()
