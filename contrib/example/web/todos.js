// SPDX-License-Identifier: BSD-2-Clause
// The example to-do app's data layer: everything it asks of the browser client, on the
// example schema's tables (contrib/example): to-dos, lists, shares. app.js draws it. doc/client.md ("In the
// browser") quotes this file whole, and tests/web/test_web_app.pgt checks that it does.
import { Synchro } from "./dist/synchro.js";

/** Opens the user's store on this device (created at first use) and syncs with this site. */
export function signIn(user, password) {
  return Synchro.open(location.origin, user, password, { name: user + ".db", pollIntervalMs: 10000 });
}

/** The to-dos shown on one screen, and how many there are: a device may hold 100,000. */
export const PAGE_SIZE = 50;

/** The lists this device sees, by name: the user's own (shared_by null), and those shared
 *  with the user (a share carries its list's name and who shared it), but not one the user
 *  left. onChange(rows of id, name, shared_by) as watchTodos. */
export const watchLists = (s, user, onChange) =>
  s.live("SELECT id, name, NULL AS shared_by FROM todo_list UNION ALL" +
    " SELECT list_id, list_name, owner FROM list_share WHERE user_id = ?" +
    " AND list_id NOT IN (SELECT id FROM todo_list) AND list_id NOT IN (SELECT list_id FROM list_leave)" +
    " ORDER BY 2, 1", [user], onChange);

/** Who a list is shared with: onChange(rows of id, user_id, owner), owner being who shared. */
export const watchShares = (s, list, onChange) =>
  s.live("SELECT id, user_id, owner FROM list_share WHERE list_id = ? ORDER BY user_id", [list], onChange);

/** One page of a list's to-dos (list null: the user's to-dos in no list) as this device
 *  sees them, open ones first (page 0 the first): onChange(rows) runs at once, then after
 *  every change, local or synced. An index on the sort order makes each run cost the page,
 *  not the table. Resolves to the function that stops watching. */
export async function watchTodos(s, list, page, onChange) {
  await s.index("todo", ["list_id", "done", "title", "id"]);
  return s.live("SELECT id, title, done, _state FROM todo WHERE list_id IS ? ORDER BY done, title, id" +
    " LIMIT ? OFFSET ?", [list, PAGE_SIZE, page * PAGE_SIZE], onChange);
}

/** How many to-dos a list has on this device: onChange(n), as watchTodos. */
export const watchCount = (s, list, onChange) =>
  s.live("SELECT count(*) AS n FROM todo WHERE list_id IS ?", [list],
    (rows, err) => onChange(rows?.[0]?.n ?? 0, err));

// Each write is one durable local transaction (offline too); the client sends it when it can.
export const addTodo = (s, list, title) =>
  s.transaction((tx) => tx.insert("todo", crypto.randomUUID(), { title, done: false, list_id: list }));
export const renameTodo = (s, id, title) => s.transaction((tx) => tx.update("todo", id, { title }));
export const setDone = (s, id, done) => s.transaction((tx) => tx.update("todo", id, { done }));
export const deleteTodo = (s, id) => s.transaction((tx) => tx.delete("todo", id));

/** A new list of the user's; resolves to its id. The server makes the user its first member. */
export async function addList(s, name) {
  const id = crypto.randomUUID();
  await s.transaction((tx) => tx.insert("todo_list", id, { name }));
  return id;
}

/** Shares a list with another user by name: the server makes them a member once the share
 *  and the list reached it; they then see and edit its to-dos. */
export const share = (s, list, name, user) =>
  s.transaction((tx) => tx.insert("list_share", crypto.randomUUID(), { list_id: list, user_id: user, list_name: name }));
export const unshare = (s, id) => s.transaction((tx) => tx.delete("list_share", id));

/** The owner's: renames a list (the server gives its shares the new name, so its members see
 *  it), or deletes it, its to-dos and its shares with it, for every member. */
export const renameList = (s, list, name) => s.transaction((tx) => tx.update("todo_list", list, { name }));
export const deleteList = (s, list) => s.transaction((tx) => tx.delete("todo_list", list));

/** A member's: leaves a list shared with the user. The request is the user's own row; the
 *  server then deletes the share, and the list and its to-dos leave the user's devices. */
export const leaveList = (s, list) =>
  s.transaction((tx) => tx.insert("list_leave", crypto.randomUUID(), { list_id: list }));

const ON_ITS_WAY = ["pending", "waiting", "sealed"];

/** The sync status, how many changes wait to be sent, and each change that needs the user
 *  (a conflict, a rejected or blocked write): why, for a conflict the server's row, and
 *  whether its row left the user's scope (its list no longer shared with the user). */
export async function attention(s) {
  const status = await s.status();
  const waiting = ON_ITS_WAY.reduce((n, state) => n + (status.counts[state] ?? 0), 0);
  const problems = [];
  for (const intent of await s.pending()) {
    if (ON_ITS_WAY.includes(intent.state)) continue;
    const why = await s.explain(intent.mutation_id);
    const server = intent.state === "conflict" ? (await s.get(intent.table, intent.pk))?.row ?? null : undefined;
    problems.push({ intent, why, server, left: why.includes("left the user's scope") });
  }
  return { status, waiting, problems };
}

/** Settles a change that needs the user: "rebase" keeps mine on top of the server's row,
 *  "accept" takes the server's row, "discard" drops mine. */
export const settle = (s, how, mutationId) => s.resolve(how, mutationId);
