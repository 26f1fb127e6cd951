#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/packages/test_packages.sh: the Debian packages as a sysadmin gets them. Builds them from
# a clean export of the tree (git archive of HEAD; or, outside a checkout, a copy of a make
# dist tree) with dpkg-buildpackage, checks them with lintian (no E: or W:), installs them
# (apt-get install ./*.deb), then runs the quickstart's scenario against the installed files
# only: a PostgreSQL cluster of its own in a temporary directory (the system's server binaries,
# whose pkglibdir now holds the packaged synchro.so), synchroctl's refusals (PostgreSQL not
# running; a server that cannot load the module), synchroctl init, the example schema of
# contrib/example, the systemd units' ExecStart command lines run as their User= (there is no
# systemd here), nginx with the installed site snippet, then a push, its replay and a pull
# (curl, synchro-cli, and doc/client.md's example program built against libsynchro-client-dev).
# On the way it checks the users, the group and the file modes: each program reads its own
# file only, and only members of synchro-web reach the responders' socket.
# Last it purges the packages and checks that only the configuration files written here stay.
#
# Needs root (it installs packages) and dpkg-buildpackage with the build dependencies
# (contrib/check installs them); it skips otherwise, and when synchro packages are already
# installed (it would replace them). Run by make check; contrib/check --packages runs it alone.
# It is the only test that takes the dpkg lock. Outside a git checkout (make distcheck's tree)
# it skips unless SYNCHRO_TEST_PACKAGES=1: make check in the checkout already built them.
set -u

src=${SYNCHRO_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
pkgs="synchro-server postgresql-15-synchro libsynchro-client0 libsynchro-client-dev synchro-cli"
t0=$(date +%s)

skip() {
	echo "SKIP: test_packages: $*"
	exit 77
}
say() { printf 'test_packages: %s (%ss)\n' "$*" "$(($(date +%s) - t0))"; }
fails=0
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}
die() {
	echo "FAIL: $*" >&2
	exit 1
}

command -v dpkg-buildpackage >/dev/null 2>&1 || skip "dpkg-buildpackage is not installed (Debian: dpkg-dev)"
[ "$(id -u)" -eq 0 ] || skip "not root: the test installs and purges packages (apt-get install ./*.deb)"
command -v apt-get >/dev/null 2>&1 || skip "no apt-get"
for p in $pkgs; do
	if dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qv '^not-installed$'; then
		skip "$p is already on this machine (dpkg: $(dpkg-query -W -f='${db:Status-Abbrev}' "$p")); the test would replace it (apt-get purge $pkgs)"
	fi
done
( cd "$src" && dpkg-checkbuilddeps ) >/dev/null 2>&1 ||
	skip "missing build dependencies: $(cd "$src" && dpkg-checkbuilddeps 2>&1 | sed 's/.*Unmet build dependencies: //') (contrib/check installs them)"
pgbin=/usr/lib/postgresql/15/bin
[ -x "$pgbin/initdb" ] || skip "no PostgreSQL 15 server ($pgbin/initdb)"
command -v nginx >/dev/null 2>&1 || skip "nginx is not installed"
command -v curl >/dev/null 2>&1 || skip "curl is not installed"
id -u postgres >/dev/null 2>&1 || skip "no postgres user to run the cluster as"

if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1 && [ -e "$src/.git" ]; then
	export_from=git
elif [ "${SYNCHRO_TEST_PACKAGES:-0}" = 1 ]; then
	export_from=copy
else
	skip "not a git checkout (make distcheck's tree): make check in the checkout builds and tests the packages; SYNCHRO_TEST_PACKAGES=1 builds them from this tree"
fi

# Everything the postgres, synchro-* and www-data users read sits in a world-searchable tree.
tmp=$(mktemp -d /tmp/synchro-packages.XXXXXX) || exit 99
chmod 0755 "$tmp"
run=$tmp/run
mkdir -p "$run" "$tmp/log" "$tmp/nginx"
chmod 0755 "$run" "$tmp/log"
pids=
pg_started=no
installed=no
made_users=
for u in synchro-fcgi synchro-walsync; do
	getent passwd $u >/dev/null || made_users="$made_users $u"
