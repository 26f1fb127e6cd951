#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Every directory under src/ reads one way: no circle of calls between its files
# (tests/unit/rooms.py over the built objects; doc/hacking.md "Which way dependencies go"),
# and each file's head comment says its layer truly. A circle that comes back fails make
# check and is named with the calls that close it.
top="${SYNCHRO_SRCDIR:-.}"
build="${SYNCHRO_BUILDDIR:-.}"
if ! command -v nm >/dev/null 2>&1; then
	echo "rooms: SKIP: no nm (binutils)"
	exit 77
fi
py=/usr/bin/python3
[ -x "$py" ] || py=python3
exec "$py" -B "$top/tests/unit/rooms.py" "$top" "$build"
