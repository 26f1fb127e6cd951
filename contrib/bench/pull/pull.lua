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
local find = string.find
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
	-- JCS: members sorted, so "cursor", "has_more" and "server_time" follow "changes" at the
	-- end of the body, and a string value can never hold an unescaped quote. The client shares
	-- the server's cores: the tail alone is matched, and changes are counted with a plain find
	-- (gsub over a 600 kB page cost wrk more than a millisecond of CPU per page).
	local tail = body:sub(-400)
	local c = tail:match('%],"cursor":"([^"]*)"')
	if c then
		cursor = c
	end
	local n, pos = 0, 1
	while true do
		local at = find(body, '"op":"', pos, true)
		if not at then
			break
		end
		n = n + 1
		pos = at + 6
	end
	changes = changes + n
	if n == 0 then
		empty = empty + 1
	end
	if find(tail, '"has_more":false', 1, true) then
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
