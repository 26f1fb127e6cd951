// SPDX-License-Identifier: BSD-2-Clause
// The example to-do app's screen: sign in, the lists and who shares them (rename, delete,
// leave), the live to-dos of the list shown, add, edit, complete, delete, the
// offline banner, the count of changes waiting to be sent, sync, and the changes that need
// the user (a conflict with the server's row beside mine and a choice; a rejected or blocked
// write with the client's explanation). All it knows of Synchro is in todos.js.
import {
  signIn, PAGE_SIZE, watchLists, watchShares, watchTodos, watchCount, addTodo, renameTodo, setDone, deleteTodo,
  addList, share, unshare, renameList, deleteList, leaveList, attention, settle,
} from "./todos.js";

const $ = (id) => document.getElementById(id);
const STATUS_EVERY_MS = 2000;
const SYNC_TIMEOUT_MS = 15000;

let store = null; // the open Synchro
let stopWatching = null;
let stopCounting = null;
let stopLists = null;
let stopSharing = null;
let list = null; // the list shown (null: the to-dos in no list)
let lists = []; // the lists this device sees: { id, name, shared_by } (shared_by null: mine)
let me = null; // the user signed in
let shares = []; // who the list shown is shared with: { id, user_id, owner }
let confirming = null; // { text, yes, run } while a delete or a leave waits for its confirmation
const titles = new Map(); // the title of each to-do shown (a change's card names it once it left)
let page = 0; // the page of the list shown
let total = 0; // how many to-dos there are
let statusTimer = null;
let rows = []; // the live query's last result
let editing = null; // { id, value } while a title is being edited
let lastSynced = null;
let syncing = false;
let refreshing = false;
let problemsKey = "";
let wasBusy = false;

// --- small helpers -----------------------------------------------------------------------

function el(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "dataset") Object.assign(e.dataset, v);
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k in e && k !== "ariaLabel") e[k] = v;
    else e.setAttribute(k === "ariaLabel" ? "aria-label" : k, v);
  }
  e.append(...children.filter((c) => c !== null && c !== undefined));
  return e;
}

function showMessage(text) {
  $("message").textContent = text;
  $("message").hidden = !text;
}

/** Runs a write; a failure is said, not thrown. The status is refreshed either way. */
async function act(fn) {
  try {
    await fn();
    showMessage("");
  } catch (e) {
    showMessage("That did not work: " + e.message);
  }
  void refresh();
}

const quote = (t) => "\u201c" + t + "\u201d";

// --- sign in and out ---------------------------------------------------------------------

$("user").value = localStorage.getItem("todo-user") ?? "alice";

/** The first sync's outcome: the status once it ended, or once a request of it failed
 *  (an unreachable server need not hold the sign-in for the whole timeout). */
async function firstSync(s) {
  let ended = false;
  const sync = s.sync(SYNC_TIMEOUT_MS).then(() => (lastSynced = new Date()), () => undefined);
  sync.finally(() => (ended = true));
  for (;;) {
    await Promise.race([sync, new Promise((r) => setTimeout(r, 100))]);
    const st = await s.status();
    showProgress(st);
    if (ended || st.last_error) {
      showProgress(null);
      return st;
    }
  }
}

/** The first sync's progress bar: the rows fetched so far, of the server's total. */
function showProgress(st) {
  const box = $("first-sync");
  box.hidden = !st?.rebuilding || st.rebuild_rows === 0;
  if (box.hidden) return;
  const bar = $("first-sync-bar");
  if (st.rebuild_total) {
    bar.max = st.rebuild_total;
    bar.value = Math.min(st.rebuild_rows, st.rebuild_total);
  } else {
    bar.removeAttribute("value"); // no total: an indeterminate bar
  }
  $("first-sync-text").textContent = "Fetching your to-dos: " + st.rebuild_rows.toLocaleString() +
    (st.rebuild_total ? " of " + st.rebuild_total.toLocaleString() : "");
}

