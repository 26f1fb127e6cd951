// SPDX-License-Identifier: BSD-2-Clause
// contrib/bench/push/peer/server.js: the push benchmark's peer, the upload endpoint a team
// writes itself when its sync engine leaves the write path to "your backend API" (PowerSync's
// and ElectricSQL's docs): express + node-postgres, as PowerSync's own Node backend demo,
// behind the same nginx as /v3/push (which authenticates and passes X-Remote-User).
//
// POST /peer/push takes the body /v3/push takes ({batch_id, mutations: [{mutation_id, table,
// pk: {field, value}, operation, base_version?, columns?}, ...], ...}) and
//   - answers the stored response when its batch_id is already in bench_peer.batches (the
//     idempotency key; header Idempotent-Replayed: true), 409 when another user stored it;
//   - otherwise, in one transaction: each mutation with its version check (insert: INSERT ...
//     ON CONFLICT (id) DO NOTHING; update: UPDATE ... WHERE id = $1 AND version = $n; delete:
//     DELETE ... WHERE id = $1 AND version = $n), the batch's key and response, COMMIT;
//     answers {batch_id, server_time, accepted: [...applied], rejected: [...conflict]};
//   - 400 for a body it cannot use, 422 for a batch the database refused, 503 (retryable) for
//     any other database error.
// One statement per mutation, awaited in turn, each a named (prepared) statement.
// The body's checks, the error answers, the stored answer and the node:cluster primary are
// the fast peer's too (../peer_common.cjs).
// Environment: PEER_PORT (127.0.0.1), PEER_WORKERS (node:cluster processes), and libpq's
// PGHOST, PGPORT, PGDATABASE, PGUSER for its pool. Logs name no body, row or response.
'use strict';

const common = require('../peer_common.cjs');

const PORT = Number(process.env.PEER_PORT || 0);

// The one synced table of the bench, in the peer's own schema: its writable columns and how
// a wire value becomes a parameter (bytea travels as base64 on the wire, as in /v3/push).
const TABLES = {
	item: {
		relation: 'bench_peer.item',
		pk: 'id',
		columns: {
			label: (v) => v, qty: (v) => v, price: (v) => v, weight: (v) => v, due: (v) => v,
			seen_at: (v) => v, tags: (v) => v, ref: (v) => v,
			blob: (v) => (v === null ? null : Buffer.from(String(v), 'base64')),
		},
	},
};

// A named statement per table, operation and column set (node-postgres prepares it once per
// connection); identifiers only from TABLES, quoted.
function statement(m) {
	const t = TABLES[m.table];
	const cols = m.operation === 'delete' ? [] : Object.keys(m.columns).sort();
	const name = m.table + ':' + m.operation + ':' + cols.join(',');
	const values = [m.pk.value].concat(cols.map((c) => t.columns[c](m.columns[c])));
	let text;
	if (m.operation === 'insert') {
		text = 'INSERT INTO ' + t.relation + ' ("' + t.pk + '", ' + cols.map((c) => '"' + c + '"').join(', ') +
			') VALUES ($1, ' + cols.map((_, i) => '$' + (i + 2)).join(', ') + ') ON CONFLICT ("' + t.pk +
			'") DO NOTHING RETURNING version';
	} else if (m.operation === 'update') {
		values.push(m.base_version);
		text = 'UPDATE ' + t.relation + ' SET ' + cols.map((c, i) => '"' + c + '" = $' + (i + 2)).join(', ') +
			', version = version + 1 WHERE "' + t.pk + '" = $1 AND version = $' + values.length +
			' RETURNING version';
	} else {
		values.push(m.base_version);
		text = 'DELETE FROM ' + t.relation + ' WHERE "' + t.pk + '" = $1 AND version = $2 RETURNING version';
	}
	return { name, text, values };
}

async function apply(client, m) {
	const r = await client.query(statement(m));
	const out = { mutation_id: m.mutation_id, table: m.table, pk: m.pk, operation: m.operation };
	if (r.rowCount === 1) {
		out.status = 'applied';
		out.server_version = m.operation === 'delete' ? null : String(r.rows[0].version);
		return out;
	}
	// The version check failed (or the row exists / is gone): the server's version answers.
	const t = TABLES[m.table];
	const cur = await client.query({
		name: m.table + ':version', text: 'SELECT version FROM ' + t.relation + ' WHERE "' + t.pk + '" = $1',
		values: [m.pk.value],
	});
	out.status = 'conflict';
	out.server_version = cur.rowCount === 1 ? String(cur.rows[0].version) : null;
	return out;
}

const LOOKUP = { name: 'batch:lookup', text: 'SELECT user_name, response FROM bench_peer.batches WHERE batch_id = $1' };
const STORE = { name: 'batch:store', text: 'INSERT INTO bench_peer.batches (batch_id, user_name, response) VALUES ($1, $2, $3)' };

// One of peer_common.cjs's answers ({status, headers, body}).
function send(res, a) {
	res.status(a.status).set(a.headers).type('application/json').send(a.body);
}

function worker() {
	const express = require('express');
	const { Pool } = require('pg');
	const pool = new Pool({ application_name: 'bench-peer' });
	pool.on('error', (e) => console.error('bench-peer: idle client error', e.code || ''));
	const app = express();
	app.disable('x-powered-by');
	app.disable('etag');
	app.get('/healthz', (req, res) => res.type('text/plain').send('ok'));
	app.post('/peer/push', express.json({ limit: '1mb' }), async (req, res) => {
		const user = req.get('x-remote-user');
		if (!user)
			return send(res, common.NO_USER);
		let ms;
		try {
			ms = common.checked(req.body, TABLES);
		} catch (e) {
			return send(res, common.failure(400, 'invalid_request', e.message, false));
		}
		const batchId = req.body.batch_id;
		let client;
		try {
			const prev = await pool.query({ ...LOOKUP, values: [batchId] });
			if (prev.rowCount === 1)
				return send(res, common.stored(prev.rows[0], user));
			client = await pool.connect();
			await client.query('BEGIN');
			const accepted = [], rejected = [];
			for (const m of ms) {
				const out = await apply(client, m);
				(out.status === 'applied' ? accepted : rejected).push(out);
			}
			const response = JSON.stringify({ batch_id: batchId, server_time: new Date().toISOString(), accepted, rejected });
			await client.query({ ...STORE, values: [batchId, user, response] });
			await client.query('COMMIT');
			res.type('application/json').send(response);
		} catch (e) {
			if (client)
				await client.query('ROLLBACK').catch(() => {});
			if (e.code === '23505' && e.constraint === 'batches_pkey') {
				// The same batch committed by a concurrent request: its stored answer.
				const again = await pool.query({ ...LOOKUP, values: [batchId] }).catch(() => null);
				if (again && again.rowCount === 1)
					return send(res, common.stored(again.rows[0], user));
			}
			if (common.REFUSED.has(e.code))
				return send(res, common.refused(e.code));
			console.error('bench-peer: push failed, SQLSTATE', e.code || '(none)');
			send(res, common.UNAVAILABLE);
		} finally {
			if (client)
				client.release();
		}
	});
	app.use((err, req, res, next) => {
		// express.json's own refusals (not JSON, too large): the protocol's 400.
		if (res.headersSent)
			return next(err);
		send(res, common.unreadable(err.status));
	});
	app.listen(PORT, '127.0.0.1');
}

common.run('bench-peer', worker);
