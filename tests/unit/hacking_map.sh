#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# doc/hacking.md's map of the tree stays true (and README's Layout): every source file under src/ (.c, .h) is in
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
# Every name of the code the map quotes (`sy_...`) is defined in src/, and a name quoted in
# parentheses right after a file (`metrics.h` (`sy_route_id`)) is defined in that file: a
# function or variable whose definition starts a line, a declaration in a header, a type or
# a macro.
defined_in() { # NAME FILE...
	grep -E -q -e "^([A-Za-z_][A-Za-z0-9_ ]*[ *])?\*?$1(\(|\[| =|;)" \
		-e "^[}] *$1;" -e "^typedef .*[ *]$1;" -e "^#define $1([( ]|$)" \
		-e "^	$1[,= ]" "$@" 2>/dev/null
}
for name in $(grep -o '`sy_[A-Za-z0-9_]*\(()\)\{0,1\}`' "$map" | tr -d '`()' | sort -u); do
	if ! defined_in "$name" $(find "$top/src" -name '*.[ch]'); then
		echo "FAIL: doc/hacking.md names $name, which src/ does not define"
		failures=$((failures + 1))
	fi
done
awk '
/^#/ {
	dir = ""
	if (match($0, /`src\/[^`]*\/`/))
		dir = substr($0, RSTART + 1, RLENGTH - 2)
	next
}
{
	line = $0
	while (match(line, /`[A-Za-z0-9_.\/-]+\.[ch]` \(`[A-Za-z_][A-Za-z0-9_]*`( and `[A-Za-z_][A-Za-z0-9_]*`)*\)/)) {
		part = substr(line, RSTART, RLENGTH)
		line = substr(line, RSTART + RLENGTH)
		n = split(part, q, "`")
		file = q[2]
		if (file !~ /^src\//)
			file = dir file
		for (i = 4; i <= n; i += 2)
			print file, q[i]
	}
}' "$map" >"$tmp/pairs"
while read -r file name; do
	case "$file" in
	src/*) path="$top/$file" ;;
	*) path=$(find "$top/src" -name "$file" | head -n 1) ;; # outside a directory's heading
	esac
	if [ -z "$path" ] || ! defined_in "$name" "$path"; then
		echo "FAIL: doc/hacking.md places $name in $file, which does not define it"
		failures=$((failures + 1))
	fi
done <"$tmp/pairs"

# The README's Layout names every entry of src/, tests/ and contrib/ (a directory with its
# slash, a program without).
readme="$top/README"
for d in src tests contrib; do
	for e in "$top/$d"/*; do
		name=${e##*/}
		case "$name" in
		*.*) continue ;; # local.mk, *.pc.in, and what an in-tree build writes
		esac
		[ -d "$e" ] || [ -x "$e" ] || continue
		pattern="^    $d/$name "
		[ -d "$e" ] && name="$name/" && pattern="^    $d/$name" # src/include/synchro/ too
		if ! grep -q "$pattern" "$readme"; then
			echo "FAIL: README's Layout does not list $d/$name"
			failures=$((failures + 1))
		fi
	done
done

n=$(wc -l <"$tmp/tree")
if [ "$failures" -ne 0 ]; then
	echo "hacking_map: $failures problem(s) among $n source files"
	exit 1
fi
echo "hacking_map: all $n source files of src/ are in doc/hacking.md's map"
exit 0
