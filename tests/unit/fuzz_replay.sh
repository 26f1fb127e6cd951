#!/bin/sh
# Replays the committed fuzz regression corpus and the push vectors through the fuzz target.
set -eu
v="$SYNCHRO_SRCDIR/tests/vectors"
dirs="$v/fuzz"
for d in "$v/push" "$v/push/invalid" "$v/manifests"; do [ -d "$d" ] && dirs="$dirs $d"; done
exec "$SYNCHRO_BUILDDIR/contrib/fuzz/fuzz_replay" $dirs
