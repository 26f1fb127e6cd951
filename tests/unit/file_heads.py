#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""Every source file of src/ (.c, .h, .ts) opens with a head of one template (doc/hacking.md,
"File heads"). After the licence line, the head comment:

- names the file on its first line, "NAME: what it holds";
- then, after a blank line, its sections in this order, each once, each starting a line:
  "Layer:", "Rules:", "Interface:", "Notes:";
- "Layer: top|middle|base of src/DIR (doc/hacking.md)." in every .c and .ts file of its
  directory DIR, and in no header (a header takes the layer of the file that defines it);
- "Rules:" cites at least one page of doc/ with an anchor (tests/unit/citations.sh checks
  that the anchor exists);
- every function "Interface:" names as name() is defined in the file, at the start of a line.

The checker first runs on broken heads of its own and fails when it passes one of them, so
that it cannot pass by reading nothing. Then it reads the tree and prints a FAIL line for each
head that breaks the template. Usage: file_heads.py SRC_DIR."""

import os
import re
import sys

SECTIONS = ("Layer", "Rules", "Interface", "Notes")
LABEL = re.compile(r"(%s):( |$)" % "|".join(SECTIONS))
LAYER = re.compile(r"Layer: (top|middle|base) of (src/[a-z]+) \(doc/hacking\.md\)\.$")
CITE = re.compile(r"doc/[A-Za-z0-9_.-]+\.md#[A-Za-z0-9_-]+")
# Whole files a doc quotes for users to copy: their head says nothing of the tree.
EXEMPT = {"src/client/example_todo.c"}


def head_lines(path, text):
    """The head comment's lines without their comment marks, or a string saying why not."""
    lines = text.split("\n")
    if path.endswith(".ts"):
        if not lines[0].startswith("// SPDX-License-Identifier:"):
            return "line 1 is not the licence line"
        out = []
        for line in lines[1:]:
            if not line.startswith("//"):
                break
            out.append(line[3:] if line.startswith("// ") else line[2:])
        return out or "no head comment after the licence line"
    if not lines[0].startswith("/* SPDX-License-Identifier:"):
        return "line 1 is not the licence line"
    if len(lines) < 2 or lines[1] != "/*":
        return "line 2 does not open the head comment (\"/*\" alone)"
    out = []
    for line in lines[2:]:
        if line == " */":
            return out
        if line == " *":
            out.append("")
        elif line.startswith(" * "):
            out.append(line[3:])
        else:
            return "a line of the head does not start with \" * \": %r" % line
    return "the head comment does not close (\" */\" alone)"


def problems(path, text):
    """What breaks the template in the head of the file at path (relative to the top)."""
    head = head_lines(path, text)
    if isinstance(head, str):
        return [head]
    name = os.path.basename(path)
    room = os.path.dirname(path)
    out = []
    if not head or not head[0].startswith(name + ": ") or len(head[0]) <= len(name) + 2:
        out.append("the head does not open with \"%s: what it holds\"" % name)
    sections = []  # (label, text of the section)
    i = 1
    while i < len(head) and head[i] != "":  # the rest of the opening paragraph
        if LABEL.match(head[i]):
            out.append("no blank line between what the file holds and its %s section"
                       % LABEL.match(head[i]).group(1))
            break
        i += 1
    for line in head[1:]:
        m = LABEL.match(line)
        if m:
            sections.append([m.group(1), line])
        elif sections:
            sections[-1][1] += " " + line
    labels = [s[0] for s in sections]
    for label in SECTIONS:
        if labels.count(label) > 1:
            out.append("the %s section appears %d times" % (label, labels.count(label)))
    order = [SECTIONS.index(l) for l in labels]
    if order != sorted(order):
        out.append("sections out of order: %s (the order is %s)"
                   % (", ".join(labels), ", ".join(SECTIONS)))
    layer = [s[1].strip() for s in sections if s[0] == "Layer"]
    if path.endswith(".h"):
        if layer:
            out.append("a header has no Layer line (its .c file says the layer)")
    elif not layer:
        out.append("no \"Layer: top|middle|base of %s (doc/hacking.md).\" line" % room)
    else:
        m = LAYER.match(layer[0])
        if not m or m.group(2) != room:
            out.append("the Layer line is not \"Layer: top|middle|base of %s (doc/hacking.md).\""
                       % room)
    code = text.split("\n */\n", 1)[-1] if not path.endswith(".ts") else text
    for label, body in sections:
        if label == "Rules" and not CITE.search(body):
            out.append("the Rules section cites no page of doc/ with an anchor")
        if label == "Interface":
            for name in sorted(set(re.findall(r"\b([A-Za-z_][A-Za-z0-9_]*)\(\)", body))):
                if not re.search(r"^\S.*\b%s\(" % re.escape(name), code, re.M):
                    out.append("the Interface section names %s(), which the file does not "
                               "define" % name)
    return out