done
made_group=no
getent group synchro-web >/dev/null || made_group=yes
added_www=no
conffiles_written=no

cleanup() {
	for p in $pids; do kill -TERM "$p" 2>/dev/null; done
	for p in $pids; do
		i=0
		while kill -0 "$p" 2>/dev/null && [ $i -lt 300 ]; do
			i=$((i + 1))
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null
	done
	[ -f "$run/nginx.pid" ] && kill -QUIT "$(cat "$run/nginx.pid")" 2>/dev/null
	[ "$pg_started" = yes ] &&
		runuser -u postgres -- "$pgbin/pg_ctl" -D "$tmp/pgdata" -m immediate -w stop >/dev/null 2>&1
	if [ "$installed" = yes ]; then
		# shellcheck disable=SC2086
		apt-get purge -y -qq -o DPkg::Lock::Timeout=600 $pkgs >/dev/null 2>&1
	fi
	if [ "$conffiles_written" = yes ]; then
		rm -f /etc/synchro/synchro.conf /etc/synchro/walsync.conf /etc/synchro/synchroctl.conf \
			/etc/nginx/synchro.htpasswd
		rmdir /etc/synchro 2>/dev/null
	fi
	rm -rf /run/synchro
	for u in $made_users; do
		getent passwd "$u" >/dev/null && deluser --quiet --system "$u" >/dev/null 2>&1
		getent group "$u" >/dev/null && delgroup --quiet --system "$u" >/dev/null 2>&1
	done
	[ "$added_www" = yes ] && deluser --quiet www-data synchro-web >/dev/null 2>&1
	[ "$made_group" = yes ] && getent group synchro-web >/dev/null &&
		delgroup --quiet --system synchro-web >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# --- build from a clean export --------------------------------------------------------------
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
tree=$tmp/synchro-$version
if [ "$export_from" = git ]; then
	say "building from git archive HEAD ($(git -C "$src" rev-parse --short HEAD))"
	mkdir -p "$tree"
	git -C "$src" archive --format=tar HEAD | tar -xf - -C "$tree" || die "git archive failed"
else
	say "building from a copy of $src"
	cp -a "$src" "$tree" && chmod -R u+w "$tree" || die "copying the tree failed"
	rm -rf "$tree/debian/build" "$tree/debian/build-pg"* "$tree/debian/tmp"
fi
(cd "$tmp" && dpkg-source -b "synchro-$version" >"$tmp/log/source.log" 2>&1) ||
	{ cat "$tmp/log/source.log"; die "dpkg-source -b failed"; }
jobs=$(nproc 2>/dev/null || echo 2)
(cd "$tree" && DEB_BUILD_OPTIONS="nocheck noddebs parallel=$jobs" \
	dpkg-buildpackage -us -uc -b >"$tmp/log/build.log" 2>&1) ||
	{ tail -n 60 "$tmp/log/build.log"; die "dpkg-buildpackage -us -uc -b failed"; }
say "built: $(cd "$tmp" && echo *.deb)"
for p in $pkgs; do
	[ -f "$tmp/${p}_${version}_$(dpkg --print-architecture).deb" ] || fail "no package $p"
done

# lintian at its default level: no E: and no W: on the source or on the binaries.
if command -v lintian >/dev/null 2>&1; then
	for what in "synchro_$version.dsc" "synchro_${version}_$(dpkg --print-architecture).changes"; do
		(cd "$tmp" && lintian "$what") >"$tmp/log/lintian.log" 2>&1
		if grep -E '^(E|W): ' "$tmp/log/lintian.log"; then
			fail "lintian $what: $(grep -cE '^(E|W): ' "$tmp/log/lintian.log") errors or warnings"
		fi
	done
	say "lintian: no E: or W:"
else
	fail "lintian is not installed (Debian: lintian); the packages must be lintian clean"
fi

# --- install ------------------------------------------------------------------------------------
installed=yes
(cd "$tmp" && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	-o DPkg::Lock::Timeout=600 ./*.deb) >"$tmp/log/install.log" 2>&1 ||
	{ cat "$tmp/log/install.log"; die "apt-get install ./*.deb failed"; }
say "installed"
for p in $pkgs; do
	dpkg -L "$p" >>"$tmp/files"
done

# One system user per program, each in its own group only; the socket's group starts empty.
for u in synchro-fcgi synchro-walsync; do
	getent passwd $u >/dev/null || fail "no system user $u after install"
	[ "$(id -nG $u 2>&1)" = $u ] || fail "$u is in the groups $(id -nG $u 2>&1), want $u only"
done
getent group synchro-web >/dev/null || fail "no group synchro-web after install"
[ -f /usr/share/doc/synchro-server/README.Debian ] || fail "no README.Debian (the users and synchro-web)"
[ -z "$(getent group synchro-web | cut -d: -f4)" ] ||
	fail "synchro-web holds $(getent group synchro-web | cut -d: -f4) before the administrator adds anyone"
# The samples: conffiles, each root:its program's group 0640, and each one a configuration
# the programs accept.
for f in synchro.conf.sample:synchro-fcgi walsync.conf.sample:synchro-walsync \
	synchroctl.conf.sample:root; do
	g=${f#*:}
	f=${f%:*}
	dpkg-query -W -f='${Conffiles}\n' synchro-server | grep -q " /etc/synchro/$f " ||
		fail "/etc/synchro/$f is not a conffile"
	[ "$(stat -c '%a %U:%G' "/etc/synchro/$f")" = "640 root:$g" ] ||
		fail "/etc/synchro/$f is $(stat -c '%a %U:%G' "/etc/synchro/$f"), want 640 root:$g"
	synchro-fcgi -t -c "/etc/synchro/$f" >/dev/null 2>"$tmp/err" ||
		fail "/etc/synchro/$f is refused: $(cat "$tmp/err")"
done
for f in /etc/synchro/synchro.conf /etc/synchro/walsync.conf /etc/synchro/synchroctl.conf; do
	[ ! -e "$f" ] || fail "$f exists before the administrator writes it"
done
# Enabled (the links deb-systemd-helper makes, with or without a running systemd), and inert
# until configured; the socket unit is neither.
for u in synchro-fcgi.service synchro-walsync.service; do
	[ -L "/etc/systemd/system/multi-user.target.wants/$u" ] || fail "$u is not enabled"
done
[ ! -e /etc/systemd/system/sockets.target.wants/synchro-fcgi.socket ] ||
	fail "synchro-fcgi.socket is enabled"
grep -qx 'ConditionPathExists=/etc/synchro/synchro.conf' /lib/systemd/system/synchro-fcgi.service ||
	fail "synchro-fcgi.service does not wait for /etc/synchro/synchro.conf"
grep -qx 'ConditionPathExists=/etc/synchro/walsync.conf' /lib/systemd/system/synchro-walsync.service ||
	fail "synchro-walsync.service does not wait for /etc/synchro/walsync.conf"
pkglibdir=$("$pgbin/pg_config" --pkglibdir)
[ -f "$pkglibdir/synchro.so" ] || fail "no $pkglibdir/synchro.so"
[ -f /usr/share/synchro/nginx/synchro.conf ] || fail "no /usr/share/synchro/nginx/synchro.conf"

# --- PostgreSQL ---------------------------------------------------------------------------------
mkdir -p "$tmp/pgdata"
chown postgres "$tmp/pgdata" "$run" "$tmp/log"
runuser -u postgres -- "$pgbin/initdb" -A trust -U postgres -E UTF8 --locale=C -D "$tmp/pgdata" \
	>"$tmp/log/initdb.log" 2>&1 || { cat "$tmp/log/initdb.log"; die "initdb failed"; }
cat >>"$tmp/pgdata/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$run'
port = 5432
wal_level = logical
max_replication_slots = 10
max_wal_senders = 10
CONF

# The administrator's files (synchro.conf(5)), one per program and login role, made from the
# samples with doc/operations.md's commands, as printed there.
conffiles_written=yes
install -m 0600 /etc/synchro/synchroctl.conf.sample /etc/synchro/synchroctl.conf
install -m 0640 -g synchro-walsync /etc/synchro/walsync.conf.sample /etc/synchro/walsync.conf
install -m 0640 -g synchro-fcgi /etc/synchro/synchro.conf.sample /etc/synchro/synchro.conf
# Then edited as the administrator would (conninfo, this test's writer_id and responders).
sed -i -e "s|^conninfo = .*|conninfo = host=$run port=5432 dbname=app user=postgres|" \
	/etc/synchro/synchroctl.conf
sed -i -e "s|^conninfo = .*|conninfo = host=$run port=5432 dbname=app user=synchro_ws|" \
	-e "s|^writer_id = .*|writer_id = packages-test|" /etc/synchro/walsync.conf
sed -i -e "s|^conninfo = .*|conninfo = host=$run port=5432 dbname=app user=synchro_fcgi|" \
	-e "s|^# workers = 4|workers = 2|" /etc/synchro/synchro.conf
for f in synchro.conf:640:synchro-fcgi walsync.conf:640:synchro-walsync synchroctl.conf:600:root; do
	want="${f#*:}"
	f=/etc/synchro/${f%%:*}
	[ "$(stat -c '%a:%G' "$f")" = "$want" ] || fail "$f is $(stat -c '%a:%G' "$f"), want $want"
done
# Each program reads its own file, not the other's (nor synchroctl's).
runuser -u synchro-fcgi -- cat /etc/synchro/synchro.conf >/dev/null || fail "synchro-fcgi cannot read synchro.conf"
runuser -u synchro-walsync -- cat /etc/synchro/walsync.conf >/dev/null || fail "synchro-walsync cannot read walsync.conf"
for f in walsync.conf:synchro-fcgi synchroctl.conf:synchro-fcgi synchro.conf:synchro-walsync \
	synchroctl.conf:synchro-walsync synchro.conf:www-data; do
	runuser -u "${f#*:}" -- cat "/etc/synchro/${f%:*}" >/dev/null 2>&1 &&
		fail "${f#*:} can read /etc/synchro/${f%:*}"
done

# synchroctl with PostgreSQL not running: one clear line, exit 4.
synchroctl -c /etc/synchro/synchroctl.conf init >"$tmp/out" 2>"$tmp/err"
st=$?
[ $st -eq 4 ] || fail "synchroctl init without PostgreSQL: exit $st, want 4"
grep -q '^synchroctl: cannot connect: .*is PostgreSQL running' "$tmp/err" ||
	fail "synchroctl init without PostgreSQL said: $(cat "$tmp/err")"

runuser -u postgres -- "$pgbin/pg_ctl" -D "$tmp/pgdata" -l "$tmp/log/postgresql.log" -w -t 60 start \
	>/dev/null || { cat "$tmp/log/postgresql.log"; die "PostgreSQL did not start"; }
pg_started=yes
psql() { command psql -X -q -v ON_ERROR_STOP=1 -h "$run" -U postgres "$@"; }
psql -d postgres -c 'CREATE DATABASE app' || die "createdb failed"

# A server that cannot load the module (as with the module package of another major): refused,
# nothing made.
mkdir -p "$tmp/nolib"
PGOPTIONS="-c dynamic_library_path=$tmp/nolib" synchroctl -c /etc/synchro/synchroctl.conf init \
	>"$tmp/out" 2>"$tmp/err"
st=$?
[ $st -eq 1 ] || fail "synchroctl init without a loadable module: exit $st, want 1"
grep -q '^synchroctl: migration 13 (push_function) needs the server module: install postgresql-15-synchro' "$tmp/err" ||
	fail "synchroctl init without a loadable module said: $(cat "$tmp/err")"
[ "$(psql -d app -At -c "SELECT to_regnamespace('synchro') IS NULL")" = t ] ||
	fail "a refused init left schema synchro behind"

# --- the quickstart's installation, from the installed files --------------------------------
ex=$tree/contrib/example
synchroctl -c /etc/synchro/synchroctl.conf init >"$tmp/log/init.log" 2>&1 ||
	{ cat "$tmp/log/init.log"; die "synchroctl init failed"; }
psql -d app -f "$ex/roles.sql" && psql -d app -f "$ex/schema.sql" || die "the example's roles or schema failed"
synchroctl -c /etc/synchro/synchroctl.conf schema publish "$ex/manifest.json" >>"$tmp/log/init.log" 2>&1 ||
	{ cat "$tmp/log/init.log"; die "synchroctl schema publish failed"; }
psql -d app -f "$ex/grants.sql" || die "the example's grants failed"
say "database installed (synchroctl init, example schema, publish)"

# --- the units' command lines, as the units run them ------------------------------------------
# User=, Group=, SupplementaryGroups=, UMask=, RuntimeDirectory= and each
# ExecStartPre=/ExecStart= of the installed unit; the process stays in the background
# (Type=simple). The rest of the sandboxing needs systemd: tests/packages/test_units.sh.
unit_key() { sed -n "s/^$2=//p" "/lib/systemd/system/$1" | head -n 1; }
start_unit() { # UNIT NAME
	user=$(unit_key "$1" User)
	group=$(unit_key "$1" Group)
	extra=$(unit_key "$1" SupplementaryGroups)
	rdir=$(unit_key "$1" RuntimeDirectory)
	rmode=$(unit_key "$1" RuntimeDirectoryMode)
	[ -z "$rdir" ] || install -d -o "$user" -g "$group" -m "${rmode:-0755}" "/run/$rdir"
	as="runuser -u $user -g $group${extra:+ -G $extra} --"
	saved_umask=$(umask)
	umask "$(unit_key "$1" UMask)"
	sed -n 's/^ExecStartPre=//p' "/lib/systemd/system/$1" | while read -r cmd; do
		# shellcheck disable=SC2086
		$as $cmd >>"$tmp/log/$2.log" 2>&1 || { echo "ExecStartPre=$cmd failed"; exit 1; }
	done || { cat "$tmp/log/$2.log"; die "$1: ExecStartPre failed"; }
	cmd=$(unit_key "$1" ExecStart)
	[ -n "$cmd" ] || die "$1 has no ExecStart"
	# shellcheck disable=SC2086
	setsid $as $cmd >>"$tmp/log/$2.log" 2>&1 </dev/null &
	pids="$pids $!"
	umask "$saved_umask"
}
start_unit synchro-walsync.service walsync
start_unit synchro-fcgi.service fcgi
i=0
until [ -S /run/synchro/synchro.sock ]; do
	i=$((i + 1))
	[ $i -le 300 ] || { cat "$tmp/log/fcgi.log"; die "synchro-fcgi made no socket in 30 s"; }
	sleep 0.1
done
[ "$(stat -c '%a %U:%G' /run/synchro/synchro.sock)" = "660 synchro-fcgi:synchro-web" ] ||
	fail "the socket is $(stat -c '%a %U:%G' /run/synchro/synchro.sock), want 660 synchro-fcgi:synchro-web"
# Closed until the administrator adds the web server's user to synchro-web; then open to it.
reach() { # USER: connects to the socket as USER
	runuser -u "$1" -- python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect("/run/synchro/synchro.sock")' 2>/dev/null
}
reach www-data && fail "www-data reaches the socket before it is in synchro-web"
reach synchro-walsync && fail "synchro-walsync reaches the responders' socket"
adduser www-data synchro-web >/dev/null
added_www=yes
reach www-data || fail "www-data, in synchro-web, cannot reach the socket"

# --- nginx with the installed site ---------------------------------------------------------------
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# alice/alice and bob/bob, as the quickstart's demo users.
printf 'alice:{SHA}UisnajVr3zkBPfq+os1D4UHsyeg=\nbob:{SHA}SBgazSKz7a68ikR4aKfffOYpkgo=\n' \
	>/etc/nginx/synchro.htpasswd
ngx=$tmp/nginx
{
	cat <<NGINX
daemon on;
worker_processes 1;
pid $run/nginx.pid;
error_log $tmp/log/nginx-error.log warn;
user www-data;
events { worker_connections 256; }
http {
    access_log $tmp/log/nginx-access.log;
    client_body_temp_path $ngx/body;
    fastcgi_temp_path $ngx/fastcgi;
    proxy_temp_path $ngx/proxy;
    uwsgi_temp_path $ngx/uwsgi;
    scgi_temp_path $ngx/scgi;
NGINX
	# The site as installed; only its listen port is this test's.
	sed -e "s|listen 127.0.0.1:8080;|listen 127.0.0.1:$port;|" /usr/share/synchro/nginx/synchro.conf
	echo "}"
} >"$ngx/nginx.conf"
nginx -p "$ngx" -c "$ngx/nginx.conf" -e "$tmp/log/nginx-error.log" ||
	{ cat "$tmp/log/nginx-error.log"; die "nginx did not start"; }
url=http://127.0.0.1:$port
i=0
until [ "$(curl -s "$url/healthz")" = ok ]; do
	i=$((i + 1))
	[ $i -le 300 ] || { cat "$tmp/log/fcgi.log" "$tmp/log/nginx-error.log"; die "no answer from $url/healthz"; }
	sleep 0.1
done
# doc/operations.md's way to see what runs as the user put into synchro-web.
ps -o user=,comm= -u www-data | grep -q '^www-data  *nginx$' ||
	fail "ps -o user=,comm= -u www-data does not list nginx's workers: $(ps -o user=,comm= -u www-data)"
say "synchro-walsync, synchro-fcgi and nginx run ($url)"

# --- push, replay, pull ------------------------------------------------------------------------------
sy() { curl -s -u alice:alice -H 'Synchro-Protocol: 3' -H 'Content-Type: application/json' "$@"; }
uuid() { cat /proc/sys/kernel/random/uuid; }
client=$(uuid)
r=$(sy -d '{"client_id":"'"$client"'"}' "$url/v3/connect")
gen=$(echo "$r" | sed -n 's/.*"client_generation":\([0-9]*\).*/\1/p')
schema=$(echo "$r" | sed -n 's/.*"schema":\({[^}]*}\).*/\1/p')
[ -n "$gen" ] && [ -n "$schema" ] || die "connect answered: $r"
todo=$(uuid)
push='{"batch_id":"'$(uuid)'","client_id":"'$client'","client_generation":'$gen',"schema":'$schema',
 "mutations":[{"mutation_id":"'$(uuid)'","table":"todo","pk":{"field":"id","value":"'$todo'"},
 "operation":"insert","authored_schema":'$schema',"client_version":"'$(date -u +%Y-%m-%dT%H:%M:%SZ)'",
 "columns":{"title":"buy milk","done":false}}]}'
sy -D "$tmp/h1" -o "$tmp/b1" -d "$push" "$url/v3/push"
grep -q '^HTTP/1.1 200' "$tmp/h1" || fail "push: $(head -n 1 "$tmp/h1") $(cat "$tmp/b1")"
sy -D "$tmp/h2" -o "$tmp/b2" -d "$push" "$url/v3/push"
grep -qi '^Synchro-Replay: batch' "$tmp/h2" || fail "the push again was not a replay: $(cat "$tmp/h2")"
cmp -s "$tmp/b1" "$tmp/b2" || fail "the replay's body differs from the first answer's"
[ "$(psql -d app -At -c "SELECT title FROM public.todo WHERE id = '$todo'")" = "buy milk" ] ||
	fail "the pushed todo is not in public.todo"

# synchro-cli (a device of alice): an insert synced, then a second device pulls both rows,
# through synchro-walsync's changelog (polled: walsync materializes asynchronously).
cli1() { dev=phone; SYNCHRO_PASSWORD=alice synchro-cli -d "$tmp/$dev.db" -u "$url" --user alice "$@"; }
cli2() { dev=laptop; SYNCHRO_PASSWORD=alice synchro-cli -d "$tmp/$dev.db" -u "$url" --user alice "$@"; }
cli1 connect >/dev/null 2>"$tmp/err" || fail "synchro-cli connect: $(cat "$tmp/err")"
bread=$(uuid)
cli1 insert todo "$bread" title='buy bread' >/dev/null || fail "synchro-cli insert failed"
cli1 sync --once >/dev/null 2>"$tmp/err" || fail "synchro-cli sync: $(cat "$tmp/err")"
cli2 connect >/dev/null 2>"$tmp/err" || fail "synchro-cli connect (second device): $(cat "$tmp/err")"
i=0
while :; do
	cli2 sync --once >/dev/null 2>&1
	rows=$(cli2 rows todo 2>/dev/null)
	case $rows in *"buy milk"*"buy bread"* | *"buy bread"*"buy milk"*) break ;; esac
	i=$((i + 1))
	[ $i -le 100 ] || { fail "the second device never pulled both todos: $rows"; break; }
	sleep 0.2
