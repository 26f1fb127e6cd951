#!/bin/sh
# Replays the committed fuzz regression corpora through the fuzz targets (without libFuzzer):
# the push vectors, manifests and tests/vectors/fuzz through fuzz_push; tests/vectors/client
# through fuzz_client, whose seeds must each still be applied by the round they answer (else
# they no longer match the client's template store: tests/vectors/client/README).
set -eu
v="$SYNCHRO_SRCDIR/tests/vectors"
dirs="$v/fuzz"
for d in "$v/push" "$v/push/invalid" "$v/manifests"; do [ -d "$d" ] && dirs="$dirs $d"; done
"$SYNCHRO_BUILDDIR/contrib/fuzz/fuzz_replay" $dirs
out=$(SYNCHRO_FUZZ_CLIENT_REPORT=1 "$SYNCHRO_BUILDDIR/contrib/fuzz/fuzz_client_replay" "$v/client" 2>&1)
echo "$out"
for k in connect schema push pull rebuild; do
	echo "$out" | grep -Eq "applied.* $k=[1-9]" ||
		{ echo "fuzz_client: no seed in tests/vectors/client is applied as a $k answer" >&2; exit 1; }
done
