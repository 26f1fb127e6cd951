#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# doc/performance.md's commands stay true. Every line of its ```sh blocks must be a make target
# of the benchmarks run in the build directory, `[NAME=VALUE ...] make bench-...`: the target
# must be a rule of contrib/ (contrib/local.mk, contrib/bench/*/local.mk) and each NAME a
# setting the bench's own files read. The push and core commands are also run as printed, in a
# short run, by tests/e2e/test_bench_push.pgt, the live one by tests/e2e/test_bench_live.pgt;
# the others (minutes long, valgrind, a replica) are checked here only.
set -u
LC_ALL=C
export LC_ALL

top="${SYNCHRO_SRCDIR:-.}"
doc="$top/doc/performance.md"
if [ ! -r "$doc" ]; then
	echo "performance_doc: $doc is missing" >&2
	exit 1
fi
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM

awk '/^```sh$/ { on = 1; next } /^```/ { on = 0 } on && NF' "$doc" >"$tmp/commands"
n=$(wc -l <"$tmp/commands")
if [ "$n" -eq 0 ]; then
	echo "FAIL: doc/performance.md has no \`\`\`sh block of commands"
	exit 1
fi
fail=0
while IFS= read -r line; do
	target=
	vars=
	for word in $line; do
		case $word in
		make) ;;
		bench-*) target=$word ;;
		[A-Z]*=*) vars="$vars ${word%%=*}" ;;
		*)
			echo "FAIL: '$line': '$word' is not NAME=VALUE, make or a bench-* target"
			fail=1
			;;
		esac
	done
	case $line in
	*make\ bench-*) ;;
	*)
		echo "FAIL: '$line' is not [NAME=VALUE ...] make bench-..."
		fail=1
		continue
		;;
	esac
	if ! cat "$top"/contrib/local.mk "$top"/contrib/bench/*/local.mk 2>/dev/null |
		grep -q "^$target:"; then
		echo "FAIL: '$line': no rule $target in contrib/"
		fail=1
		continue
	fi
	case $target in
	bench-push*) dir=push ;;
	bench-client*) dir=client ;;
	*) dir=${target#bench-} ;;
	esac
	for v in $vars; do
		if ! grep -rqw "$v" "$top/contrib/bench/$dir"; then
			echo "FAIL: '$line': contrib/bench/$dir reads no $v"
			fail=1
		fi
	done
done <"$tmp/commands"
[ "$fail" -eq 0 ] || exit 1
echo "performance_doc: $n commands of doc/performance.md name a bench target and its settings"
