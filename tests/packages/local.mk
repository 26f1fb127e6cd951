# The Debian packages (debian/): built from a clean export, installed, run, purged
# (tests/packages/test_packages.sh; skips unless root with dpkg-buildpackage and the build
# dependencies). contrib/check --packages runs it alone.
TESTS += tests/packages/test_packages.sh
EXTRA_DIST += tests/packages/test_packages.sh
