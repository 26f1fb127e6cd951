# CUnit suites owned by the push work; included from Makefile.am.
