// SPDX-License-Identifier: BSD-2-Clause
// worker.ts: the dedicated Worker that owns one store.
//
// Layer: top of src/web (doc/hacking.md).
// Notes: It opens the store's OPFS files first (web_vfs.c uses them). Sync access handles
// exist only in a worker, and createSyncAccessHandle is asynchronous. So they are opened
// before the C code runs. Then it loads libsynchro-client compiled to WebAssembly. It runs
// the HTTP round trips with fetch for the C transport (web_transport.c). It schedules
// sy_client_step with setTimeout, at the time each step returns. The worker never blocks.
// It answers the page's requests (protocol.ts) one at a time. With bearer tokens, it asks
// the page for one. After a 401 it asks for a fresh one, then sends the same bytes once
// more.

import type { ErrorInfo, LiveEvent, OpenArgs, QueryRow, Reply, Request, Status, StoreRecords, TokenAsk, Write } from "./protocol.js";
import { basicAuth } from "./protocol.js";

interface SyncHandle {
  read(buf: Uint8Array, opts: { at: number }): number;
  write(buf: Uint8Array, opts: { at: number }): number;
  truncate(size: number): void;
  getSize(): number;
  flush(): void;
  close(): void;
}

interface Core {
  ccall(name: string, ret: string | null, types: string[], args: unknown[]): number;
  UTF8ToString(p: number): string;
  _sy_web_step(c: number): number;
  _sy_web_next_due(): number;
  _sy_web_kick(c: number): void;
  _sy_web_begin(c: number, atomic: number): number;
  _sy_web_commit(t: number): number;
  _sy_web_rollback(t: number): void;
  _sy_web_status(c: number): number;
  _sy_web_intents(c: number, all: number): number;
  _sy_web_close(c: number): void;
  _sy_web_free(p: number): void;
  _sy_web_error_name(): number;
  _sy_web_error_message(): number;
  _sy_web_changed(): number;
  _sy_web_verify(c: number): number;
  _sy_web_records(c: number): number;
}

class SynchroError extends Error {
  constructor(readonly info: ErrorInfo) {
    super(info.message);
  }
}

const scope = self as unknown as {
  postMessage(m: unknown): void;
  onmessage: ((e: MessageEvent) => void) | null;
};

// The store's files: the database, its WAL and its rollback journal (web_vfs.c).
const SUFFIXES = ["", "-wal", "-journal"];
// How long to wait for a store another worker still holds (a tab closing), in ms.
const LOCK_WAIT_MS = 10000;

let core: Core | null = null;
let client = 0;
const files: Record<string, SyncHandle> = {};
const opfs = { files, flushes: 0, lastError: "" };

// --- the transport: one fetch at a time, read by web_transport.c ----------------------

interface Current {
  done: boolean;
  status: number;
  body: Uint8Array | null;
  retryAfter: string | null;
  abort: AbortController;
}

let base = "";
let authorization = "";
let requestTimeoutMs = 60000;
let sealedAhead = false;

// Bearer tokens: the page supplies them (OpenArgs.token), asked for the first time and again
// after a 401; kept in this worker's memory only.
let tokenMode = false;
let token: string | null = null;
let tokenAsks = 0;
const tokenWaiters = new Map<number, (t: string | null) => void>();

function askToken(): Promise<string | null> {
  const ask = ++tokenAsks;
  return new Promise((resolve) => {
    tokenWaiters.set(ask, resolve);
    scope.postMessage({ tokenAsk: ask } as TokenAsk);
  });
}

async function authHeader(fresh: boolean): Promise<string> {
  if (!tokenMode) return authorization;
  if (fresh || token === null) token = await askToken();
  return token ? "Bearer " + token : "";
}

