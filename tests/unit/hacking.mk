# doc/hacking.md (the map of the tree, how to run and read the tests) is kept true: a source
# file of src/ missing from its map fails make check.
TESTS += tests/unit/hacking_map.sh
EXTRA_DIST += tests/unit/hacking_map.sh doc/hacking.md
