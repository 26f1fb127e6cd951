// SPDX-License-Identifier: BSD-2-Clause
// contrib/bench/push/peer-fast/server.js: the push benchmark's fast peer, the same upload
// endpoint as the docs peer (contrib/bench/push/peer) written by a team that cares about speed:
// fastify and postgres.js instead of express and node-postgres, one multi-row statement per
// operation kind per batch instead of one statement per mutation, and pipelined round trips.
// Behind the same nginx as /v3/push (which authenticates and passes X-Remote-User).
//
// POST /peer-fast/push takes the body /v3/push takes and answers as the docs peer does:
//   - the stored response when its batch_id is already in bench_peer.fast_batches (the
//     idempotency key; header Idempotent-Replayed: true), 409 when another user stored it;
//   - otherwise, in one transaction on one connection: BEGIN and the batch's write statements
//     in one round trip, then the batch's key and response and COMMIT in a second one; answers
//     {batch_id, server_time, accepted: [...applied], rejected: [...conflict]};
//   - 400 for a body it cannot use, 422 for a batch the database refused, 503 (retryable) for
//     any other database error.
// The writes: the batch is cut into runs in which no primary key repeats (a key's second
// mutation starts a new run, so mutations of one row apply in order); a run's mutations are
// grouped by operation and column set, each group one statement over unnest() of one array
// per column: INSERT ... SELECT ... ON CONFLICT (id) DO NOTHING, UPDATE ... FROM unnest(...)
// WHERE id = m.id AND version = m.base, DELETE ... USING unnest(...) WHERE ... version =
// m.base. Each statement returns, for every mutation of its group, the version it wrote (the
// mutation applied) or the row's version before the statement (a conflict; null when there is
// no row). Values travel as text arrays and PostgreSQL casts them (bytea from base64).
// The body's checks, the error answers, the stored answer and the node:cluster primary are
// the docs peer's too (../peer_common.cjs).
// Environment: PEER_PORT (127.0.0.1), PEER_WORKERS (node:cluster processes), PGHOST, PGPORT,
// PGDATABASE, PGUSER. Logs name no body, row or response.
import common from '../peer_common.cjs';

const PORT = Number(process.env.PEER_PORT || 0);