const syFetch = {
  current: null as Current | null,
  start(method: string, path: string, body: Uint8Array | null): boolean {
    const cur: Current = { done: false, status: 0, body: null, retryAfter: null, abort: new AbortController() };
    syFetch.current = cur;
    sealedAhead = false;
    const timer = setTimeout(() => cur.abort.abort(), requestTimeoutMs);
    const send = (auth: string): Promise<Response> => {
      const headers: Record<string, string> = { "Synchro-Protocol": "3", "Content-Type": "application/json" };
      if (auth) headers.Authorization = auth;
      return fetch(base + path, {
        method,
        body: body as BodyInit | null,
        headers,
        signal: cur.abort.signal,
        cache: "no-store",
        credentials: "omit",
        redirect: "error",
      });
    };
    // Sent before start() returns when no token must be asked for: the library may go on to
    // apply a rebuild page in this task while the server prepares the next one.
    const auth = !tokenMode ? authorization : token !== null ? (token ? "Bearer " + token : "") : null;
    const first = auth !== null ? send(auth) : null;
    (async () => {
      let r = await (first ?? authHeader(false).then(send));
      // A token refused: a fresh one from the page, and the same bytes once more.
      if (r.status === 401 && tokenMode) {
        await r.arrayBuffer().catch(() => undefined);
        r = await send(await authHeader(true));
      }
      return r;
    })()
      .then(async (r) => {
        const bytes = new Uint8Array(await r.arrayBuffer());
        cur.status = r.status;
        cur.body = bytes;
        cur.retryAfter = r.headers.get("Retry-After");
      })
      .catch(() => {
        // no response: status 0, as libcurl's transport reports it
        cur.status = 0;
        cur.body = null;
      })
      .finally(() => {
        clearTimeout(timer);
        cur.done = true;
        if (syFetch.current === cur) schedule(0);
      });
    return true;
  },
  clear(): void {
    const cur = syFetch.current;
    syFetch.current = null;
    if (cur && !cur.done) cur.abort.abort();
  },
};

// --- calls into the C face (web_api.c) ------------------------------------------------

function lastError(): ErrorInfo {
  const c = core!;
  return { rc: c.UTF8ToString(c._sy_web_error_name()), message: c.UTF8ToString(c._sy_web_error_message()) };
}

function fail(): never {
  throw new SynchroError(lastError());
}

/** A new C string result as text (freed here); fails with the call's error when NULL. */
function text(p: number): string {
  if (p === 0) fail();
  const s = core!.UTF8ToString(p);
  core!._sy_web_free(p);
  return s;
}

function status(): Status {
  return JSON.parse(text(core!._sy_web_status(client))) as Status;
}

// --- queries and live queries --------------------------------------------------------

interface Result {
  tables: string[];
  rows: QueryRow[];
}

function query(sql: string, params: unknown[]): Result {
  if (!Array.isArray(params)) throw new SynchroError({ rc: "einval", message: "query: params must be an array" });
  const p = core!.ccall("sy_web_query", "number", ["number", "string", "string"], [client, sql, JSON.stringify(params)]);
  return JSON.parse(text(p)) as Result;
}

interface Live {
  sql: string;
  params: unknown[];
  tables: string[];
  last: string; // the last result posted, as JSON: an unchanged result is not posted again
}
const lives = new Map<number, Live>();

function runLive(id: number, l: Live): void {
  try {
    const r = query(l.sql, l.params);
    l.tables = r.tables;
    const json = JSON.stringify(r.rows);
    if (json === l.last) return;
    l.last = json;
    scope.postMessage({ live: id, rows: r.rows } as LiveEvent);
  } catch (e) {
    const info = e instanceof SynchroError ? e.info : { rc: "einval", message: String(e) };
    l.last = "";
    scope.postMessage({ live: id, error: info } as LiveEvent);
  }
}

/** After a step or a commit: re-runs the live queries that read a table whose rows changed
 *  (the library's row events, and written: the tables a local commit wrote, which the
 *  library reports as an intent event only, offline as online). */
function refreshLives(written: string[] = []): void {
  if (!client) return;
  const changed = (JSON.parse(text(core!._sy_web_changed())) as string[]).concat(written);
  if (changed.length === 0 || lives.size === 0) return;
  const all = changed.includes("*");
  for (const [id, l] of lives) if (all || l.tables.some((t) => changed.includes(t))) runLive(id, l);
}

