-- SPDX-License-Identifier: BSD-2-Clause
-- wrk script of contrib/bench/pull: contrib/bench/push/push.lua (fresh batches, one client per
-- thread; settings from BENCH_WRK_CONF as there) at a steady pace: each thread starts a request
-- every BENCH_PUSH_PERIOD_MS milliseconds on a fixed schedule. A thread that falls behind
-- (answers slower than the period) starts the next request at once and does not burst to
-- catch up, so the load never exceeds the pace.

dofile(os.getenv("BENCH_PUSH_LUA"))

local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clk, bench_timespec *ts);
]]
local ts = ffi.new("bench_timespec")
local period = tonumber(os.getenv("BENCH_PUSH_PERIOD_MS"))
local due

local function mono_ms()
	ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
	return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
end

function delay()
	local now = mono_ms()
	if due == nil then
		due = now
	end
	due = due + period
	if due < now then
		due = now
	end
	return math.floor(due - now)
end
