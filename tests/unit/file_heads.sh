#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Every source file of src/ opens with a head of one template (doc/hacking.md, "File heads"):
# the file's name and what it holds, then its Layer, Rules, Interface and Notes sections in
# that order (tests/unit/file_heads.py, which first shows that it fails on broken heads).
top="${SYNCHRO_SRCDIR:-.}"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
exec "$py" -B "$top/tests/unit/file_heads.py" "$top"
