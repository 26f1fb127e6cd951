// SPDX-License-Identifier: BSD-2-Clause
// contrib/bench/push/peer_common.cjs: what the push benchmark's two peers (peer/server.js,
// express + node-postgres, and peer-fast/server.js, fastify + postgres.js) share, whatever
// their framework: the checks of a request's body before anything touches the database, the
// answers in the protocol's error form, the stored answer of a repeated batch, and the
// node:cluster primary that runs PEER_WORKERS processes. No package of its own: each peer's
// package-lock.json stays its whole list. Node only, no browser.
'use strict';

const cluster = require('node:cluster');

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const PK = /^-?[0-9]{1,18}$/;
const VERSION = /^[0-9]{1,18}$/;
// SQLSTATEs of a batch the database refused (unique, check, bad text for a type, out of
// range): 422, not retryable. Any other database error is a 503.
const REFUSED = new Set(['23505', '23514', '22P02', '22007', '22003', '22008', '22023']);

function invalid(message) {
	const e = new Error(message);
	e.invalid = true;
	return e;
}

// The request's mutations, checked before anything touches the database. tables: the peer's
// synced tables by name, each {pk, columns: {name: ...}} (only the names are read here).
function checked(body, tables) {
	if (body === null || typeof body !== 'object' || Array.isArray(body))
		throw invalid('the body is not a JSON object');
	if (typeof body.batch_id !== 'string' || !UUID.test(body.batch_id))
		throw invalid('batch_id is not a lowercase UUID');
	const ms = body.mutations;
	if (!Array.isArray(ms) || ms.length < 1 || ms.length > 1000)
		throw invalid('mutations must be an array of 1 to 1000');
	for (const m of ms) {
		if (m === null || typeof m !== 'object' || typeof m.mutation_id !== 'string')
			throw invalid('a mutation without mutation_id');
		if (typeof m.table !== 'string' || !Object.hasOwn(tables, m.table))
			throw invalid('unknown table');
		const t = tables[m.table];
		if (m.pk === null || typeof m.pk !== 'object' || m.pk.field !== t.pk ||
		    typeof m.pk.value !== 'string' || !PK.test(m.pk.value))
			throw invalid('bad pk');
		if (m.operation !== 'insert' && m.operation !== 'update' && m.operation !== 'delete')
			throw invalid('bad operation');
		if (m.operation !== 'insert' && (typeof m.base_version !== 'string' || !VERSION.test(m.base_version)))
			throw invalid('update and delete need base_version');
		if (m.operation !== 'delete') {
			if (m.columns === null || typeof m.columns !== 'object' || Array.isArray(m.columns))
				throw invalid('columns must be an object');
			const names = Object.keys(m.columns);
			if (names.length === 0 || names.some((c) => !Object.hasOwn(t.columns, c)))
				throw invalid('unknown or no columns');
		}
	}
	return ms;
}

// An answer the framework sends as it is: {status, headers, body} (body: JSON text).
function failure(status, code, message, retryable) {
	const headers = retryable ? { 'Retry-After': '1' } : {};
	return { status, headers, body: JSON.stringify({ error: { code, message, retryable } }) };
}

// The answer to a batch whose key is stored (row: {user_name, response}): its stored
// response byte for byte, or 409 when another user stored it.
function stored(row, user) {
	if (row.user_name !== user)
		return failure(409, 'batch_conflict', 'batch_id used by another user', false);
	return { status: 200, headers: { 'Idempotent-Replayed': 'true' }, body: row.response };
}

// The answers the peers give themselves.
const NO_USER = failure(401, 'auth_required', 'no user', false);
const refused = (code) => failure(422, 'batch_rejected', 'SQLSTATE ' + code, false);
const UNAVAILABLE = failure(503, 'temporary_unavailable', 'database error', true);
const unreadable = (status) => failure(status === 413 ? 413 : 400, 'invalid_request', 'unreadable body', false);

// The primary: PEER_WORKERS processes running worker (the peer's server, possibly async); it
// stops when one ends by itself, and on SIGTERM or SIGINT stops them all. name: the logs'.
function run(name, worker) {
	if (!cluster.isPrimary) {
		Promise.resolve().then(worker).catch((e) => {
			console.error(name + ': the worker did not start:', e.code || e.message);
			process.exit(1);
		});
		return;
	}
	const port = Number(process.env.PEER_PORT || 0);
	const workers = Number(process.env.PEER_WORKERS || 1);
	if (!(port > 0) || !(workers >= 1 && workers <= 256)) {
		console.error(name + ': PEER_PORT and PEER_WORKERS (1..256) are required');
		process.exit(2);
	}
	let stopping = false;
	for (let i = 0; i < workers; i++)
		cluster.fork();
	cluster.on('exit', () => {
		if (!stopping) {
			console.error(name + ': a worker ended; stopping');
			process.exit(1);
		}
	});
	const stop = () => {
		stopping = true;
		for (const w of Object.values(cluster.workers))
			w.kill('SIGTERM');
		setTimeout(() => process.exit(0), 200).unref();
		cluster.on('exit', () => {
			if (Object.keys(cluster.workers).length === 0)
				process.exit(0);
		});
	};
	process.on('SIGTERM', stop);
	process.on('SIGINT', stop);
}

module.exports = { checked, failure, stored, NO_USER, refused, REFUSED, UNAVAILABLE, unreadable, run };
