# The Debian packages (debian/): built from a clean export, installed, run, purged
# (tests/packages/test_packages.sh; skips unless root with dpkg-buildpackage and the build
# dependencies). contrib/check --packages runs it alone.
# The systemd units as shipped: verified, their sandboxing and users, their exposure
# (tests/packages/test_units.sh; no root needed).
TESTS += tests/packages/test_packages.sh tests/packages/test_units.sh
EXTRA_DIST += tests/packages/test_packages.sh tests/packages/test_units.sh
