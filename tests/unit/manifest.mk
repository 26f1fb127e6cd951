# CUnit suites owned by the manifest work; included from Makefile.am.