$("sign-in-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const user = $("user").value.trim();
  const password = $("password").value;
  const button = e.submitter ?? $("sign-in-form").querySelector("button");
  const error = $("sign-in-error");
  error.hidden = true;
  button.disabled = true;
  button.textContent = "Signing in\u2026";
  try {
    const s = await signIn(user, password);
    // Online, the first sync checks the password; offline or out of reach, the store works
    // as it is and the banner says why it does not sync.
    if (navigator.onLine) {
      const st = await firstSync(s);
      if (st.last_error && !st.last_error_retryable) {
        await s.close();
        throw new Error(/auth/.test(st.last_error)
          ? "wrong name or password (the server answered " + st.last_error + ")"
          : "the server refused: " + st.last_error);
      }
    }
    store = s;
    localStorage.setItem("todo-user", user);
    $("password").value = "";
    $("user-name").textContent = user;
    $("sign-in").hidden = true;
    $("who").hidden = false;
    $("app").hidden = false;
    me = user;
    stopLists = await watchLists(store, me, (result, err) => {
      if (err) return showMessage("The lists could not be read: " + err.message);
      lists = result;
      renderLists();
    });
    await showList(null);
    statusTimer = setInterval(refresh, STATUS_EVERY_MS);
    document.body.dataset.state = "signed-in";
    $("new-title").focus();
    void refresh();
  } catch (err) {
    error.textContent = "Could not sign in: " + err.message;
    error.hidden = false;
  } finally {
    button.disabled = false;
    button.textContent = "Sign in";
  }
});

/** Shows list id (null: the to-dos in no list): its count, its first page, who shares it. */
async function showList(id) {
  stopCounting?.();
  stopSharing?.();
  stopCounting = stopSharing = null;
  list = id;
  page = 0;
  total = 0;
  $("list-picker").value = id ?? "";
  shares = [];
  confirming = null;
  $("rename-form").hidden = true;
  renderListHead();
  stopCounting = await watchCount(store, id, (n, err) => {
    if (err) return showMessage("The list could not be counted: " + err.message);
    total = n;
    if (page > 0 && page * PAGE_SIZE >= total) void showPage(Math.max(0, Math.ceil(total / PAGE_SIZE) - 1));
    renderPager();
  });
  if (id !== null)
    stopSharing = await watchShares(store, id, (result, err) => {
      if (err) return showMessage("The list's shares could not be read: " + err.message);
      shares = result;
      renderShares();
    });
  await showPage(0);
}

/** The list picker; a list that left this device (deleted, its share removed, left) leaves
 *  the screen. */
function renderLists() {
  const picker = $("list-picker");
  picker.replaceChildren(el("option", { value: "" }, "My to-dos"),
    ...lists.map((l) => el("option", { value: l.id }, String(l.name))));
  if (list !== null && !lists.some((l) => l.id === list)) void showList(null);
  else {
    picker.value = list ?? "";
    renderListHead();
  }
}

/** The list shown: its name, whose it is, what its owner or a member may do with it. */
function renderListHead() {
  const l = lists.find((x) => x.id === list);
  $("sharing").hidden = !l;
  if (!l) return;
  const mine = l.shared_by === null;
  $("list-title").textContent = String(l.name);
  $("list-owner").textContent = mine ? "Your list" : "Shared with you by " + l.shared_by;
  const busy = confirming !== null || !$("rename-form").hidden; // one question at a time
  $("rename-list").hidden = $("delete-list").hidden = !mine || busy;
  $("leave-list").hidden = mine || busy;
  $("confirm").hidden = !confirming;
  if (confirming) {
    $("confirm-text").textContent = confirming.text;
    $("confirm-yes").textContent = confirming.yes;
  }
  renderShares();
}

/** Who the list shown is shared with; a share the user made has its Remove. */
function renderShares() {
  const l = lists.find((x) => x.id === list);
  $("shares").replaceChildren(...shares.map((r) => el("li", { className: "share", dataset: { user: r.user_id } },
    el("span", {}, String(r.user_id) + (r.user_id === me ? " (you)" : "")),
    r.owner === me && r.user_id !== me
      ? el("button", { type: "button", className: "icon", ariaLabel: "Stop sharing with " + r.user_id,
        title: "Stop sharing with " + r.user_id, onclick: () => act(() => unshare(store, r.id)) }, "\u2715")
      : null)));
  $("no-shares").hidden = shares.length > 0 || l?.shared_by !== null;
}

/** Asks before a delete or a leave, in the page: yes runs it. */
function confirm(text, yes, run) {
  confirming = { text, yes, run };
  renderListHead();
  $("confirm-no").focus();
}

$("confirm-no").addEventListener("click", () => {
  confirming = null;
  renderListHead();
});

$("confirm-yes").addEventListener("click", () => {
  const c = confirming;
  confirming = null;
  renderListHead();
  if (c) void act(c.run);
});