GOOD = """/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * good.c: a file that follows the template.
 *
 * Layer: base of src/core (doc/hacking.md).
 * Rules: doc/contract.md#fingerprints (what it carries).
 * Interface: good_one() returns one.
 * Notes: A note.
 */
int good_one(void)
{
	return 1;
}
"""

BROKEN = {
    "no Layer line": GOOD.replace(" * Layer: base of src/core (doc/hacking.md).\n", ""),
    "a misplaced section": GOOD.replace(
        " * Layer: base of src/core (doc/hacking.md).\n * Rules:",
        " * Rules:").replace(" * Notes:", " * Layer: base of src/core (doc/hacking.md).\n * Notes:"),
    "a section twice": GOOD.replace(" * Notes: A note.", " * Notes: A note.\n * Notes: Another."),
    "the wrong directory": GOOD.replace("of src/core", "of src/store"),
    "no file name": GOOD.replace("good.c: a file", "A file"),
    "no blank line before the sections": GOOD.replace("template.\n *\n", "template.\n"),
    "Rules without a citation": GOOD.replace("doc/contract.md#fingerprints", "the contract"),
    "no head comment": "/* SPDX-License-Identifier: BSD-2-Clause */\nint x;\n",
    "an Interface name the file does not define": GOOD.replace("int good_one(", "int good_two("),
    "a one-line head": GOOD.replace("/*\n * good.c: a file that follows the template.\n",
                                    "/* good.c: a file that follows the template.\n"),
}


def self_check():
    failures = 0
    if problems("src/core/good.c", GOOD):
        print("FAIL: file_heads.py rejects a good head: %s"
              % "; ".join(problems("src/core/good.c", GOOD)))
        failures += 1
    for why, text in sorted(BROKEN.items()):
        if not problems("src/core/good.c", text):
            print("FAIL: file_heads.py passes a head with %s" % why)
            failures += 1
    layered_header = GOOD.replace("good.c", "good.h")
    if not problems("src/core/good.h", layered_header):
        print("FAIL: file_heads.py passes a header with a Layer line")
        failures += 1
    return failures


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else "."
    failures = self_check()
    count = 0
    for root, dirs, files in os.walk(os.path.join(top, "src")):
        # What an in-tree build of src/web writes: npm's packages, tsc's and emcc's output.
        dirs[:] = sorted(d for d in dirs if d not in ("node_modules", "dist", "obj")
                         and not d.startswith("."))
        for f in sorted(files):
            if not f.endswith((".c", ".h", ".ts")) or f.endswith(".d.ts"):
                continue
            full = os.path.join(root, f)
            path = os.path.relpath(full, top)
            if path in EXEMPT or f == "sql_migrations.c":  # generated in the build tree
                continue
            count += 1
            with open(full, encoding="utf-8") as fh:
                for p in problems(path, fh.read()):
                    print("FAIL: %s: %s" % (path, p))
                    failures += 1
    if failures:
        print("file_heads: %d problem(s) among %d files (doc/hacking.md, \"File heads\")"
              % (failures, count))
        return 1
    print("file_heads: the heads of all %d source files follow the template" % count)
    return 0


if __name__ == "__main__":
    sys.exit(main())