done

# libsynchro-client-dev: doc/client.md's example program, built with pkg-config against the
# installed headers and library, syncs as a third device and lists what it pulled.
if command -v cc >/dev/null 2>&1; then
	# shellcheck disable=SC2046
	cc -std=c11 -o "$tmp/example_todo" "$tree/src/client/example_todo.c" \
		$(pkg-config --cflags --libs libsynchro-client) -luuid 2>"$tmp/err" ||
		fail "example_todo does not build against libsynchro-client-dev: $(cat "$tmp/err")"
	ldd "$tmp/example_todo" | grep -Eq 'libsynchro-client.so.0 => (/usr)?/lib/' ||
		fail "example_todo is not linked to the installed libsynchro-client.so.0"
	SYNCHRO_PASSWORD=alice "$tmp/example_todo" "$tmp/tablet.db" "$url" alice 'buy tea' >"$tmp/out" 2>"$tmp/err" ||
		fail "example_todo failed: $(cat "$tmp/err")"
	grep -q 'buy tea' "$tmp/out" || fail "example_todo did not list its todo: $(cat "$tmp/out")"
fi
say "push, replay and pull answered"

# --- stop, purge -------------------------------------------------------------------------------
kill -QUIT "$(cat "$run/nginx.pid")" 2>/dev/null
rm -f "$run/nginx.pid"
for p in $pids; do kill -TERM "$p" 2>/dev/null; done
for p in $pids; do
	i=0
	while kill -0 "$p" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 600 ] || { fail "a unit's process ($p) did not stop on SIGTERM within 60 s"; break; }
		sleep 0.1
	done
