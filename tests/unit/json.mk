# CUnit suites owned by the json work; included from Makefile.am.
