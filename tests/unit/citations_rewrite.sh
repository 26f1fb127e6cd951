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
# "The" matches too. A line that grows past 100 columns is wrapped at a space; the rest
# joins the next line of the same comment or paragraph, which wraps in turn, so a file's
# layout changes only where its citations do. It prints what it changed and each citation
# it could not map.
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

leader = re.compile(r"^([ \t]*)(/\* |\* |-- |# |// )?")


def width(text):
    return len(text.expandtabs(8))


def prefix(line, path):
    """The indent and comment leader a continuation of line starts with."""
    m = leader.match(line)
    ind = m.group(1)
    if path.endswith(".md") or not m.group(2):
        if path.endswith(".md") and line[len(ind):].startswith("- "):
            ind += "  "
        return ind
    if m.group(2) == "/* ":
        return ind + " * "
    return ind + m.group(2)


def continues(line, pre, path):
    """Whether line continues the paragraph whose lines start with pre: in Markdown the
    next line of a paragraph, elsewhere the next line of a comment with the same leader."""
    man = re.search(r"\.[1-8]$", path) is not None
    if man:
        return bool(line.strip()) and not line.startswith((".", "'"))
    if not path.endswith(".md") and not pre.strip(" \t"):
        return False
    if not line.startswith(pre) or not line[len(pre):].strip():
        return False
    rest = line[len(pre):]
    if rest[0] in " \t" or rest.startswith(("Layer:", "- ", "*/", '"""', "|")):
        return False
    if path.endswith(".md") and re.match(r"(#|```|[0-9]+\. )", rest):
        return False
    return True


def cut_at(line, start):
    """The last space after column start where line can break within LIMIT columns."""
    best = -1
    for i, ch in enumerate(line):
        if width(line[:i]) > LIMIT:
            break
        if ch == " " and i > start:
            best = i
    return best


def reflow(lines, grown, path):
    """Wraps each grown line past LIMIT at a space. The rest goes to the start of the next
    line of the same paragraph (which may wrap in turn), or to a new line of its own."""
    out = []
    i = 0
    carry = None
    while i < len(lines):
        line = lines[i]
        mine = i in grown
        if carry is not None:
            line = carry[0] + carry[1] + " " + line[len(carry[0]):]
            carry = None
            mine = True
        if mine and width(line) > LIMIT and not (
                path.endswith(".md") and line.lstrip().startswith(("#", "|"))):
            pre = prefix(line, path)
            cut = cut_at(line, len(pre) + 1)
            if cut > 0:
                head, tail = line[:cut].rstrip(), line[cut + 1:].strip()
                out.append(head)
                if i + 1 < len(lines) and continues(lines[i + 1], pre, path):
                    carry = (pre, tail)
                    i += 1
                    continue
                lines[i] = pre + tail
                grown.add(i)
                continue
        out.append(line)
        i += 1
    return out


total = 0
for path in files:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError:
        continue
    before = text.split("\n")
    count = 0
    for rx, new, old in compiled:
        text, k = rx.subn(lambda m, new=new: new, text)
        count += k
    if not count:
        continue
    total += count
    lines = text.split("\n")
    oldset = set(before)
    grown = {i for i, l in enumerate(lines) if l not in oldset}
    lines = reflow(lines, grown, path)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print("%4d %s" % (count, path))

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
