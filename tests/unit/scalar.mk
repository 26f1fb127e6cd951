# CUnit suites owned by the scalar work; included from Makefile.am.
