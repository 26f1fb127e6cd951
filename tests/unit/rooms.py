#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""Each directory under src/ reads one way (doc/hacking.md, "Which way dependencies go"): no
file both calls and is called by another of its directory, directly or around a longer
circle. Read from the built object files with nm: file A calls file B when an external name
A's object needs is defined by B's object of the same directory. Every circle found is
printed with the names that close it; the exit status is then 1.

Usage: rooms.py BUILD_DIR [ROOM ...] (rooms default to every directory of src/ with C
objects; the WebAssembly objects of src/web are not ELF and are left out)."""

import os
import subprocess
import sys

ROOMS = ("src/core", "src/common", "src/store", "src/fcgi", "src/walsync", "src/ctl", "src/pg",
         "src/client")


def objects(build, room):
    """One object per source file of the room: libtool's (.libs) or the program's, named
    <target>-<source>.o; a source compiled for two targets defines the same names."""
    found = {}
    for sub in (".libs", "."):
        d = os.path.join(build, room, sub)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if f.endswith(".o"):
                found.setdefault(f[:-2].split("-", 1)[-1], os.path.join(d, f))
    return found


def symbols(path):
    out = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
    defined, needed = set(), set()
    for line in out.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "TDBRVWGS":
            defined.add(p[2])
        elif len(p) == 2 and p[0] == "U":
            needed.add(p[1])
    return defined, needed


def circles(graph):
    """The strongly connected components of more than one file (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def room_circles(build, room):
    objs = objects(build, room)
    owner, needs = {}, {}
    for src, path in objs.items():
        defined, needed = symbols(path)
        needs[src] = needed
        for name in defined:
            owner.setdefault(name, src)
    graph = {src: set() for src in objs}
    why = {}
    for a, needed in needs.items():
        for name in sorted(needed):
            b = owner.get(name)
            if b is not None and b != a:
                graph[a].add(b)
                why.setdefault((a, b), name)
    return len(objs), [(c, [(a, b, why[(a, b)]) for a in c for b in sorted(graph[a]) if b in c])
                       for c in circles(graph)]


def main(argv):
    build = argv[1]
    rooms = argv[2:] or ROOMS
    bad = 0
    for room in rooms:
        n, found = room_circles(build, room)
        if n == 0:
            print("rooms: %s: no objects in %s (not built here)" % (room, build))
            if room == "src/core":
                return 1
            continue
        for files, edges in found:
            bad += 1
            print("FAIL: %s: a circle of %s" % (room, ", ".join(f + ".c" for f in files)))
            for a, b, name in edges:
                print("    %s.c calls %s.c (%s)" % (a, b, name))
        if not found:
            print("ok: %s: %d files, no circle" % (room, n))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
