#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/e2e/test_readme.sh: every command README shows is run as printed. Each indented line
# outside "Layout" is a command; this test runs the quick start's (contrib/quickstart on a free
# port with make check's build, then the curl and synchro-cli examples quickstart prints, the
# example web app at the address it prints (page, modules and .wasm, by their content types), then
# README's own lines after it: . var/env, psql, synchroctl -c var/synchroctl.conf ..., and
# contrib/quickstart stop) and the offline tools', from a directory holding contrib/ (a link to
# this tree's) and var/, as a reader in the top of a clone would. The lines run elsewhere are
# listed below with what runs them; a README line in neither list fails the test, so a
# command added to README or changed in it cannot go untested.
set -u

src=${SYNCHRO_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${SYNCHRO_BUILDDIR:-}
skip() {
	echo "SKIP: test_readme: $*"
	exit 77
}
fails=0
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

[ -n "$build" ] && [ -x "$build/src/ctl/synchroctl" ] && [ -x "$build/src/fcgi/synchro-fcgi" ] ||
	{ echo "test_readme: no build in SYNCHRO_BUILDDIR='$build'" >&2; exit 99; }
for c in nginx curl psql python3; do
	command -v "$c" >/dev/null 2>&1 || skip "$c is not installed"
done
# contrib/quickstart would install what is missing (apt): only the package test takes the dpkg
# lock, so a machine without every one of quickstart's packages skips instead.
for p in $(sed -n '/^pkgs="/,/"$/p' "$src/contrib/quickstart" | tr -d '"' | sed 's/^pkgs=//'); do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		skip "$p is not installed (contrib/quickstart would install it; contrib/check does)"
done

# The commands of README: indented lines outside "Layout", "# comment" tails dropped.
cmds=$(awk '
	NR > 1 && /^-+$/ { section = prev; next }
	{ prev = $0 }
	section != "Layout" && /^    [^ ]/ { sub(/^    /, ""); sub(/ +# .*$/, ""); print }
' "$src/README")
[ -n "$cmds" ] || { fail "found no command in README"; exit 1; }

# Run elsewhere: contrib/check is what CI runs (.ci/run), and it runs autoreconf -fi,
# configure --enable-werror, make and make check (out of tree).
elsewhere='contrib/check
autoreconf -fi
./configure --enable-werror
make && make check'
for w in 'autoreconf -fi' '--enable-werror' 'make -j"$jobs" check' 'make -j"$jobs" >make.out'; do
	grep -qF -- "$w" "$src/contrib/check" || fail "contrib/check no longer runs '$w' (README: Building by hand)"
done
grep -q 'contrib/check' "$src/.ci/run" || fail ".ci/run no longer runs contrib/check"
# Run here, in this order.
quick_before='contrib/quickstart'
quick_after='. var/env
psql -c '"'TABLE todo'"'
synchroctl -c var/synchroctl.conf client list
synchroctl -c var/synchroctl.conf schema show
contrib/quickstart stop'
offline='synchroctl canonicalize < value.json
synchroctl fingerprint --user alice < push.json'
known=$(printf '%s\n%s\n%s\n%s\n' "$elsewhere" "$quick_before" "$quick_after" "$offline")
echo "$cmds" | while IFS= read -r c; do
	echo "$known" | grep -qxF -- "$c" ||
		{ echo "FAIL: README shows '$c', which no test runs (tests/e2e/test_readme.sh)" >&2; exit 1; }
done || fails=$((fails + 1))
echo "$known" | while IFS= read -r c; do
	echo "$cmds" | grep -qxF -- "$c" ||
		{ echo "FAIL: tests/e2e/test_readme.sh runs '$c', which README no longer shows" >&2; exit 1; }
done || fails=$((fails + 1))

# As root the cluster runs as postgres and nginx's workers as www-data: a world-searchable
# directory under /tmp (quickstart adds o+x where it must, and says so).
tmp=$(mktemp -d /tmp/synchro-readme.XXXXXX) || exit 99
chmod 0755 "$tmp"
ln -s "$src/contrib" "$tmp/contrib"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cleanup() {
	(cd "$tmp" && SYNCHRO_BUILD_DIR=$build contrib/quickstart stop >/dev/null 2>&1)
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
cd "$tmp" || exit 99
export SYNCHRO_PORT=$port SYNCHRO_BUILD_DIR=$build
unset SYNCHRO_STATE_DIR PGHOST PGPORT PGUSER PGDATABASE PGSERVICE PGOPTIONS

# --- contrib/quickstart, and what it prints to paste ----------------------------------------
sh -c "$quick_before" >"$tmp/quickstart.out" 2>&1 || {
	cat "$tmp/quickstart.out"
	for f in "$tmp"/var/log/*.log "$tmp"/var/*.log; do [ -f "$f" ] && tail -n 20 "$f"; done
	fail "contrib/quickstart failed"
	exit 1
}
url=http://127.0.0.1:$port
grep -q "^Synchro runs on $url " "$tmp/quickstart.out" || fail "quickstart did not say where it runs"
# Its configuration files are readable by their user only.
for f in synchro.conf walsync.conf synchroctl.conf; do
	[ "$(stat -c %a "$tmp/var/$f")" = 600 ] || fail "var/$f has mode $(stat -c %a "$tmp/var/$f"), want 600"
done
# The example block: from "Synchro runs on" to "In a browser:" (or "The database:" in a build
# without the browser client), pasted into sh as printed.
sed -n '/^Synchro runs on /,/^\(In a browser\|The database\):/p' "$tmp/quickstart.out" | sed '1d;$d' >"$tmp/examples.sh"
grep -q 'v3/push' "$tmp/examples.sh" || fail "quickstart printed no push example"
# live updates: alice's subscription hears of the push the examples make
curl -s -u alice:alice --max-time 60 -o "$tmp/live.out" "$url/v3/live" &
live=$!
sleep 1
sh "$tmp/examples.sh" >"$tmp/examples.out" 2>&1 || fail "quickstart's examples exited $?"
wait $live
grep -q '^{"cursor":"c1\.[0-9a-f]*\.[0-9a-f]*"}$' "$tmp/live.out" ||
	fail "quickstart's live updates: alice's subscription heard nothing of her push ($(cat "$tmp/live.out"))"
grep -q '"client_generation":1' "$tmp/examples.out" || fail "examples: connect gave no generation 1"
grep -qi '^Synchro-Replay: batch' "$tmp/examples.out" || fail "examples: the second push was not a replay"
grep -qx 'ok' "$tmp/examples.out" || fail "examples: /healthz did not answer ok"
grep -q 'buy bread' "$tmp/examples.out" || fail "examples: synchro-cli rows lacks the todo it synced"
# The web app's address as printed: the page, its modules and the browser client's WebAssembly,
# each with its content type (a module or .wasm served otherwise does not load in a browser).
app=$(sed -n 's/^In a browser: \([^ ]*\) .*/\1/p' "$tmp/quickstart.out")
if [ -f "$build/src/web/dist/synchro-core.wasm" ]; then
	[ "$app" = "$url/app/" ] || fail "quickstart printed no 'In a browser: $url/app/' line (got '$app')"
fi
if [ -n "$app" ]; then
	for f in '|text/html|<title>To-dos' 'app.js|text/javascript|from "./todos.js"' \
		'todos.js|text/javascript|from "./dist/synchro.js"' 'app.css|text/css|' \
		'dist/synchro.js|text/javascript|' 'dist/worker.js|text/javascript|' \
		'dist/synchro-core.mjs|text/javascript|' 'dist/synchro-core.wasm|application/wasm|'; do
		path=${f%%|*}
		rest=${f#*|}
		type=${rest%%|*}
		has=${rest#*|}
		got=$(curl -s -o "$tmp/app.body" -w '%{http_code} %{content_type}' "$app$path")
		[ "$got" = "200 $type" ] || fail "GET $app$path: '$got', not '200 $type'"
		[ -z "$has" ] || grep -qF -- "$has" "$tmp/app.body" || fail "GET $app$path: no '$has' in it"
	done
	cmp -s "$tmp/app.body" "$build/src/web/dist/synchro-core.wasm" ||
		fail "GET ${app}dist/synchro-core.wasm is not the build's"
	got=$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' "$url/app")
	[ "$got" = "301 $url/app/" ] || fail "GET $url/app: '$got', not a redirect to $url/app/"
fi
# The two lines after the examples, each as printed after its label.
for label in 'The database' 'Administration'; do
	line=$(sed -n "s/^$label: //p" "$tmp/quickstart.out")
	[ -n "$line" ] || { fail "quickstart printed no '$label:' line"; continue; }
	sh -c "$line" >"$tmp/line.out" 2>&1 || fail "quickstart's '$label: $line' failed: $(cat "$tmp/line.out")"
done

# --- README's lines after quickstart, in one shell as a reader types them --------------------
printf '%s\n' "set -e" "$quick_after" >"$tmp/after.sh"
sh "$tmp/after.sh" >"$tmp/after.out" 2>&1 || fail "README's quick start lines failed: $(cat "$tmp/after.out")"
grep -q 'buy milk' "$tmp/after.out" || fail "psql -c 'TABLE todo' did not show the pushed todo"
grep -q 'alice' "$tmp/after.out" || fail "synchroctl client list did not list alice's clients"
grep -q 'permission denied' "$tmp/after.out" && fail "README's synchroctl lines were refused: $(cat "$tmp/after.out")"
[ ! -f "$tmp/var/run/synchro-fcgi.pid" ] || fail "contrib/quickstart stop left synchro-fcgi's pid file"

# --- the offline tools, on a value and a push of the golden vectors ---------------------------
cp "$src/tests/vectors/push/03-update.json" "$tmp/push.json"
printf '{"b":[1.0,"\\u00e9"],"a":1E2}\n' >"$tmp/value.json"
n=0
echo "$offline" | while IFS= read -r c; do
	n=$((n + 1))
	sh -c ". var/env; $c" >"$tmp/offline.$n" 2>"$tmp/offline.err" ||
		{ echo "FAIL: README's '$c' failed: $(cat "$tmp/offline.err")" >&2; exit 1; }
done || fails=$((fails + 1))
printf '{"a":100,"b":[1,"\303\251"]}' | cmp -s - "$tmp/offline.1" ||
	fail "synchroctl canonicalize printed: $(cat "$tmp/offline.1")"
cmp -s "$tmp/offline.2" "$src/tests/vectors/push/03-update.expected" ||
	fail "synchroctl fingerprint printed otherwise than tests/vectors/push/03-update.expected"

echo "test_readme: $(echo "$cmds" | wc -l) README commands, $fails failures"
[ "$fails" -eq 0 ]
