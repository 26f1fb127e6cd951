#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Builds the browser client (make runs this with configure --enable-web): the SAME C sources
# as libsynchro-client (src/core, src/client except the libcurl transport), src/web's C and
# SQLite's amalgamation compiled with emcc into synchro-core.wasm + synchro-core.mjs, and
# the TypeScript API compiled with tsc, all into OUT/dist.
# Usage: build.sh SRCDIR OUT SOURCE... (sources relative to SRCDIR; headers are skipped)
# Environment: EMCC, NPM, NODE, WARN_CFLAGS, BUILDDIR (where config.h is).
set -eu
srcdir=$1
out=$2
shift 2
mkdir -p "$out/obj" "$out/dist"
web=$srcdir/src/web

# npm: the pinned packages (the SQLite amalgamation, TypeScript, playwright-core); scripts
# never run (better-sqlite3's would build a Node addon: only its sqlite3.c is used).
if [ ! -f "$out/node_modules/.stamp" ] || [ "$web/package-lock.json" -nt "$out/node_modules/.stamp" ]; then
	if [ "$(cd "$web" && pwd)" != "$(cd "$out" && pwd)" ]; then
		cp "$web/package.json" "$web/package-lock.json" "$out/"
	fi
	(cd "$out" && "$NPM" ci --ignore-scripts --no-audit --no-fund --loglevel=error)
	touch "$out/node_modules/.stamp"
fi
amalgamation=$out/node_modules/better-sqlite3/deps/sqlite3

# Debian's emscripten runs its JS tools with node and finds acorn (node-acorn) in
# /usr/share/nodejs, which a node not from Debian does not search by itself.
NODE_PATH=${NODE_PATH:+$NODE_PATH:}/usr/share/nodejs
export NODE_PATH

# SQLite: the only VFS is web_vfs.c's (SQLITE_OS_OTHER); temporary files in memory; one
# thread; no extension loading. The query planner's stability guarantee (QPSG): a plan never
# depends on a bound value, so a cached statement is never prepared again because its
# bindings changed (without it, every statement on the intents table, which has a partial
# index, was: a fifth of a browser insert's time went to preparing statements again).
SQLITE_FLAGS="-DSQLITE_OS_OTHER=1 -DSQLITE_THREADSAFE=0 -DSQLITE_TEMP_STORE=3
 -DSQLITE_OMIT_LOAD_EXTENSION -DSQLITE_DEFAULT_MEMSTATUS=0 -DSQLITE_DQS=0
 -DSQLITE_OMIT_DEPRECATED -DSQLITE_OMIT_SHARED_CACHE -DSQLITE_OMIT_PROGRESS_CALLBACK
 -DSQLITE_ENABLE_QPSG"
if [ ! -f "$out/obj/sqlite3.o" ] || [ "$amalgamation/sqlite3.c" -nt "$out/obj/sqlite3.o" ] ||
   [ "$(cat "$out/obj/sqlite3.flags" 2>/dev/null)" != "$(echo $SQLITE_FLAGS)" ]; then
	echo "  EMCC     sqlite3.c"
	$EMCC -O2 $SQLITE_FLAGS -c "$amalgamation/sqlite3.c" -o "$out/obj/sqlite3.o"
	echo $SQLITE_FLAGS > "$out/obj/sqlite3.flags"
fi

CFLAGS="$WARN_CFLAGS -O2 -DSY_WEB -DSY_SHA256_PORTABLE -I$BUILDDIR -I$srcdir/src/include
 -I$srcdir/src -I$srcdir/src/client -I$amalgamation"
objs="$out/obj/sqlite3.o"
for s in "$@"; do
	case $s in
	*.h | */client_transport.c | */client_curl.c) continue ;;
	esac
	o=$out/obj/$(echo "$s" | sed 's|/|_|g; s|\.c$|.o|')
	if [ ! -f "$o" ] || [ "$srcdir/$s" -nt "$o" ] || [ "$BUILDDIR/config.h" -nt "$o" ] ||
	   [ -n "$(find "$srcdir/src/include" "$srcdir/src/client" "$web" -name '*.h' -newer "$o")" ]; then
		echo "  EMCC     $s"
		$EMCC $CFLAGS -c "$srcdir/$s" -o "$o"
	fi
	objs="$objs $o"
done

echo "  EMLINK   synchro-core.wasm"
exports=$(sed -n 's/^[a-z_ *]*[ *]\(sy_web_[a-z_]*\)(.*/_\1/p' "$web/web.h" | tr '\n' ',' | sed 's/,$//')
$EMCC -O2 $objs -o "$out/dist/synchro-core.mjs" -sMODULARIZE=1 -sEXPORT_ES6=1 \
	-sENVIRONMENT=worker -sALLOW_MEMORY_GROWTH=1 -sFILESYSTEM=0 -sEXPORT_NAME=SynchroCore \
	"-sEXPORTED_FUNCTIONS=[$exports]" \
	"-sEXPORTED_RUNTIME_METHODS=['ccall','UTF8ToString']"

echo "  TSC      synchro.ts worker.ts"
"$out/node_modules/.bin/tsc" -p "$web/tsconfig.json" --outDir "$out/dist"
# The npm-style package.json of what dist holds (the build's devDependencies left out).
"$NODE" -e 'const p = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
delete p.devDependencies; process.stdout.write(JSON.stringify(p, null, 2) + "\n");' \
	"$web/package.json" > "$out/dist/package.json"
