#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Rewrites the old citations of the tree into anchors of doc/, as tests/unit/citations.map
# lists them. It is a tool for maintainers, not a test: run it from the top of a clean
# checkout, read the diff, then run tests/unit/citations.sh with CITATIONS_STRICT=1.
#
#   tests/unit/citations_rewrite.sh [MAP]
#
# Each line of the map is OLD, a tab, NEW. The script replaces OLD with NEW in every file
# git lists under src/, tests/, sql/, doc/, conf/ and contrib/, in README, .clang-format and
# .editorconfig. Longer entries go first. A space in OLD also matches a line break and the
# comment leader of the next line (" * ", "-- ", "# ", "// "). When OLD starts with "the",
# "The" matches too. A line that grows past 100 columns is wrapped at a space, with the
# line's own indent and comment leader; C files are then laid out by clang-format (if
# present) so that `make format-check` still passes. It prints what it changed and each
# citation it could not map.
set -eu
map="${1:-tests/unit/citations.map}"
if [ ! -r "$map" ]; then
	echo "citations_rewrite: $map is missing (run from the top of the tree)" >&2
	exit 2
fi
exec python3 - "$map" <<'PYEOF'
import os
import re
import subprocess
import sys

LIMIT = 100
mapfile = sys.argv[1]
entries = []
with open(mapfile, encoding="utf-8") as f:
    for n, line in enumerate(f, 1):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        if line.count("\t") != 1:
            sys.exit("%s:%d: want OLD<TAB>NEW" % (mapfile, n))
        old, new = line.split("\t")
        entries.append((old, new))
        if old.startswith("the "):
            up = "The " + new[4:] if new.startswith("the ") else new
            entries.append(("The " + old[4:], up))
entries.sort(key=lambda e: -len(e[0]))

GAP = r"(?:[ \t]+|[ \t]*\n[ \t]*(?:\*(?!/)|--|//|#)?[ \t]*)"


def pattern(old):
    parts = [re.escape(w) for w in old.split(" ")]
    # A citation never starts or ends inside a word.
    head = r"(?<![A-Za-z0-9_])" if old[0].isalnum() else ""
    tail = r"(?![A-Za-z0-9_])" if old[-1].isalnum() else ""
    return re.compile(head + GAP.join(parts) + tail)


compiled = [(pattern(o), n, o) for o, n in entries]

files = subprocess.run(
    ["git", "ls-files", "--", "src", "tests", "sql", "doc", "conf", "contrib", "README",
     ".clang-format", ".editorconfig"],
    check=True, capture_output=True, text=True).stdout.split()
files = [f for f in files if not os.path.basename(f).startswith("citations")
         and os.path.isfile(f)]

leader = re.compile(r"^([ \t]*)(\* |-- |# |// |\"\"\")?")


def wrap(line, path):
    """Wraps one line that grew past LIMIT at its last space before LIMIT."""
    out = []
    is_md = path.endswith(".md")
    while len(line.expandtabs(8)) > LIMIT:
        cut = line.rfind(" ", 0, LIMIT)
        m = leader.match(line)
        indent = m.group(1)
        lead = m.group(2) or ""
        if lead == '"""':
            lead = ""
        if is_md:
            lead = "  " if line.lstrip().startswith("- ") else ""
            if line.lstrip().startswith("#"):
                break
        if cut <= len(indent) + len(lead) + 1:
            break
        out.append(line[:cut].rstrip())
        line = indent + lead + line[cut + 1:].lstrip()
    out.append(line)
    return out


total = 0
changed_c = []
for path in files:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError:
        continue
    count = 0
    for rx, new, old in compiled:
        def repl(m):
            return new
        text2, k = rx.subn(repl, text)
        if k:
            text = text2
            count += k
    if not count:
        continue
    total += count
    with open(path, encoding="utf-8") as f:
        before = f.read().split("\n")
    longest = max(len(l.expandtabs(8)) for l in before)
    lines = []
    for line in text.split("\n"):
        if len(line.expandtabs(8)) > max(LIMIT, longest) or \
                (len(line.expandtabs(8)) > LIMIT and line not in before):
            lines.extend(wrap(line, path))
        else:
            lines.append(line)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    if path.endswith((".c", ".h")):
        changed_c.append(path)
    print("%4d %s" % (count, path))

if changed_c:
    try:
        subprocess.run(["clang-format", "-i"] + changed_c, check=True)
    except FileNotFoundError:
        print("citations_rewrite: no clang-format; check `make format-check` by hand")
print("citations_rewrite: %d citations rewritten" % total)

left = re.compile(r"\bADR\b|\bPROTOCOL(\.md)?\b|\bARCHITECTURE\.md\b|\bSTYLE\.md\b")
unmapped = 0
for path in files:
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if left.search(line):
                    print("not mapped: %s:%d: %s" % (path, n, line.strip()))
                    unmapped += 1
    except UnicodeDecodeError:
        pass
print("citations_rewrite: %d citations not mapped" % unmapped)
PYEOF
