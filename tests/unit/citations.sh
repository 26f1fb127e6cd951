#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Every citation of a page of doc/ resolves. A citation is a page's path, a `#` and an
# anchor, as in doc/contract.md#exact-replay. It counts anywhere in src/, tests/, sql/, doc/,
# conf/, contrib/ and README. The anchor must be the GitHub slug of a heading of that page
# (outside code blocks), or an explicit <a id="..."> or <a name="...">. The script fails when
# a citation names a missing page or a missing anchor, or when a link within a page of doc/,
# [text](#anchor), names an anchor that the page does not have.
#
# It also fails when anything still cites a document that is not in the tree (the old names
# of the contract's sources). With CITATIONS_STRICT=0 it only counts them.
# tests/unit/citations_check.sh runs this script on broken copies and expects it to fail.
set -u
LC_ALL=C
export LC_ALL

top="${SYNCHRO_SRCDIR:-.}"
if [ ! -r "$top/doc/contract.md" ]; then
	echo "citations: $top/doc/contract.md is missing" >&2
	exit 1
fi
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM

dirs=""
for d in src tests sql doc conf contrib README .clang-format .editorconfig; do
	[ -e "$top/$d" ] && dirs="$dirs $d"
done

# The anchors of each page of doc/, "page#anchor" a line.
for page in "$top"/doc/*.md; do
	name="doc/${page##*/}"
	awk -v page="$name" '
	/^[ \t]*(```|~~~)/ { fence = !fence; next }
	fence { next }
	/^#+[ \t]/ {
		h = $0
		sub(/^#+[ \t]+/, "", h)
		sub(/[ \t#]+$/, "", h)
		h = tolower(h)
		slug = ""
		for (i = 1; i <= length(h); i++) {
			c = substr(h, i, 1)
			if (c ~ /[a-z0-9_-]/ || c > "\177")
				slug = slug c
			else if (c == " ")
				slug = slug "-"
		}
		if (slug in seen)
			out = slug "-" seen[slug]
		else
			out = slug
		seen[slug]++
		print page "#" out
	}
	{
		line = $0
		while (match(line, /<a (id|name)="[^"]+"/)) {
			a = substr(line, RSTART, RLENGTH)
			sub(/^<a (id|name)="/, "", a)
			sub(/"$/, "", a)
			print page "#" a
			line = substr(line, RSTART + RLENGTH)
		}
	}' "$page"
done | sort -u >"$tmp/anchors"

# The citations, "file:line:page#anchor" a line.
(cd "$top" && grep -rnoE 'doc/[A-Za-z0-9_.-]+\.md#[A-Za-z0-9_-]*[A-Za-z0-9_]' $dirs) \
	>"$tmp/cited" || true

failures=0
total=0
while IFS= read -r hit; do
	total=$((total + 1))
	where=${hit%:*}
	target=${hit##*:}
	if ! grep -qxF "$target" "$tmp/anchors"; then
		if [ -e "$top/${target%%#*}" ]; then
			echo "FAIL: $where cites $target: no such anchor in ${target%%#*}"
		else
			echo "FAIL: $where cites $target: no such page"
		fi
		failures=$((failures + 1))
	fi
done <"$tmp/cited"

# Links inside a page of doc/, [text](#anchor), resolve within that page.
for page in "$top"/doc/*.md; do
	name="doc/${page##*/}"
	grep -noE '\]\(#[^)]*\)' "$page" | sed -E "s|^([0-9]+):\]\(#(.*)\)$|$name:\1:$name#\2|"
done >"$tmp/links"
while IFS= read -r hit; do
	total=$((total + 1))
	target=${hit##*:}
	if ! grep -qxF "$target" "$tmp/anchors"; then
		echo "FAIL: ${hit%:*} links to #${target#*#}: no such anchor in ${target%%#*}"
		failures=$((failures + 1))
	fi
done <"$tmp/links"

# Citations of documents that are not in the tree. This script and its companions name
# them on purpose.
(cd "$top" && grep -rnoE '\bADR\b|\bPROTOCOL(\.md)?\b|\bARCHITECTURE\.md\b|\bSTYLE\.md\b' \
	$dirs) | grep -vE '^tests/unit/citations[^:]*:' >"$tmp/outside" || true
outside=$(wc -l <"$tmp/outside" | tr -d ' ')

echo "citations: $total citations of doc/ anchors, $failures broken"
echo "citations: $outside citations of documents outside the tree remain"
if [ "${CITATIONS_STRICT:-1}" = 1 ] && [ "$outside" -gt 0 ]; then
	sed 's/^/FAIL: outside citation: /' "$tmp/outside"
	failures=$((failures + outside))
fi
[ "$failures" -eq 0 ]
