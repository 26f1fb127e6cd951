#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# synchroctl canonicalize and fingerprint (doc/contract.md#offline-tools) over the golden vectors:
# exit statuses, exact stdout bytes, and the one-line stderr message.
set -u

ctl="${SYNCHRO_BUILDDIR:-.}/src/ctl/synchroctl"
vec="${SYNCHRO_SRCDIR:-.}/tests/vectors"
if [ ! -x "$ctl" ]; then
	echo "ctl_offline: $ctl is not built" >&2
	exit 99
fi
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM

failures=0
checks=0
fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}
pass() {
	checks=$((checks + 1))
}

# run NAME EXPECTED_STATUS CMD... < stdin: status, stdout in $tmp/out, stderr in $tmp/err
run() {
	run_what=$1
	run_want=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	run_got=$?
	if [ "$run_got" -ne "$run_want" ]; then
		fail "$run_what: exit $run_got, expected $run_want: $(head -c 300 "$tmp/err")"
		return 1
	fi
	pass
	return 0
}

# The stderr of a refusal is exactly one line.
one_line() {
	if [ "$(wc -l <"$tmp/err")" -ne 1 ] || [ -s "$tmp/out" ]; then
		fail "$1: expected one stderr line and no output"
	else
		pass
	fi
}

same() { # what file expected
	if cmp -s "$2" "$3"; then
		pass
	else
		fail "$1: output differs from $3"
	fi
}

# --- fingerprint: golden vectors ------------------------------------------------
n=0
for req in "$vec"/push/[0-9]*.json; do
	base=${req%.json}
	name=${base##*/}
	user=alice
	[ -f "$base.user" ] && user=$(cat "$base.user")
	n=$((n + 1))
	if run "$name" 0 "$ctl" fingerprint --user "$user" <"$req"; then
		same "$name" "$tmp/out" "$base.expected"
		[ -s "$tmp/err" ] && fail "$name: stderr not empty"
	fi
	if run "$name --preimages" 0 "$ctl" fingerprint --user="$user" --preimages <"$req"; then
		same "$name --preimages" "$tmp/out" "$base.preimages"
	fi
	# whitespace and member order are transport details: the JCS form fingerprints the same
	"$ctl" canonicalize <"$req" >"$tmp/canon"
	if run "$name canonical" 0 "$ctl" fingerprint --user "$user" <"$tmp/canon"; then
		same "$name canonical" "$tmp/out" "$base.expected"
	fi
	# canonicalize is idempotent
	if run "$name canonicalize twice" 0 "$ctl" canonicalize <"$tmp/canon"; then
		same "$name canonicalize twice" "$tmp/out" "$tmp/canon"
	fi
done
[ "$n" -ge 14 ] || fail "only $n fingerprint vectors found in $vec/push"

# --- fingerprint: negative vectors, the exact 400 message -------------------------
n=0
for req in "$vec"/push/invalid/*.json; do
	base=${req%.json}
	name=invalid/${base##*/}
	n=$((n + 1))
	if run "$name" 2 "$ctl" fingerprint --user alice <"$req"; then
		printf 'synchroctl: fingerprint: %s\n' "$(cat "$base.message")" >"$tmp/want"
		same "$name" "$tmp/err" "$tmp/want"
		one_line "$name"
	fi
done
[ "$n" -ge 78 ] || fail "only $n negative vectors found in $vec/push/invalid"

# --- size limits: 1,048,576 octets of input, for both tools -----------------------
head -c 1048577 /dev/zero | tr '\0' ' ' >"$tmp/big"
if run "fingerprint oversized" 2 "$ctl" fingerprint --user alice <"$tmp/big"; then
	printf 'synchroctl: fingerprint: (root): request body exceeds 1048576 octets\n' >"$tmp/want"
	same "fingerprint oversized" "$tmp/err" "$tmp/want"
fi
if run "canonicalize oversized" 2 "$ctl" canonicalize <"$tmp/big"; then
	printf 'synchroctl: canonicalize: input exceeds 1048576 octets\n' >"$tmp/want"
	same "canonicalize oversized" "$tmp/err" "$tmp/want"
fi
# exactly the limit is read and canonicalized: {"a":"aaa..."} of 1048576 octets
{
	printf '{"a":"'
	head -c 1048568 /dev/zero | tr '\0' 'a'
	printf '"}'
} >"$tmp/limit"
if [ "$(wc -c <"$tmp/limit")" -ne 1048576 ]; then
	fail "limit input is not 1048576 octets"
