# CUnit suites owned by the matrix work; included from Makefile.am.