$("rename-list").addEventListener("click", () => {
  const l = lists.find((x) => x.id === list);
  if (!l) return;
  confirming = null;
  $("list-name").value = String(l.name);
  $("rename-form").hidden = false;
  renderListHead();
  $("list-name").focus();
});

function closeRename() {
  $("rename-form").hidden = true;
  renderListHead();
}

$("rename-cancel").addEventListener("click", closeRename);
$("list-name").addEventListener("keydown", (e) => e.key === "Escape" && closeRename());

$("rename-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const name = $("list-name").value.trim();
  const id = list;
  const l = lists.find((x) => x.id === id);
  closeRename();
  if (name && l && name !== l.name) void act(() => renameList(store, id, name));
});

$("delete-list").addEventListener("click", () => {
  const id = list;
  const l = lists.find((x) => x.id === id);
  const n = total === 1 ? "its to-do" : "its " + total.toLocaleString() + " to-dos";
  if (l) confirm("Delete " + quote(String(l.name)) + " and " + n + "? It goes for everyone it is shared with.",
    "Delete list", () => deleteList(store, id));
});

$("leave-list").addEventListener("click", () => {
  const id = list;
  const l = lists.find((x) => x.id === id);
  if (l) confirm("Leave " + quote(String(l.name)) + "? It and its to-dos leave your devices; " + l.shared_by +
    " keeps the list.", "Leave list", () => leaveList(store, id));
});

$("list-picker").addEventListener("change", (e) => void showList(e.target.value || null));

$("new-list-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const name = $("new-list").value.trim();
  if (!name) return;
  $("new-list").value = "";
  void act(async () => {
    const id = await addList(store, name);
    lists = [...lists.filter((l) => l.id !== id), { id, name, shared_by: null }];
    renderLists();
    await showList(id);
  });
});

$("share-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const user = $("share-user").value.trim();
  const name = lists.find((l) => l.id === list)?.name;
  if (!user || list === null || name === undefined) return;
  $("share-user").value = "";
  void act(() => share(store, list, String(name), user));
});

/** Watches page p of the list (the one shown) instead of the one before. */
async function showPage(p) {
  const stop = stopWatching;
  stopWatching = null;
  stop?.();
  page = p;
  renderPager();
  stopWatching = await watchTodos(store, list, p, (result, err) => {
    if (err) {
      showMessage("The list could not be read: " + err.message);
      return;
    }
    rows = result;
    for (const r of rows) titles.set(r.id, String(r.title));
    renderList();
    void refresh();
  });
}

function renderPager() {
  const first = total === 0 ? 0 : page * PAGE_SIZE + 1;
  const last = Math.min(total, (page + 1) * PAGE_SIZE);
  $("pager").hidden = total <= PAGE_SIZE;
  $("page-text").textContent = first.toLocaleString() + "\u2013" + last.toLocaleString() + " of " +
    total.toLocaleString();
  $("count").hidden = total === 0;
  $("count").textContent = total === 1 ? "1 to-do" : total.toLocaleString() + " to-dos";
  $("prev-page").disabled = page === 0;
  $("next-page").disabled = last >= total;
}

$("prev-page").addEventListener("click", () => void showPage(Math.max(0, page - 1)));
$("next-page").addEventListener("click", () => void showPage(page + 1));

$("sign-out").addEventListener("click", async () => {
  clearInterval(statusTimer);
  stopWatching?.();
  stopCounting?.();
  stopLists?.();
  stopSharing?.();
  stopWatching = stopCounting = stopLists = stopSharing = null;
  total = 0;
  list = null;
  lists = [];
  shares = [];
  me = null;
  confirming = null;
  titles.clear();
  const s = store;
  store = null;
  rows = [];
  editing = null;
  problemsKey = "";
  lastSynced = null;
  await s?.close().catch(() => undefined);
  $("app").hidden = true;
  $("who").hidden = true;
  $("sign-in").hidden = false;
  document.body.dataset.state = "signed-out";
  $("password").focus();
});

// --- the list --------------------------------------------------------------------------

const BADGES = { pending: "Not synced yet", conflict: "Conflict", blocked: "Blocked" };

