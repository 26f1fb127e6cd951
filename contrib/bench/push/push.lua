-- SPDX-License-Identifier: BSD-2-Clause
-- wrk script of contrib/bench/push: POST /v3/push with one registered client per wrk thread
-- (run wrk with as many threads as connections). The settings come from the Lua file named by
-- BENCH_WRK_CONF, written by bench.py:
--   mode    "fresh": every request a new batch of `batch` inserts of new rows into item;
--           "replay": every request the same batch (bench.py executed it once before).
--   batch, phase (keeps ids of different runs apart), schema {version, hash}, auth (the
--   Authorization header), clients {{id, generation}, ...} (one per thread),
--   check_replay (a 200 must carry the header replay_header, "Synchro-Replay: batch" unless
--   set otherwise), path (the URL path; /v3/push unless set: the peer's is /peer/push).
-- Rows are those of plain_sql.c's make_row(): id = phase * 10^12 + thread * 10^9 + n.
-- done() prints one line "BENCH {json}" with the counts and the latency percentiles.

local conf = dofile(os.getenv("BENCH_WRK_CONF"))
local threads = {}
local next_tid = 1

function setup(thread)
	thread:set("tid", next_tid)
	next_tid = next_tid + 1
	table.insert(threads, thread)
end

local fmt = string.format
local floor = math.floor
local mode, batch, phase = conf.mode, conf.batch, conf.phase
local path = conf.path or "/v3/push"
local replay_header = conf.replay_header or "Synchro-Replay"
local replay_value = conf.replay_value or "batch"
local headers = {
	["Authorization"] = conf.auth,
	["Synchro-Protocol"] = "3",
	["Content-Type"] = "application/json",
}
local client, schema, n, batches, fixed

-- A non-nil lowercase 8-4-4-4-12 id of (kind, phase, thread, n), unique per run.
local function uuid(kind, t, k)
	return fmt("%08x-%04x-4%03x-8000-%06x%06x", phase, t, kind, floor(k / 16777216) % 16777216,
		k % 16777216)
end

local function body_of(first, bno)
	local parts = {}
	local head = fmt('{"client_id":"%s","client_generation":%d,"batch_id":"%s","schema":%s,"mutations":[',
		client.id, client.generation, uuid(2, tid, bno), schema)
	for i = 0, batch - 1 do
		local k = first + i
		local id = fmt("%.0f", phase * 1e12 + tid * 1e9 + k)
		parts[#parts + 1] = fmt('{"mutation_id":"%s","table":"item","pk":{"field":"id","value":"%s"},'
			.. '"authored_schema":%s,"operation":"insert","client_version":"2026-11-29T10:11:12.123Z",'
			.. '"columns":{"label":"bench %s","qty":%d,"price":"%d.25","weight":%d.5,"due":"2026-12-01",'
			.. '"seen_at":"2026-11-29T10:11:12.123456Z","tags":"{\\"a\\":[1,2,3],\\"b\\":\\"x\\"}",'
			.. '"blob":"AAECAwQFBgcICQ==","ref":"%s"}}',
			uuid(1, tid, k), id, schema, id, k % 1000, k, k, uuid(0, tid, k))
	end
	return head .. table.concat(parts, ",") .. "]}"
end

function init(args)
	client = conf.clients[tid]
	schema = fmt('{"version":%d,"hash":"%s"}', conf.schema.version, conf.schema.hash)
	n, batches = 0, 0
	ok, bad, rejected, notreplay = 0, 0, 0, 0
	if mode == "replay" then
		fixed = wrk.format("POST", path, headers, body_of(0, 0))
	end
end

function request()
	if fixed then
		return fixed
	end
	local b = body_of(n, batches)
	n = n + batch
	batches = batches + 1
	return wrk.format("POST", path, headers, b)
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
	if mode == "fresh" and not body:find('"rejected":[]', 1, true) then
		rejected = rejected + 1
		if rejected <= 3 then
			io.stderr:write(fmt("thread %d: rejected mutations: %s\n", tid, body:sub(1, 600)))
		end
	end
	if conf.check_replay then
		local r = hdrs[replay_header] or hdrs[replay_header:lower()]
		if r ~= replay_value then
			notreplay = notreplay + 1
		end
	end
end

function done(summary, latency, requests)
	local t = {ok = 0, bad = 0, rejected = 0, notreplay = 0}
	for _, th in ipairs(threads) do
		for k in pairs(t) do
			t[k] = t[k] + (th:get(k) or 0)
		end
	end
	local e = summary.errors
	io.write(fmt('BENCH {"requests":%d,"duration_us":%d,"bytes":%d,"connect_errors":%d,'
		.. '"read_errors":%d,"write_errors":%d,"timeouts":%d,"non_2xx":%d,"ok":%d,"bad":%d,'
		.. '"rejected":%d,"notreplay":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"mean_us":%.1f,'
		.. '"max_us":%d}\n',
		summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.timeout,
		e.status, t.ok, t.bad, t.rejected, t.notreplay, latency:percentile(50),
		latency:percentile(90), latency:percentile(99), latency.mean, latency.max))
end
