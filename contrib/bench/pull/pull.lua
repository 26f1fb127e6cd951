-- SPDX-License-Identifier: BSD-2-Clause
-- wrk script of contrib/bench/pull: POST /v3/pull page after page, each wrk thread one client
-- following its own cursor (run wrk with as many threads as connections). Settings from the
-- Lua file named by BENCH_WRK_CONF, written by bench.py: auth, schema {version, hash}, limit,
-- clients {{id, generation, cursor}, ...} (one per thread).
-- done() prints one line "BENCH {json}" with pages, changes delivered and latency percentiles.

local conf = dofile(os.getenv("BENCH_WRK_CONF"))
local threads = {}
local next_tid = 1

function setup(thread)
	thread:set("tid", next_tid)
	next_tid = next_tid + 1
	table.insert(threads, thread)
end

local fmt = string.format
local headers = {
	["Authorization"] = conf.auth,
	["Synchro-Protocol"] = "3",
	["Content-Type"] = "application/json",
}
local client, schema, cursor

function init(args)
	client = conf.clients[tid]
	cursor = client.cursor
	schema = fmt('{"version":%d,"hash":"%s"}', conf.schema.version, conf.schema.hash)
	ok, bad, changes, empty, caught_up = 0, 0, 0, 0, 0
end

function request()
	return wrk.format("POST", "/v3/pull", headers,
		fmt('{"client_id":"%s","client_generation":%d,"schema":%s,"cursor":"%s","limit":%d}',
			client.id, client.generation, schema, cursor, conf.limit))
end

function response(status, hdrs, body)
	if status ~= 200 then
		bad = bad + 1
		if bad <= 3 then
			io.stderr:write(fmt("thread %d: HTTP %d: %s\n", tid, status, body:sub(1, 300)))
		end
		return
	end
	ok = ok + 1
	-- JCS: members sorted, so the page's own "cursor" is the first one outside "changes",
	-- and a string value can never hold an unescaped quote.
	local c = body:match('"cursor":"([^"]*)"')
	if c then
		cursor = c
	end
	local _, n = body:gsub('"op":"', "")
	changes = changes + n
	if n == 0 then
		empty = empty + 1
	end
	if body:find('"has_more":false', 1, true) then
		caught_up = caught_up + 1
	end
end

function done(summary, latency, requests)
	local t = {ok = 0, bad = 0, changes = 0, empty = 0, caught_up = 0}
	for _, th in ipairs(threads) do
		for k in pairs(t) do
			t[k] = t[k] + (th:get(k) or 0)
		end
	end
	local e = summary.errors
	io.write(fmt('BENCH {"requests":%d,"duration_us":%d,"bytes":%d,"socket_errors":%d,"non_2xx":%d,'
		.. '"ok":%d,"bad":%d,"changes":%d,"empty":%d,"caught_up":%d,"p50_us":%d,"p99_us":%d}\n',
		summary.requests, summary.duration, summary.bytes,
		e.connect + e.read + e.write + e.timeout, e.status, t.ok, t.bad, t.changes, t.empty,
		t.caught_up, latency:percentile(50), latency:percentile(99)))
end