// --- stepping ----------------------------------------------------------------------

let timer: ReturnType<typeof setTimeout> | null = null;
let stepError: ErrorInfo | null = null;
interface Waiter {
  resolve(s: Status): void;
  reject(e: SynchroError): void;
  deadline: ReturnType<typeof setTimeout> | null;
}
let waiters: Waiter[] = [];

function schedule(delayMs: number): void {
  if (!client) return;
  if (timer !== null) clearTimeout(timer);
  timer = setTimeout(step, Math.max(0, delayMs));
}

/** A step as soon as the current task ends (a microtask, not a timer's task): a
 *  notification's pull starts at once. */
function stepNow(): void {
  if (!client) return;
  if (timer !== null) clearTimeout(timer);
  timer = null;
  queueMicrotask(step);
}

function settle(fn: (w: Waiter) => void): void {
  const ws = waiters;
  waiters = [];
  for (const w of ws) {
    if (w.deadline !== null) clearTimeout(w.deadline);
    fn(w);
  }
}

function step(): void {
  timer = null;
  if (!client) return;
  const c = core!;
  const rc = c._sy_web_step(client);
  const due = c._sy_web_next_due();
  refreshLives();
  if (rc !== 0) {
    stepError = lastError();
    const e = new SynchroError(stepError);
    settle((w) => w.reject(e));
  }
  const cur = syFetch.current;
  if (cur && !cur.done) {
    // One more step while the request is on the wire seals the next batch ahead
    // (as sy_client_sync does); then the fetch's settling steps again.
    if (!sealedAhead) {
      sealedAhead = true;
      schedule(0);
    }
    return;
  }
  if (cur && cur.done) {
    schedule(0);
    return;
  }
  if (waiters.length > 0) {
    const s = status();
    if (s.phase === "idle") {
      if (s.frozen) {
        const e = new SynchroError({ rc: "efrozen", message: "the queue is frozen: nothing more is sent" });
        settle((w) => w.reject(e));
      } else {
        settle((w) => w.resolve(s));
      }
    }
  }
  if (due < 8.64e15) schedule(due - Date.now());
}

function sync(timeoutMs: number): Promise<Status> {
  return new Promise((resolve, reject) => {
    const w: Waiter = { resolve, reject, deadline: null };
    if (timeoutMs > 0)
      w.deadline = setTimeout(() => {
        waiters = waiters.filter((x) => x !== w);
        const s = status();
        reject(new SynchroError({ rc: "etimeout", message: "sync: out of time" + (s.last_error ? " (" + s.last_error + ")" : "") }));
      }, timeoutMs);
    waiters.push(w);
    core!._sy_web_kick(client);
    schedule(0);
  });
}

// --- live updates: a long-poll on /v3/live beside the requests ------------------------

// A notification names a cursor and nothing else; anything else only makes a pull due.
const NOTIFICATION = /^\{"cursor":"(c1\.[0-9a-f]{16}\.[0-9a-f]{8})"\}$/;
let liveOn = false;
let liveAbort: AbortController | null = null;

async function liveLoop(): Promise<void> {
  let backoff = 0;
  let since: Record<string, string> = {}; // nchan's id of the last message, sent back
  while (liveOn && client) {
    const abort = new AbortController();
    liveAbort = abort;
    let code = 0;
    let body = "";
    let lastModified: string | null = null;
    let etag: string | null = null;
    try {
      const auth = await authHeader(false);
      const r = await fetch(base + "/v3/live", {
        headers: { Authorization: auth, Accept: "text/plain", ...since },
        signal: abort.signal,
        cache: "no-store",
        credentials: "omit",
        redirect: "error",
      });
      body = await r.text();
      code = r.status;
      lastModified = r.headers.get("Last-Modified");
      etag = r.headers.get("Etag");
    } catch {
      code = 0; // no answer (or closed): as a request's
    }
    if (!liveOn || !client) return;
    if (code === 200) {
      backoff = 0;
      since = {};
      if (lastModified) since["If-Modified-Since"] = lastModified;
      if (etag) since["If-None-Match"] = etag;
      const m = NOTIFICATION.exec(body);
      if (!m || (status().cursor ?? "") < m[1]) {
        core!._sy_web_kick(client);
        stepNow();
      }
      continue;
    }
    if (code === 304 || code === 408) continue; // nothing new in time: again
    // no answer, nginx reloading (410), 5xx: again soon; 401, 403, 404 (no live updates
    // there): after a minute
    const min = code === 0 || code === 410 || code === 429 || code >= 500 ? 1000 : 60000;
    backoff = Math.min(Math.max(backoff * 2, min), 300000);
    await new Promise((r) => setTimeout(r, backoff));
  }
}

