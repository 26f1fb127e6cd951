# CUnit suites owned by the manifest work; included from Makefile.am.
UNIT_TESTS += tests/unit/test_manifest
check_PROGRAMS += tests/unit/test_manifest
TESTS += tests/unit/test_manifest
tests_unit_test_manifest_SOURCES = tests/unit/test_manifest.c
tests_unit_test_manifest_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_manifest_LDADD = $(UNIT_LDADD)

EXTRA_DIST += \
	tests/vectors/manifests/README \
	tests/vectors/manifests/example.json \
	tests/vectors/manifests/example-reordered.json \
	tests/vectors/manifests/example.jcs \
	tests/vectors/manifests/intl.json \
	tests/vectors/manifests/intl-escaped.json \
	tests/vectors/manifests/intl.jcs

UNIT_TESTS += tests/unit/test_manifest_members
check_PROGRAMS += tests/unit/test_manifest_members
TESTS += tests/unit/test_manifest_members
tests_unit_test_manifest_members_SOURCES = tests/unit/test_manifest_members.c
tests_unit_test_manifest_members_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_manifest_members_LDADD = $(UNIT_LDADD)