// The one synced table of the bench, in the peer's own schema: its writable columns and the
// SQL expression that turns the column's text array element (m.c) into the column's type.
const TABLES = {
	item: {
		relation: 'bench_peer.fast_item',
		pk: 'id',
		columns: {
			label: 'm.c', qty: 'm.c::integer', price: 'm.c::numeric', weight: 'm.c::double precision',
			due: 'm.c::date', seen_at: 'm.c::timestamptz', tags: 'm.c::jsonb', ref: 'm.c::uuid',
			blob: "decode(m.c, 'base64')",
		},
	},
};
// A wire value as the text PostgreSQL casts (objects as their JSON text).
function text(v) {
	if (v === null || v === undefined)
		return null;
	return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

// The statement of one group (table, operation, sorted column names), built once per process
// and prepared once per connection. $1 the ids, then (update, delete) $2 the base versions,
// then one text array per column. Its rows: id, applied (the version written, or for a delete
// 'deleted'), current (the version before the statement when not applied).
const statements = new Map();
function groupStatement(table, op, cols) {
	const key = table + ':' + op + ':' + cols.join(',');
	let s = statements.get(key);
	if (s !== undefined)
		return s;
	const t = TABLES[table];
	const q = (c) => '"' + c + '"';
	const arrays = ['$1::bigint[]'];
	const names = ['id'];
	if (op !== 'insert') {
		arrays.push('$2::bigint[]');
		names.push('base');
	}
	cols.forEach((c, i) => {
		arrays.push('$' + (arrays.length + 1) + '::text[]');
		names.push('c' + i);
	});
	const m = 'm(' + names.join(', ') + ') AS (SELECT * FROM unnest(' + arrays.join(', ') + '))';
	const value = (c, i) => t.columns[c].replace('m.c', 'm.c' + i);
	const current = 'CASE WHEN w.id IS NULL THEN (SELECT x.version FROM ' + t.relation + ' x WHERE x.' + q(t.pk) +
		' = m.id) END::text AS current';
	let w;
	if (op === 'insert') {
		w = 'INSERT INTO ' + t.relation + ' (' + q(t.pk) + ', ' + cols.map(q).join(', ') + ') SELECT m.id, ' +
			cols.map(value).join(', ') + ' FROM m ON CONFLICT (' + q(t.pk) + ') DO NOTHING RETURNING ' + q(t.pk) +
			' AS id, version::text AS applied';
	} else if (op === 'update') {
		w = 'UPDATE ' + t.relation + ' t SET ' + cols.map((c, i) => q(c) + ' = ' + value(c, i)).join(', ') +
			', version = t.version + 1 FROM m WHERE t.' + q(t.pk) + ' = m.id AND t.version = m.base RETURNING t.' +
			q(t.pk) + ' AS id, t.version::text AS applied';
	} else {
		w = 'DELETE FROM ' + t.relation + ' t USING m WHERE t.' + q(t.pk) + ' = m.id AND t.version = m.base ' +
			"RETURNING t." + q(t.pk) + " AS id, 'deleted' AS applied";
	}
	s = 'WITH ' + m + ', w AS (' + w + ') SELECT m.id::text AS id, w.applied, ' + current +
		' FROM m LEFT JOIN w ON w.id = m.id';
	statements.set(key, s);
	return s;
}

// The batch's write statements in order: [{text, params, mutations}], one per group of a run.
function plan(ms) {
	const out = [];
	let seen = new Set();
	let groups = new Map();
	const flush = () => {
		for (const g of groups.values())
			out.push(g);
		seen = new Set();
		groups = new Map();
	};
	for (const m of ms) {
		if (seen.has(m.pk.value))
			flush();
		seen.add(m.pk.value);
		const cols = m.operation === 'delete' ? [] : Object.keys(m.columns).sort();
		const key = m.table + ':' + m.operation + ':' + cols.join(',');
		let g = groups.get(key);
		if (g === undefined) {
			g = { text: groupStatement(m.table, m.operation, cols), cols, op: m.operation, mutations: [],
				params: [[]] };
			if (m.operation !== 'insert')
				g.params.push([]);
			for (let i = 0; i < cols.length; i++)
				g.params.push([]);
			groups.set(key, g);
		}
		g.mutations.push(m);
		g.params[0].push(m.pk.value);
		let p = 1;
		if (m.operation !== 'insert')
			g.params[p++].push(m.base_version);
		for (const c of g.cols)
			g.params[p++].push(text(m.columns[c]));
	}
	flush();
	return out;
}

// Each mutation's answer from its group's rows.
function outcomes(g, rows, into) {
	const byId = new Map();
	for (const r of rows)
		byId.set(r.id, r);
	for (const m of g.mutations) {
		const r = byId.get(String(BigInt(m.pk.value)));
		const out = { mutation_id: m.mutation_id, table: m.table, pk: m.pk, operation: m.operation };
		if (r !== undefined && r.applied !== null) {
			out.status = 'applied';
			out.server_version = m.operation === 'delete' ? null : r.applied;
		} else {
			out.status = 'conflict';
			out.server_version = r === undefined ? null : r.current;
		}
		into.set(m, out);
	}
}

const LOOKUP = 'SELECT user_name, response FROM bench_peer.fast_batches WHERE batch_id = $1';
const STORE = 'INSERT INTO bench_peer.fast_batches (batch_id, user_name, response) VALUES ($1, $2, $3)';

// One of peer_common.cjs's answers ({status, headers, body}).
function send(reply, a) {
	return reply.code(a.status).headers(a.headers).type('application/json').send(a.body);
}

async function worker() {
	const { default: Fastify } = await import('fastify');
	const { default: postgres } = await import('postgres');
	const sql = postgres({ max: 4, onnotice: false, connection: { application_name: 'bench-peer-fast' } });
	const app = Fastify({ logger: false, bodyLimit: 1 << 20, return503OnClosing: false });

	app.get('/healthz', (req, reply) => { reply.type('text/plain').send('ok'); });
	app.post('/peer-fast/push', async (req, reply) => {
		const user = req.headers['x-remote-user'];
		if (!user)
			return send(reply, common.NO_USER);
		let ms;
		try {
			ms = common.checked(req.body, TABLES);
		} catch (e) {
			return send(reply, common.failure(400, 'invalid_request', e.message, false));
		}
		const batchId = req.body.batch_id;
		let conn, open = false;
		try {
			conn = await sql.reserve();
			const prev = await conn.unsafe(LOOKUP, [batchId], { prepare: true });
			if (prev.length === 1)
				return send(reply, common.stored(prev[0], user));
			const groups = plan(ms);
			open = true;
			const results = await conn.batch([conn.unsafe('BEGIN')].concat(
				groups.map((g) => conn.unsafe(g.text, g.params, { prepare: true }))));
			const answers = new Map();
			groups.forEach((g, i) => outcomes(g, results[i + 1], answers));
			const accepted = [], rejected = [];
			for (const m of ms) {
				const out = answers.get(m);
				(out.status === 'applied' ? accepted : rejected).push(out);
			}
			const response = JSON.stringify({ batch_id: batchId, server_time: new Date().toISOString(), accepted, rejected });
			await conn.batch([conn.unsafe(STORE, [batchId, user, response], { prepare: true }), conn.unsafe('COMMIT')]);
			open = false;
			return reply.type('application/json').send(response);
		} catch (e) {
			if (open)
				await conn.unsafe('ROLLBACK').catch(() => {});
			open = false;
			if (e.code === '23505' && e.constraint_name === 'fast_batches_pkey') {
				// The same batch committed by a concurrent request: its stored answer.
				const again = await sql.unsafe(LOOKUP, [batchId], { prepare: true }).catch(() => null);
				if (again && again.length === 1)
					return send(reply, common.stored(again[0], user));
			}
			if (common.REFUSED.has(e.code))
				return send(reply, common.refused(e.code));
			console.error('bench-peer-fast: push failed, SQLSTATE', e.code || '(none)');
			return send(reply, common.UNAVAILABLE);
		} finally {
			if (conn)
				conn.release();
		}
	});
	app.setErrorHandler((err, req, reply) => {
		// fastify's own refusals (not JSON, too large): the protocol's 400 or 413.
		return send(reply, common.unreadable(err.statusCode));
	});
	await app.listen({ port: PORT, host: '127.0.0.1' });
}

common.run('bench-peer-fast', worker);
