#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# contrib/prometheus/synchro-alerts.yml passes `promtool check rules` and
# contrib/grafana/synchro-dashboard.json is a JSON dashboard whose every panel has a query.
# promtool missing is a failure, never a skip: contrib/check puts it on PATH (Debian's
# prometheus package, promtool alone, without installing the server). Whether the names
# they use exist in real output is tests/e2e/test_metrics.pgt's last case.
set -u
top="${SYNCHRO_SRCDIR:-.}"
rules="$top/contrib/prometheus/synchro-alerts.yml"
dash="$top/contrib/grafana/synchro-dashboard.json"
fail=0
if ! command -v promtool >/dev/null 2>&1; then
	echo "metrics_contrib: promtool not found on PATH (contrib/check installs it;" \
	     "Debian: the prometheus package)" >&2
	exit 1
fi
promtool check rules "$rules" || fail=1
python3 - "$dash" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
assert d.get("title") and d.get("uid"), "a dashboard needs a title and a uid"
panels = d["panels"]
assert len(panels) >= 10, "too few panels"
ids = [p["id"] for p in panels]
assert len(set(ids)) == len(ids), "panel ids repeat"
for p in panels:
    assert p.get("targets"), "panel %r has no query" % p.get("title")
    for t in p["targets"]:
        assert "synchro_" in t["expr"], "panel %r: %r names no synchro metric" % (p["title"], t["expr"])
print("dashboard: %d panels" % len(panels))
PY
exit $fail
