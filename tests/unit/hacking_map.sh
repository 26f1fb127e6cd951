#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# doc/hacking.md's map of the tree stays true: every source file under src/ (.c, .h) is in
# it, and, in a git checkout, every src/ file it names exists. A file is named in the map
# either by its whole path in backquotes (`src/fcgi/router.c`) or by its name in backquotes
# (`router.c`) under the heading of its directory (### `src/fcgi/`).
set -u
LC_ALL=C
export LC_ALL

top="${SYNCHRO_SRCDIR:-.}"
map="$top/doc/hacking.md"
if [ ! -r "$map" ]; then
	echo "hacking_map: $map is missing" >&2
	exit 1
fi
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM

# The files the map names, one path a line.
awk '
/^#/ {
	dir = ""
	if (match($0, /`src\/[^`]*\/`/))
		dir = substr($0, RSTART + 1, RLENGTH - 2)
	next
}
{
	line = $0
	while (match(line, /`[A-Za-z0-9_.\/-]+\.[ch]`/)) {
		name = substr(line, RSTART + 1, RLENGTH - 2)
		line = substr(line, RSTART + RLENGTH)
		if (name ~ /^src\//)
			print name
		else if (dir != "" && name !~ /\//)
			print dir name
	}
}' "$map" | sort -u >"$tmp/named"

# The source files of the tree: git's list in a checkout, else what the tarball holds.
# (A tarball unpacked inside a checkout, as make distcheck does, is not the checkout.)
gittop=$(git -C "$top" rev-parse --show-toplevel 2>/dev/null || true)
if [ -n "$gittop" ] && [ "$(cd "$gittop" && pwd -P)" = "$(cd "$top" && pwd -P)" ]; then
	checkout=yes
	(cd "$top" && git ls-files --cached --others --exclude-standard -- 'src/*.c' 'src/*.h') |
		while read -r f; do [ -e "$top/$f" ] && echo "$f"; done | sort -u >"$tmp/tree"
else
	checkout=no
	(cd "$top" && find src -type f \( -name '*.c' -o -name '*.h' \)) | sort -u >"$tmp/tree"
fi

failures=0
for f in $(comm -23 "$tmp/tree" "$tmp/named"); do
	echo "FAIL: $f is not in doc/hacking.md's map (add it under its directory)"
	failures=$((failures + 1))
done
if [ "$checkout" = yes ]; then
	# Generated files (sql_migrations.c) are named in the map but not kept in git.
	for f in $(comm -13 "$tmp/tree" "$tmp/named"); do
		case "$f" in
		src/store/sql_migrations.c) continue ;;
		esac
		echo "FAIL: doc/hacking.md's map names $f, which is not in the tree"
		failures=$((failures + 1))
	done
fi
n=$(wc -l <"$tmp/tree")
if [ "$failures" -ne 0 ]; then
	echo "hacking_map: $failures problem(s) among $n source files"
	exit 1
fi
echo "hacking_map: all $n source files of src/ are in doc/hacking.md's map"
exit 0
