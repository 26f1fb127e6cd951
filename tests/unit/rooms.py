#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""Each directory under src/ reads one way (doc/hacking.md, "Which way dependencies go"): no
file both calls and is called by another of its directory, directly or around a longer
circle. Read from the built object files with nm: file A calls file B when an external name
A's object needs is defined by B's object of the same directory. Every circle found is
printed with the names that close it.

Each source file's head comment says its layer, "Layer: top|middle|base of src/DIR": a top
file (a program's entry point) is called by no other file of its directory, a base file
(the helpers everything uses) calls only base files of its directory. A file without it, or
whose calls contradict it, is printed too; so is a file that doc/hacking.md's map lists
after a file it calls (the map lists each directory top to bottom). The exit status is 1
when anything was printed as FAIL.

Usage: rooms.py SRC_DIR BUILD_DIR [ROOM ...] (rooms default to every directory of src/ with
C objects; the WebAssembly objects of src/web, built by configure --enable-web, are read
with llvm-nm; a source made in the build tree, such as src/store/sql_migrations.c, has no
head comment to read)."""

import shutil

import re

import os
import subprocess
import sys

ROOMS = ("src/core", "src/common", "src/store", "src/fcgi", "src/walsync", "src/ctl", "src/pg",
         "src/client", "src/web")
# src/web/build.sh names its objects after their sources: obj/src_web_web_api.o.
WEB_OBJECTS = "obj"
WEB_PREFIX = "src_web_"


def objects(build, room):
    """One object per source file of the room: libtool's (.libs) or the program's, named
    <target>-<source>.o; a source compiled for two targets defines the same names."""
    found = {}
    if room == "src/web":
        d = os.path.join(build, room, WEB_OBJECTS)
        if os.path.isdir(d):
            for f in sorted(os.listdir(d)):
                if f.startswith(WEB_PREFIX) and f.endswith(".o"):
                    found[f[len(WEB_PREFIX):-2]] = os.path.join(d, f)
        return found
    for sub in (".libs", "."):
        d = os.path.join(build, room, sub)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if f.endswith(".o"):
                found.setdefault(f[:-2].split("-", 1)[-1], os.path.join(d, f))
    return found


def symbols(path, tool="nm"):
    out = subprocess.run([tool, path], capture_output=True, text=True, check=True).stdout
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


def room_circles(build, room, tool="nm"):
    objs = objects(build, room)
    owner, needs = {}, {}
    for src, path in objs.items():
        defined, needed = symbols(path, tool)
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
                       for c in circles(graph)], graph


LAYER = re.compile(r"Layer: (top|middle|base) of (src/[a-z]+) \(doc/hacking.md\)")


# Whole files a doc quotes verbatim for users to copy: their head says nothing of the tree.
UNLABELLED = {("src/client", "example_todo")}  # doc/client.md's example program


def declared_layer(srcdir, room, name):
    """The layer the head comment of room/name.c declares; None when the source is not in
    the source tree; "" when its head says none (or names another directory)."""
    path = os.path.join(srcdir, room, name + ".c")
    if not os.path.exists(path) or (room, name) in UNLABELLED:
        return None
    with open(path, encoding="utf-8") as f:
        head = f.read().split("*/", 2)
    m = LAYER.search(head[1] if len(head) > 2 else "")
    return m.group(1) if m and m.group(2) == room else ""


def layer_failures(srcdir, room, graph):
    layers = {f: declared_layer(srcdir, room, f) for f in graph}
    out = []
    for f in sorted(graph):
        layer = layers[f]
        if layer == "":
            out.append("%s/%s.c: its head comment does not say \"Layer: top|middle|base of %s"
                       " (doc/hacking.md).\"" % (room, f, room))
        elif layer == "top":
            callers = sorted(g for g in graph if f in graph[g])
            if callers:
                out.append("%s/%s.c says top, but %s call it" % (room, f, ", ".join(c + ".c" for c in callers)))
        elif layer == "base":
            up = sorted(g for g in graph[f] if layers.get(g) not in ("base", None))
            if up:
                out.append("%s/%s.c says base, but calls %s (not base)" % (room, f, ", ".join(u + ".c" for u in up)))
    return out


def map_order(srcdir):
    """Each directory's .c files in the order doc/hacking.md's map names them first."""
    order, room = {}, None
    with open(os.path.join(srcdir, "doc/hacking.md"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                m = re.match(r"### `(src/[a-z]+)/`", line)
                room = m.group(1) if m else None
                continue
            if room is not None:
                for name in re.findall(r"`([A-Za-z0-9_]+)\.c`", line):
                    order.setdefault(room, [])
                    if name not in order[room]:
                        order[room].append(name)
    return order


def order_failures(room, graph, order):
    listed = order.get(room, [])
    out = []
    for a in sorted(graph):
        for b in sorted(graph[a]):
            if a in listed and b in listed and listed.index(b) < listed.index(a):
                out.append("doc/hacking.md lists %s/%s.c before %s.c, which calls it" % (room, b, a))
    return out


def main(argv):
    srcdir, build = argv[1], argv[2]
    rooms = argv[3:] or ROOMS
    bad = 0
    order = map_order(srcdir)
    for room in rooms:
        tool = "nm"
        if room == "src/web":
            tool = shutil.which("llvm-nm")
            if tool is None:
                print("rooms: src/web: no llvm-nm to read WebAssembly objects (not checked)")
                continue
        n, found, graph = room_circles(build, room, tool)
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
        more = layer_failures(srcdir, room, graph) + order_failures(room, graph, order)
        for line in more:
            bad += 1
            print("FAIL: " + line)
        if not found and not more:
            print("ok: %s: %d files, no circle" % (room, n))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
