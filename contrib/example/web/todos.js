// SPDX-License-Identifier: BSD-2-Clause
// The example to-do app's data layer: everything it asks of the browser client, on the
// example schema's todo table (contrib/example). app.js draws it. doc/client.md ("In the
// browser") quotes this file whole, and tests/web/test_web_app.pgt checks that it does.
import { Synchro } from "./dist/synchro.js";

/** Opens the user's store on this device (created at first use) and syncs with this site. */
export function signIn(user, password) {
  return Synchro.open(location.origin, user, password, { name: user + ".db", pollIntervalMs: 10000 });
}

/** The to-dos shown on one screen, and how many there are: a device may hold 100,000. */
export const PAGE_SIZE = 50;

/** One page of the to-dos as this device sees them, open ones first (page 0 the first):
 *  onChange(rows) runs at once, then after every change, local or synced. An index on the
 *  sort order makes each run cost the page, not the table. Resolves to the function that
 *  stops watching. */
export async function watchTodos(s, page, onChange) {
  await s.index("todo", ["done", "title", "id"]);
  return s.live("SELECT id, title, done, _state FROM todo ORDER BY done, title, id LIMIT ? OFFSET ?",
    [PAGE_SIZE, page * PAGE_SIZE], onChange);
}

/** How many to-dos this device sees: onChange(n), as watchTodos. */
export const watchCount = (s, onChange) =>
  s.live("SELECT count(*) AS n FROM todo", [], (rows, err) => onChange(rows?.[0]?.n ?? 0, err));

// Each write is one durable local transaction (offline too); the client sends it when it can.
export const addTodo = (s, title) =>
  s.transaction((tx) => tx.insert("todo", crypto.randomUUID(), { title, done: false }));
export const renameTodo = (s, id, title) => s.transaction((tx) => tx.update("todo", id, { title }));
export const setDone = (s, id, done) => s.transaction((tx) => tx.update("todo", id, { done }));
export const deleteTodo = (s, id) => s.transaction((tx) => tx.delete("todo", id));

const ON_ITS_WAY = ["pending", "waiting", "sealed"];

/** The sync status, how many changes wait to be sent, and each change that needs the user
 *  (a conflict, a rejected or blocked write): why, and for a conflict the server's row. */
export async function attention(s) {
  const status = await s.status();
  const waiting = ON_ITS_WAY.reduce((n, state) => n + (status.counts[state] ?? 0), 0);
  const problems = [];
  for (const intent of await s.pending()) {
    if (ON_ITS_WAY.includes(intent.state)) continue;
    const why = await s.explain(intent.mutation_id);
    const server = intent.state === "conflict" ? (await s.get(intent.table, intent.pk))?.row ?? null : undefined;
    problems.push({ intent, why, server });
  }
  return { status, waiting, problems };
}

/** Settles a change that needs the user: "rebase" keeps mine on top of the server's row,
 *  "accept" takes the server's row, "discard" drops mine. */
export const settle = (s, how, mutationId) => s.resolve(how, mutationId);
