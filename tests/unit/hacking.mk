# doc/hacking.md (the map of the tree, how to run and read the tests) is kept true: a source
# file of src/ missing from its map fails make check.
TESTS += tests/unit/hacking_map.sh
EXTRA_DIST += tests/unit/hacking_map.sh doc/hacking.md

# Each directory of src/ reads one way: no circle of calls between its files, each file's
# head comment names its layer truly, and the map lists each directory top to bottom
# (tests/unit/rooms.py, over the built objects with nm).
TESTS += tests/unit/rooms.sh
EXTRA_DIST += tests/unit/rooms.sh tests/unit/rooms.py

# Every source file of src/ opens with a head of one template: its name and what it holds,
# then Layer, Rules, Interface and Notes in that order (doc/hacking.md, "File heads").
TESTS += tests/unit/file_heads.sh
EXTRA_DIST += tests/unit/file_heads.sh tests/unit/file_heads.py

# The alerting rules (promtool check rules) and the Grafana dashboard of contrib/.
TESTS += tests/unit/metrics_contrib.sh
EXTRA_DIST += tests/unit/metrics_contrib.sh contrib/prometheus/synchro-alerts.yml \
	contrib/grafana/synchro-dashboard.json

# doc/performance.md's commands: make targets of contrib/ and settings their benches read.
TESTS += tests/unit/performance_doc.sh
EXTRA_DIST += tests/unit/performance_doc.sh

# Every citation of doc/ (doc/NAME.md and an anchor) resolves to a heading that exists;
# citations_check.sh shows that the checker fails on a broken one. citations.map and
# citations_rewrite.sh turn the old citations into anchors (a maintainer's tool).
TESTS += tests/unit/citations.sh tests/unit/citations_check.sh
EXTRA_DIST += tests/unit/citations.sh tests/unit/citations_check.sh tests/unit/citations.map \
	tests/unit/citations_rewrite.sh