// --- the store's files ----------------------------------------------------------------

async function openFiles(name: string): Promise<void> {
  const storage = (navigator as unknown as { storage?: { getDirectory?: () => Promise<FileSystemDirectoryHandle> } }).storage;
  const proto = (globalThis as unknown as { FileSystemFileHandle?: { prototype: object } }).FileSystemFileHandle?.prototype;
  if (!storage?.getDirectory || !proto || !("createSyncAccessHandle" in proto))
    throw new SynchroError({
      rc: "estore",
      message: "no Origin Private File System with sync access handles here: the store cannot be kept (it is never kept in memory instead)",
    });
  if (!globalThis.crypto?.getRandomValues)
    throw new SynchroError({ rc: "estore", message: "no crypto.getRandomValues: identities cannot be generated" });
  const dir = await storage.getDirectory();
  for (const suffix of SUFFIXES) {
    const fh = (await dir.getFileHandle(name + suffix, { create: true })) as unknown as {
      createSyncAccessHandle(): Promise<SyncHandle>;
    };
    const started = Date.now();
    for (;;) {
      try {
        files[name + suffix] = await fh.createSyncAccessHandle();
        break;
      } catch (e) {
        // NoModificationAllowedError: a worker of a closing tab still holds the store
        if (Date.now() - started > LOCK_WAIT_MS)
          throw new SynchroError({ rc: "estore", message: "the store " + name + " is open in another tab or worker: " + String(e) });
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }
}

function closeFiles(): void {
  for (const k of Object.keys(files)) {
    try {
      files[k].close();
    } catch {
      // already closed
    }
    delete files[k];
  }
}

async function open(a: OpenArgs): Promise<Status> {
  if (client) throw new SynchroError({ rc: "estate", message: "already open" });
  try {
    await openFiles(a.name);
  } catch (e) {
    closeFiles(); // the handles opened before the failure: their files stay unlocked
    throw e;
  }
  base = a.url.replace(/\/+$/, "");
  tokenMode = a.token;
  token = null;
  authorization = a.token ? "" : basicAuth(a.user, a.password);
  requestTimeoutMs = a.requestTimeoutMs;
  if (!core) {
    const factory = (await import(new URL("./synchro-core.mjs", import.meta.url).href)).default;
    core = (await factory({ syOpfs: opfs, syFetch })) as Core;
  }
  client = core.ccall("sy_web_open", "number", ["string", "string", "number"], [a.name, base, a.pollIntervalMs]);
  if (!client) {
    const e = lastError();
    closeFiles();
    throw new SynchroError(e);
  }
  schedule(0);
  if (a.live) {
    liveOn = true;
    void liveLoop();
  }
  return status();
}

function transaction(atomic: boolean, writes: Write[]): string[] {
  const c = core!;
  const t = c._sy_web_begin(client, atomic ? 1 : 0);
  if (!t) fail();
  const ids: string[] = [];
  for (const w of writes) {
    const op = w.op === "insert" ? 105 : w.op === "update" ? 117 : 100;
    const columns = w.op === "delete" ? null : JSON.stringify(w.columns);
    const id = c.ccall("sy_web_write", "number", ["number", "number", "string", "string", "string"], [
      t,
      op,
      w.table,
      JSON.stringify(w.pk),
      columns,
    ]);
    if (!id) {
      const e = lastError();
      c._sy_web_rollback(t);
      throw new SynchroError(e);
    }
    ids.push(c.UTF8ToString(id));
  }
  if (c._sy_web_commit(t) !== 0) fail();
  schedule(0); // the commit made a step due
  refreshLives(writes.map((w) => w.table));
  return ids;
}

async function handle(r: Request): Promise<unknown> {
  if (r.op === "open") return open(r.args);
  if (!client) throw new SynchroError({ rc: "estate", message: "the store is not open" });
  const c = core!;
  switch (r.op) {
    case "transaction":
      return transaction(r.atomic, r.writes);
    case "get": {
      const p = c.ccall("sy_web_get", "number", ["number", "string", "string"], [client, r.table, JSON.stringify(r.pk)]);
      if (p === 0 && lastError().rc === "enotfound") return undefined;
      return JSON.parse(text(p));
    }
    case "rows":
      return JSON.parse(text(c.ccall("sy_web_rows", "number", ["number", "string"], [client, r.table])));
    case "status":
      return status();
    case "pending":
      return JSON.parse(text(c._sy_web_intents(client, r.all ? 1 : 0)));
    case "explain":
      return text(c.ccall("sy_web_explain", "number", ["number", "string"], [client, r.mutationId]));
    case "sync":
      return sync(r.timeoutMs);
    case "query":
      return query(r.sql, r.params).rows;
    case "live": {
      const l: Live = { sql: r.sql, params: r.params, tables: [], last: "" };
      query(r.sql, r.params); // a bad statement fails live() itself
      lives.set(r.liveId, l);
      runLive(r.liveId, l);
      return undefined;
    }
    case "resolve": {
      const columns = r.columns === null ? null : JSON.stringify(r.columns);
      const p = c.ccall("sy_web_resolve", "number", ["number", "string", "string", "string"], [client, r.how, r.mutationId, columns]);
      if (!p) fail();
      const nid = c.UTF8ToString(p);
      schedule(0); // a successor is due to be sent
      refreshLives();
      return nid === "" ? null : nid;
    }
    case "verify":
      return JSON.parse(text(c._sy_web_verify(client)));
    case "records": {
      const p = c._sy_web_records(client);
      if (p === 0) throw new SynchroError({ rc: "enomem", message: "out of memory" });
      const v = JSON.parse(text(p)) as StoreRecords | { error: string };
      if ("error" in v && typeof v.error === "string") throw new SynchroError({ rc: "estore", message: v.error });
      return v;
    }
    case "unlive":
      lives.delete(r.liveId);
      return undefined;
    case "index":
      if (!c.ccall("sy_web_index", "number", ["number", "string", "string"], [client, r.table, JSON.stringify(r.columns)]))
        fail();
      return undefined;
    case "close":
      if (timer !== null) clearTimeout(timer);
      liveOn = false;
      liveAbort?.abort();
      settle((w) => w.reject(new SynchroError({ rc: "estate", message: "closed" })));
      lives.clear();
      c._sy_web_close(client);
      client = 0;
      closeFiles();
      return undefined;
  }
}

// One request at a time, in arrival order: a transaction never interleaves with a step's
// answer to the page.
let queue: Promise<void> = Promise.resolve();
// A sync is answered when it ends, without holding the requests behind it.
function answer(id: number, value: Promise<unknown>): Promise<void> {
  return value.then(
    (v) => scope.postMessage({ id, ok: true, value: v } as Reply),
    (err) => {
      const info = err instanceof SynchroError ? err.info : { rc: "einval", message: String(err) };
      scope.postMessage({ id, ok: false, error: info } as Reply);
    },
  );
}

scope.onmessage = (e: MessageEvent) => {
  const r = e.data as Request;
  if (r.op === "token") {
    // the page's answer to askToken: not queued (a request in flight waits for it)
    tokenWaiters.get(r.ask)?.(typeof r.token === "string" && r.token !== "" ? r.token : null);
    tokenWaiters.delete(r.ask);
    return;
  }
  queue = queue.then(() => {
    const value = (async () => handle(r))();
    if (r.op === "sync") {
      void answer(r.id, value);
      return;
    }
    return answer(r.id, value);
  });
};