function todoItem(r) {
  const title = String(r.title);
  const done = !!r.done;
  const li = el("li", { className: "todo" + (done ? " done" : ""), dataset: { id: r.id, state: r._state } });
  li.append(el("input", {
    type: "checkbox",
    checked: done,
    ariaLabel: (done ? "Mark not done: " : "Mark done: ") + title,
    dataset: { role: "done" },
    onchange: (e) => act(() => setDone(store, r.id, e.target.checked)),
  }));
  if (editing && editing.id === r.id) {
    const input = el("input", {
      value: editing.value,
      ariaLabel: "New title for " + quote(title),
      maxLength: 500,
      required: true,
      dataset: { role: "title-input" },
      oninput: (e) => (editing.value = e.target.value),
      onkeydown: (e) => {
        if (e.key === "Escape") {
          editing = null;
          renderList(r.id, "edit");
        }
      },
    });
    li.append(el("form", {
      className: "edit",
      onsubmit: (e) => {
        e.preventDefault();
        const value = input.value.trim();
        editing = null;
        if (value && value !== title) void act(() => renameTodo(store, r.id, value));
        renderList(r.id, "edit");
      },
    }, input, el("button", { type: "submit", className: "primary small" }, "Save"),
    el("button", { type: "button", className: "small", onclick: () => { editing = null; renderList(r.id, "edit"); } }, "Cancel")));
    queueMicrotask(() => input.focus());
    return li;
  }
  li.append(el("span", { className: "title", ondblclick: () => startEdit(r) }, title));
  if (BADGES[r._state]) li.append(el("span", { className: "badge " + r._state }, BADGES[r._state]));
  li.append(
    el("button", { type: "button", className: "icon", ariaLabel: "Edit " + quote(title), title: "Edit",
      dataset: { role: "edit" }, onclick: () => startEdit(r) }, "\u270e"),
    el("button", { type: "button", className: "icon danger", ariaLabel: "Delete " + quote(title), title: "Delete",
      dataset: { role: "delete" }, onclick: () => act(() => deleteTodo(store, r.id)) }, "\u2715"),
  );
  return li;
}

function startEdit(r) {
  editing = { id: r.id, value: String(r.title) };
  renderList();
}

/** Draws the list; keeps the focus on the same control of the same to-do (or focusId's). */
function renderList(focusId, focusRole) {
  const active = document.activeElement;
  const id = focusId ?? active?.closest?.("li.todo")?.dataset.id;
  const role = focusRole ?? active?.dataset?.role;
  $("list").replaceChildren(...rows.map(todoItem));
  $("empty").hidden = rows.length > 0;
  if (id && role && role !== "title-input") {
    const li = [...$("list").children].find((x) => x.dataset.id === id);
    li?.querySelector(`[data-role="${role}"]`)?.focus();
  }
}

$("add-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const title = $("new-title").value.trim();
  if (!title) return;
  $("new-title").value = "";
  void act(() => addTodo(store, list, title));
});

// --- status, banner, what needs the user --------------------------------------------------

function renderStatus({ status, waiting }) {
  const offline = !navigator.onLine;
  const failing = status.phase === "backoff" && status.last_error;
  const stopped = status.last_error && !status.last_error_retryable;
  const banner = $("banner");
  let text = "";
  if (offline)
    text = "You\u2019re offline. Changes are saved on this device and sync when you\u2019re back online.";
  else if (stopped)
    text = "Sync stopped: " + status.last_error + ". Changes are saved on this device.";
  else if (failing)
    text = "Can\u2019t reach the server (" + status.last_error + "). Changes are saved on this device; retrying.";
  banner.textContent = text;
  banner.hidden = !text;
  banner.className = "banner" + (stopped ? " error" : "");
  document.body.dataset.offline = text ? "yes" : "no";

  // Caught up: idle without an error after sending or fetching something (or at first).
  const busy = status.phase !== "idle" || waiting > 0 || failing || stopped;
  if (!busy && (wasBusy || lastSynced === null)) lastSynced = new Date();
  wasBusy = busy;
  const state = $("sync-state");
  state.dataset.pending = String(waiting);
  if (waiting > 0)
    state.textContent = waiting + (waiting === 1 ? " change" : " changes") + " waiting to sync";
  else if (syncing || ["connecting", "schema", "pushing", "pulling", "rebuilding"].includes(status.phase))
    state.textContent = "Syncing\u2026";
  else
    state.textContent = "All changes synced" +
      (lastSynced ? " \u00b7 " + lastSynced.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) : "");
}

function describeRow(row) {
  if (!row) return "Deleted";
  return quote(String(row.title)) + (row.done ? " \u00b7 done" : " \u00b7 not done");
}

