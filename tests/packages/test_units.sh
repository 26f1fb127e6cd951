#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/packages/test_units.sh: the systemd units of conf/systemd as shipped. systemd-analyze
# verify finds no error in them (their ExecStart= pointed at this build's programs), the
# sandboxing directives doc/operations.md "The units' sandboxing" lists are there, the two
# services run as two users of their own, and `systemd-analyze security --offline=yes` rates
# each no worse than the exposure doc/operations.md reports (synchro-fcgi 1.4, walsync 1.1).
# Needs no root and no running systemd; skips without systemd-analyze 250 or later.
set -u

src=${SYNCHRO_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${SYNCHRO_BUILDDIR:-$PWD}
units=$src/conf/systemd
fails=0
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

command -v systemd-analyze >/dev/null 2>&1 || { echo "SKIP: no systemd-analyze"; exit 77; }
v=$(systemd-analyze --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p')
[ "${v:-0}" -ge 250 ] || { echo "SKIP: systemd-analyze $v has no security --offline"; exit 77; }

tmp=$(mktemp -d /tmp/synchro-units.XXXXXX) || exit 99
trap 'rm -rf "$tmp"' EXIT
for u in synchro-fcgi.service synchro-fcgi.socket synchro-walsync.service; do
	[ -f "$units/$u" ] || { fail "no $units/$u"; continue; }
	sed -e "s|/usr/sbin/synchro-fcgi|$build/src/fcgi/synchro-fcgi|g" \
		-e "s|/usr/sbin/synchro-walsync|$build/src/walsync/synchro-walsync|g" "$units/$u" >"$tmp/$u"
done
(cd "$tmp" && systemd-analyze verify --man=no ./synchro-fcgi.service ./synchro-fcgi.socket \
	./synchro-walsync.service) >"$tmp/verify" 2>&1 || fail "systemd-analyze verify: $(cat "$tmp/verify")"
[ -s "$tmp/verify" ] && fail "systemd-analyze verify said: $(cat "$tmp/verify")"

key() { sed -n "s/^$2=//p" "$units/$1"; }
for u in synchro-fcgi.service synchro-walsync.service; do
	for want in NoNewPrivileges=yes ProtectSystem=strict PrivateTmp=yes ProtectHome=yes \
		CapabilityBoundingSet= SystemCallFilter=@system-service \
		'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6' UMask=0077 PrivateDevices=yes \
		ProtectKernelTunables=yes ProtectKernelModules=yes ProtectKernelLogs=yes \
		ProtectControlGroups=yes LockPersonality=yes MemoryDenyWriteExecute=yes \
		RestrictNamespaces=yes RestrictRealtime=yes RestrictSUIDSGID=yes; do
		grep -qx "$want" "$units/$u" || fail "$u lacks $want"
	done
done
[ "$(key synchro-fcgi.service User)" = synchro-fcgi ] || fail "synchro-fcgi.service: User=$(key synchro-fcgi.service User)"
[ "$(key synchro-walsync.service User)" = synchro-walsync ] ||
	fail "synchro-walsync.service: User=$(key synchro-walsync.service User)"
[ "$(key synchro-fcgi.service SupplementaryGroups)" = synchro-web ] ||
	fail "synchro-fcgi.service: SupplementaryGroups=$(key synchro-fcgi.service SupplementaryGroups)"
[ -z "$(key synchro-walsync.service SupplementaryGroups)" ] || fail "synchro-walsync.service has SupplementaryGroups="
[ "$(key synchro-fcgi.socket SocketGroup)" = synchro-web ] || fail "synchro-fcgi.socket: SocketGroup=$(key synchro-fcgi.socket SocketGroup)"
[ "$(key synchro-fcgi.socket SocketMode)" = 0660 ] || fail "synchro-fcgi.socket: SocketMode=$(key synchro-fcgi.socket SocketMode)"

# The exposure, times ten, that doc/operations.md reports for each unit.
for u in synchro-fcgi.service:14 synchro-walsync.service:11; do
	max=${u#*:}
	u=${u%:*}
	systemd-analyze security --offline=yes --threshold="$max" "$tmp/$u" >"$tmp/security" 2>&1 ||
		fail "$u: $(tail -n 1 "$tmp/security"), above $max/10; doc/operations.md reports otherwise"
	echo "$u: $(tail -n 1 "$tmp/security")"
done

echo "test_units: $fails failures"
[ "$fails" -eq 0 ]