done
pids=
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq -o DPkg::Lock::Timeout=600 $pkgs \
	>"$tmp/log/purge.log" 2>&1 || { cat "$tmp/log/purge.log"; die "apt-get purge failed"; }
installed=no
say "purged"
for p in $pkgs; do
	s=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)
	case $s in '' | 'un ' | un) ;; *) fail "$p is still known to dpkg after purge ($s)" ;; esac
done
# Of every file and directory of its own the packages installed (directories such as /usr/bin
# are shared), only /etc/synchro stays, holding the files the administrator wrote.
left=$(sort -u "$tmp/files" | while read -r f; do
	[ -e "$f" ] || [ -L "$f" ] || continue
	if [ -d "$f" ]; then # a directory, or a link to one (/lib on a merged /usr)
		case $f in *synchro*) ;; *) continue ;; esac
	fi
	echo "$f"
done)
[ "$left" = /etc/synchro ] || fail "left behind after purge: $(echo "$left" | tr '\n' ' ')"
[ "$(cd /etc/synchro && ls | tr '\n' ' ')" = "synchro.conf synchroctl.conf walsync.conf " ] ||
	fail "/etc/synchro after purge holds: $(ls /etc/synchro | tr '\n' ' ')"
for l in /etc/systemd/system/multi-user.target.wants/synchro-fcgi.service \
	/etc/systemd/system/multi-user.target.wants/synchro-walsync.service; do
	[ ! -e "$l" ] && [ ! -L "$l" ] || fail "$l left behind after purge"
done
find /var/lib/systemd/deb-systemd-helper-enabled -name '*synchro*' 2>/dev/null | grep -q . &&
	fail "deb-systemd-helper still records a synchro unit"
# The system users and the group stay, as Debian's packages leave theirs (a uid may own files).
for u in synchro-fcgi synchro-walsync; do
	getent passwd $u >/dev/null || fail "the system user $u went with the purge"
done
getent group synchro-web >/dev/null || fail "the group synchro-web went with the purge"

say "done: $fails failures"
[ "$fails" -eq 0 ]