function describeIntent(i) {
  const c = i.columns ?? {};
  if (i.table === "todo_list")
    return i.operation === "delete" ? "Delete the list"
      : (i.operation === "insert" ? "New list " : "Rename the list to ") + quote(String(c.name));
  if (i.table === "list_share")
    return i.operation === "delete" ? "Stop sharing the list" : "Share the list with " + c.user_id;
  if (i.table === "list_leave") return "Leave the list";
  if (i.operation === "delete") return "Delete it";
  const parts = [];
  if ("title" in c) parts.push((i.operation === "insert" ? "Add " : "Rename to ") + quote(String(c.title)));
  if ("done" in c && i.operation !== "insert") parts.push(c.done ? "Mark done" : "Mark not done");
  return parts.join(", ") || "Change it";
}

const HEADINGS = {
  conflict: "Changed on the server while you edited it",
  rejected: "The server refused this change",
  schema_incompatible: "This change no longer fits the server\u2019s schema",
  blocked_by_predecessor: "Waiting for an earlier change to be settled",
  blocked_limit: "This change is too large to send",
};

function problemItem({ intent, why, server, left }) {
  const mid = intent.mutation_id;
  const local = rows.find((r) => r.id === intent.pk);
  const name = server?.title ?? local?.title ?? titles.get(intent.pk) ?? intent.columns?.title;
  // A to-do whose list is no longer shared with the user left the device: the change cannot
  // reach it, and only discarding settles it.
  const heading = left ? "No longer shared with you" : HEADINGS[intent.state] ?? "This change needs you";
  const choice = (how, label, cls) =>
    el("button", { type: "button", className: cls ?? "", dataset: { how },
      onclick: () => act(() => settle(store, how, mid)) }, label);
  const sides = el("div", { className: "sides" },
    intent.state === "conflict" && !left
      ? el("div", { className: "side server" }, el("h4", {}, "On the server"), el("p", {}, describeRow(server)))
      : null,
    el("div", { className: "side mine" }, el("h4", {}, "Your change"), el("p", {}, describeIntent(intent))));
  const actions = intent.state === "conflict" && !left
    ? [choice("rebase", "Keep mine", "primary"), choice("accept", "Take the server\u2019s"), choice("discard", "Discard mine", "danger")]
    : [choice("discard", "Discard this change", "danger")];
  const headingId = "problem-" + mid;
  return el("li", { className: "problem " + intent.state + (left ? " left" : ""),
    dataset: { mid, state: intent.state, pk: String(intent.pk), left: String(left) } },
    el("h3", { id: headingId }, heading + (name !== undefined ? ": " + quote(String(name)) : "")),
    sides,
    left ? el("p", { className: "lead" }, "Its list is no longer shared with you, so your change cannot be" +
      " sent. It stays on this device until you discard it.") : null,
    // A conflict's heading and sides say it; the client's full explanation on request.
    intent.state === "conflict" || left
      ? el("details", {}, el("summary", {}, "Details"), el("p", { className: "why" }, why))
      : el("p", { className: "why" }, why),
    // The choices' group is named by the heading: "Keep mine" says for which to-do.
    el("div", { className: "choices", role: "group", "aria-labelledby": headingId }, ...actions));
}

function renderProblems(problems) {
  const key = JSON.stringify(problems) + JSON.stringify(rows.map((r) => [r.id, r.title]));
  if (key === problemsKey) return;
  problemsKey = key;
  $("problems").replaceChildren(...problems.map(problemItem));
  $("attention").hidden = problems.length === 0;
}

/** Reads the status and what needs the user (every STATUS_EVERY_MS, and after each change). */
async function refresh() {
  if (!store || refreshing) return;
  refreshing = true;
  try {
    const a = await attention(store);
    if (!store) return;
    renderStatus(a);
    renderProblems(a.problems);
  } catch (e) {
    showMessage("Could not read the sync status: " + e.message);
  } finally {
    refreshing = false;
  }
}

// --- syncing ------------------------------------------------------------------------------

async function syncNow() {
  if (!store || syncing) return;
  syncing = true;
  const button = $("sync-now");
  button.disabled = true;
  button.textContent = "Syncing\u2026";
  try {
    await store.sync(SYNC_TIMEOUT_MS);
    lastSynced = new Date();
  } catch {
    // the banner says why (offline, the server unreachable or refusing)
  } finally {
    syncing = false;
    button.disabled = false;
    button.textContent = "Sync now";
    void refresh();
  }
}

$("sync-now").addEventListener("click", syncNow);
// Back online: send what waited at once rather than at the next retry.
window.addEventListener("online", () => void syncNow());
window.addEventListener("offline", () => void refresh());
document.body.dataset.state = "signed-out";
