# The chaos suite (doc/reliability.md): a whole stack with two walsyncs, simulated
# devices on libsynchro-client through a fault proxy, random faults, a checker over the whole
# history. make check runs its CI size (test_chaos.pgt, about 100 s); contrib/chaos any size.
if HAVE_PG_SERVER
TESTS += tests/chaos/test_chaos.pgt tests/chaos/test_chaos_checker.pgt
endif
EXTRA_DIST += tests/chaos/test_chaos.pgt tests/chaos/test_chaos_checker.pgt tests/chaos/chaos.py tests/chaos/chaos_checker.py \
	tests/chaos/chaos_churn.py tests/chaos/chaos_device.py tests/chaos/chaos_disk.py tests/chaos/chaos_faults.py tests/chaos/chaos_stack.py \
	tests/chaos/chaos_topology.py tests/chaos/chaos_clock.py tests/chaos/chaos_hosts.py \
	tests/chaos/fault_proxy.py tests/chaos/chaos_browser.py tests/chaos/chaos_browser.mjs contrib/chaos doc/reliability.md \
	tests/chaos/results/2026-12-01-bad-input-and-load.md \
	tests/chaos/results/2026-12-01-histories.md \
	tests/chaos/results/2026-12-06-soaks.md \
	tests/chaos/results/2026-12-06-topologies.md \
	tests/chaos/results/2026-12-07-db-disk-full.md \
	tests/chaos/results/2026-12-08-membership-churn.md