elif run "canonicalize at the limit" 0 "$ctl" canonicalize <"$tmp/limit"; then
	same "canonicalize at the limit" "$tmp/out" "$tmp/limit"
fi

# --- canonicalize ------------------------------------------------------------------
for m in "$vec"/manifests/*.json; do
	jcs=${m%.json}.jcs
	[ -f "$jcs" ] || continue
	if run "canonicalize ${m##*/}" 0 "$ctl" canonicalize <"$m"; then
		same "canonicalize ${m##*/}" "$tmp/out" "$jcs"
	fi
done
printf ' [ 1.50 , "\\u00e9\\/" , {"b":1E2,"a":-0} ] \n' >"$tmp/in"
printf '[1.5,"\303\251/",{"a":0,"b":100}]' >"$tmp/want"
if run "canonicalize numbers and escapes" 0 "$ctl" canonicalize <"$tmp/in"; then
	same "canonicalize numbers and escapes" "$tmp/out" "$tmp/want"
fi
for bad in '' '{' '{"a":1,"a":2}' '[1,]' '"\ud800"' '1 2' 'nul'; do
	printf '%s' "$bad" >"$tmp/in"
	if run "canonicalize invalid '$bad'" 2 "$ctl" canonicalize <"$tmp/in"; then
		one_line "canonicalize invalid '$bad'"
		grep -q '^synchroctl: canonicalize: invalid JSON at byte [0-9]*: ' "$tmp/err" ||
			fail "canonicalize invalid '$bad': message $(cat "$tmp/err")"
	fi
done
# a number JCS cannot write
printf '[1e400]' >"$tmp/in"
run "canonicalize 1e400" 2 "$ctl" canonicalize <"$tmp/in" && one_line "canonicalize 1e400"

# --- usage -------------------------------------------------------------------------
: >"$tmp/empty"
if run "fingerprint without --user" 2 "$ctl" fingerprint <"$tmp/empty"; then
	grep -q '^usage: synchroctl fingerprint --user USER' "$tmp/err" ||
		fail "fingerprint without --user: no usage line"
fi
run "fingerprint --user without value" 2 "$ctl" fingerprint --user <"$tmp/empty"
run "fingerprint unknown option" 2 "$ctl" fingerprint --user alice --bogus <"$tmp/empty"
run "canonicalize with an argument" 2 "$ctl" canonicalize extra <"$tmp/empty"
if run "fingerprint empty user" 2 "$ctl" fingerprint --user "" <"$vec/push/01-insert-empty-columns.json"; then
	printf 'synchroctl: fingerprint: user: empty\n' >"$tmp/want"
	same "fingerprint empty user" "$tmp/err" "$tmp/want"
fi
if run "fingerprint control in user" 2 "$ctl" fingerprint --user "$(printf 'a\tb')" \
	<"$vec/push/01-insert-empty-columns.json"; then
	one_line "fingerprint control in user"
fi

# --- never crash: every JSONTestSuite case gives 0 or 2 -------------------------------
if [ -n "${SYNCHRO_TESTDATA:-}" ] && [ -d "$SYNCHRO_TESTDATA/jsontestsuite" ]; then
	for f in "$SYNCHRO_TESTDATA"/jsontestsuite/*.json; do
		"$ctl" canonicalize <"$f" >/dev/null 2>&1
		st=$?
		[ "$st" -eq 0 ] || [ "$st" -eq 2 ] || fail "canonicalize ${f##*/}: exit $st"
		"$ctl" fingerprint --user alice <"$f" >/dev/null 2>&1
		st=$?
		[ "$st" -eq 2 ] || fail "fingerprint ${f##*/}: exit $st"
		pass
	done
	# RFC 8785's own vectors through the tool
	if [ -d "$SYNCHRO_TESTDATA/rfc8785/input" ]; then
		for f in "$SYNCHRO_TESTDATA"/rfc8785/input/*.json; do
			if run "rfc8785 ${f##*/}" 0 "$ctl" canonicalize <"$f"; then
				same "rfc8785 ${f##*/}" "$tmp/out" \
					"$SYNCHRO_TESTDATA/rfc8785/output/${f##*/}"
			fi
		done
	fi
else
	echo "ctl_offline: no public test data; JSONTestSuite and RFC 8785 cases skipped"
fi

echo "ctl_offline: $checks checks passed, $failures failed"
[ "$failures" -eq 0 ]
