#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/unit/citations.sh fails when it should. It runs on a scratch tree: a copy of the
# pages of doc/ (with the names of outside documents blanked) and one source file.
# - A true citation passes.
# - A missing anchor, a missing page, or a link within a page to a missing anchor fails.
# - A citation of a document outside the tree fails, unless CITATIONS_STRICT=0.
# The broken citations are split by quotes, so that this file itself cites nothing broken.
set -u
LC_ALL=C
export LC_ALL

top="${SYNCHRO_SRCDIR:-.}"
check="$top/tests/unit/citations.sh"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM
failures=0

# A scratch tree: the pages of doc/ and one C file whose comment cites what the case says.
scratch() {
	rm -rf "$tmp/tree"
	mkdir -p "$tmp/tree/src" "$tmp/tree/doc"
	for page in "$top"/doc/*.md; do
		sed -E 's/\b(ADR|PROTOCOL(\.md)?|ARCHITECTURE\.md|STYLE\.md)\b/X/g' "$page" \
			>"$tmp/tree/doc/${page##*/}"
	done
	printf '/* %s */\nint x;\n' "$1" >"$tmp/tree/src/cite.c"
}

# expect STATUS NAME [ENV...]: runs citations.sh on the scratch tree.
expect() {
	want=$1
	name=$2
	shift 2
	env CITATIONS_STRICT=0 SYNCHRO_SRCDIR="$tmp/tree" "$@" sh "$check" >"$tmp/out" 2>&1
	got=$?
	if [ "$want" = pass ] && [ "$got" -eq 0 ]; then
		echo "ok: $name"
	elif [ "$want" = fail ] && [ "$got" -ne 0 ] && grep -q '^FAIL: .*src/cite.c:1' "$tmp/out"; then
		echo "ok: $name ($(grep -m1 '^FAIL' "$tmp/out"))"
	else
		echo "FAIL: $name: wanted $want, citations.sh exited $got:"
		sed 's/^/    /' "$tmp/out"
		failures=$((failures + 1))
	fi
}

scratch "doc/contract.md#exact-replay: a replay writes nothing."
expect pass "a true citation resolves"
expect pass "a true citation resolves with CITATIONS_STRICT=1" CITATIONS_STRICT=1

scratch "doc/contract.md#exact-replay""s: a replay writes nothing."
expect fail "a missing anchor fails"

scratch "doc/contract""s.md#exact-replay: a replay writes nothing."
expect fail "a missing page fails"

scratch "doc/contract.md#offline-tools""-1: no second heading of that name."
expect fail "a duplicate slug that does not exist fails"

scratch "ADR \"Exact replay\": a replay writes nothing."
expect pass "an outside citation only counts with CITATIONS_STRICT=0"
expect fail "an outside citation fails by default" CITATIONS_STRICT=

scratch "PROTOCOL.md §5: the push request."
expect fail "a section of PROTOCOL.md fails with CITATIONS_STRICT=1" CITATIONS_STRICT=1

scratch "doc/contract.md#exact-replay: a replay writes nothing."
printf '\nSee [the rule](#no-such-rule).\n' >>"$tmp/tree/doc/contract.md"
env CITATIONS_STRICT=0 SYNCHRO_SRCDIR="$tmp/tree" sh "$check" >"$tmp/out" 2>&1
if [ $? -ne 0 ] && grep -q '^FAIL: doc/contract.md:[0-9]* links to #no-such-rule' "$tmp/out"; then
	echo "ok: a link within a page to a missing anchor fails"
else
	echo "FAIL: a link within a page to a missing anchor passed:"
	sed 's/^/    /' "$tmp/out"
	failures=$((failures + 1))
fi

[ "$failures" -eq 0 ]
