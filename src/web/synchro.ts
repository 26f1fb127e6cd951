// SPDX-License-Identifier: BSD-2-Clause
// synchro.ts: the page's side of the browser client. A Synchro owns a dedicated Worker
// (worker.ts), which owns the store.
//
// Layer: top of src/web (doc/hacking.md).
// Notes: Every call is one message to the worker, answered once. The writes of a
// transaction go in one message. The worker commits them in one SQLite transaction. Tabs of
// one origin share a store. The tab that holds its Web Lock owns the worker. The other tabs'
// calls reach it through a BroadcastChannel, until they take the lock over.

import type {
  ErrorInfo,
  OpenArgs,
  Intent,
  LiveEvent,
  QueryRow,
  Reply,
  Request,
  ResolveHow,
  Row,
  Status,
  StoreRecords,
  TokenAsk,
  VerifyResult,
  Write,
} from "./protocol.js";
import { basicAuth } from "./protocol.js";

export type {
  ErrorInfo,
  Intent,
  QueryRow,
  ResolveHow,
  Row,
  Status,
  StoreRecords,
  VerifyResult,
  Write,
} from "./protocol.js";

/** A libsynchro-client error; rc is its code ("einval", "enotfound", "estore", ...). */
export class SynchroError extends Error {
  readonly rc: string;
  constructor(info: ErrorInfo) {
    super(info.message);
    this.name = "SynchroError";
    this.rc = info.rc;
  }
}

export interface OpenOptions {
  /** The store's name in the origin's private file system (default "synchro.db"). */
  name?: string;
  /** The idle interval between pulls, in ms (default 30000). */
  pollIntervalMs?: number;
  /** A request's time limit, in ms (default 60000). */
  requestTimeoutMs?: number;
  /** Live updates: subscribe to the server's notifications and pull as soon as it has
   *  changes (default true; false: the poll only). */
  live?: boolean;
  /** Where worker.js is (default: beside this module). */
  workerUrl?: string | URL;
  /**
   * Bearer tokens instead of a user and password (the app's identity provider): called for
   * the first token and for a fresh one after the server answers 401. The token is sent as
   * "Authorization: Bearer" and kept in memory only.
   */
  token?: () => Promise<string>;
}

/** The writes of one transaction, recorded by transaction()'s callback. */
export class Transaction {
  readonly writes: Write[] = [];
  insert(table: string, pk: unknown, columns: Record<string, unknown>): void {
    this.writes.push({ op: "insert", table, pk, columns });
  }
  update(table: string, pk: unknown, columns: Record<string, unknown>): void {
    this.writes.push({ op: "update", table, pk, columns });
  }
  delete(table: string, pk: unknown): void {
    this.writes.push({ op: "delete", table, pk });
  }
}

type Pending = { resolve(v: unknown): void; reject(e: SynchroError): void; msg: Request };

/** A live query's callback: its result whenever it changed, or the error of a re-run. */
export type LiveCallback = (rows: QueryRow[], error?: SynchroError) => void;
type Body<T> = T extends unknown ? Omit<T, "id"> : never;

// Between the tabs of one origin on one store (BroadcastChannel "synchro:" + name):
// a call from a tab that does not own the store, and the owner's answer to it.
type TabMessage =
  | { to: "owner"; from: string; msg: Request }
  | { to: string; msg: Reply | LiveEvent };

// Calls that change the store: never sent twice after a handover (their outcome is unknown).
const WRITES = new Set(["transaction", "resolve"]);

export class Synchro {
  private next = 1;
  private readonly calls = new Map<number, Pending>();
  private readonly lives = new Map<number, { callback: LiveCallback; msg: Request }>();
  private worker: Worker | null = null;
  private readonly tab = crypto.randomUUID();
  private readonly channel: BroadcastChannel;
  // The owner's side: a forwarded call's or live query's id -> the tab and its own id.
  private readonly forwarded = new Map<number, { tab: string; id: number }>();
  private readonly forwardedLives = new Map<number, { tab: string; id: number }>();
  private releaseLock: () => void = () => undefined;
  private closed = false;

  private constructor(
    private readonly args: OpenArgs,
    private readonly workerUrl: string | URL,
    private readonly tokenFn?: () => Promise<string>,
  ) {
    this.channel = new BroadcastChannel("synchro:" + args.name);
    this.channel.onmessage = (e: MessageEvent) => this.fromTab(e.data as TabMessage);
  }

  /** The store's owner (this tab holds the Web Lock): its worker answers. */
  get owner(): boolean {
    return this.worker !== null;
  }

  private fromWorker(data: Reply | LiveEvent | TokenAsk): void {
    if ("tokenAsk" in data) {
      const ask = data.tokenAsk;
      const reply = (token: string | null) => this.worker?.postMessage({ id: 0, op: "token", ask, token } as Request);
      this.freshToken().then(reply, () => reply(null));
      return;
    }
    if ("live" in data) {
      const f = this.forwardedLives.get(data.live);
      if (f) {
        this.channel.postMessage({ to: f.tab, msg: { ...data, live: f.id } } as TabMessage);
        return;
      }
    } else {
      const f = this.forwarded.get(data.id);
      if (f) {
        this.forwarded.delete(data.id);
        this.channel.postMessage({ to: f.tab, msg: { ...data, id: f.id } } as TabMessage);
        return;
      }
    }
    this.dispatch(data);
  }

  private dispatch(data: Reply | LiveEvent): void {
    if ("live" in data) {
      const l = this.lives.get(data.live);
      if (l) {
        if ("rows" in data) l.callback(data.rows);
        else l.callback([], new SynchroError(data.error));
      }
      return;
    }
    const p = this.calls.get(data.id);
    if (!p) return;
    this.calls.delete(data.id);
    if (data.ok) p.resolve(data.value);
    else p.reject(new SynchroError(data.error));
  }

  private fromTab(m: TabMessage): void {
    if (m.to === "owner") {
      if (!this.worker) return;
      const f = m as { from: string; msg: Request };
      const id = this.next++;
      this.forwarded.set(id, { tab: f.from, id: f.msg.id });
      const msg = { ...f.msg, id } as Request;
      if (msg.op === "live" || msg.op === "unlive") {
        const liveId = this.next++;
        if (msg.op === "live") this.forwardedLives.set(liveId, { tab: f.from, id: msg.liveId });
        else
          for (const [k, v] of this.forwardedLives)
            if (v.tab === f.from && v.id === msg.liveId) {
              this.forwardedLives.delete(k);
              msg.liveId = k;
            }
        if (msg.op === "live") msg.liveId = liveId;
      }
      this.worker.postMessage(msg);
    } else if (m.to === this.tab) {
      this.dispatch(m.msg);
    }
  }

  private send(msg: Request): void {
    if (this.worker) this.worker.postMessage(msg);
    else this.channel.postMessage({ to: "owner", from: this.tab, msg } as TabMessage);
  }

  private call<T>(r: Body<Request>): Promise<T> {
    if (this.closed) return Promise.reject(new SynchroError({ rc: "estate", message: "closed" }));
    const id = this.next++;
    const msg = { ...r, id } as Request;
    return new Promise<T>((resolve, reject) => {
      this.calls.set(id, { resolve: resolve as (v: unknown) => void, reject, msg });
      this.send(msg);
    });
  }

  /** Becomes the owner: a worker of its own opens the store; the pending calls go to it. */
  private async own(): Promise<void> {
    const w = new Worker(this.workerUrl, { type: "module" });
    w.onmessage = (e: MessageEvent) => this.fromWorker(e.data as Reply | LiveEvent | TokenAsk);
    w.onerror = (e: ErrorEvent) => {
      const err = new SynchroError({ rc: "estate", message: "the worker failed: " + e.message });
      for (const p of this.calls.values()) p.reject(err);
      this.calls.clear();
    };
    const handover = [...this.calls.entries()];
    this.worker = w;
    const id = this.next++;
    const opened = new Promise<unknown>((resolve, reject) => {
      this.calls.set(id, { resolve, reject, msg: { id, op: "open", args: this.args } });
    });
    w.postMessage({ id, op: "open", args: this.args } as Request);
    // What the former owner had not answered: reads again, writes refused (they may be done).
    for (const [cid, p] of handover) {
      if (WRITES.has(p.msg.op)) {
        this.calls.delete(cid);
        p.reject(new SynchroError({
          rc: "estate",
          message: "the tab that owned the store closed before answering: pending() says whether it was committed",
        }));
      } else if (p.msg.op !== "live") {
        w.postMessage(p.msg);
      }
    }
    for (const [liveId, l] of this.lives) w.postMessage({ ...l.msg, id: this.next++, liveId } as Request);
    await opened;
  }

  /** A token from the app's token function, or null when it gave none. */
  private async freshToken(): Promise<string | null> {
    if (!this.tokenFn) return null;
    const t = await this.tokenFn();
    return typeof t === "string" && t !== "" ? t : null;
  }

  /**
   * A tab that joins another tab's store checks its own credentials with the server
   * (GET /v3/schema under them) before it is treated as signed in: the owner's worker
   * syncs with the owner's credentials, so without this check any password would do.
   * 401 or 403: rc "eserver" (auth_required). When the server gives no answer (offline),
   * the tab opens as an owning tab opens offline: with the store this browser holds.
   */
  private async checkCredentials(): Promise<void> {
    const attempt = async (fresh: boolean): Promise<number> => {
      const headers: Record<string, string> = { "Synchro-Protocol": "3" };
      if (this.args.token) {
        const t = fresh || !this.checkToken ? await this.freshToken() : this.checkToken;
        this.checkToken = t;
        if (t) headers.Authorization = "Bearer " + t;
      } else {
        headers.Authorization = basicAuth(this.args.user, this.args.password);
      }
      const r = await fetch(this.args.url.replace(/\/+$/, "") + "/v3/schema", {
        headers,
        cache: "no-store",
        credentials: "omit",
        redirect: "error",
        signal: AbortSignal.timeout(this.args.requestTimeoutMs),
      });
      await r.arrayBuffer().catch(() => undefined);
      return r.status;
    };
    let status = 0;
    try {
      status = await attempt(false);
      if (status === 401 && this.args.token) status = await attempt(true);
    } catch {
      status = 0; // no answer: offline
    } finally {
      this.checkToken = null;
    }
    if (status === 401 || status === 403)
      throw new SynchroError({ rc: "eserver", message: "auth_required: the server refused this tab's credentials" });
  }
  private checkToken: string | null = null;

  /**
   * Opens (creating when absent) the store and starts synchronizing with the server at
   * url, as user with password, or with bearer tokens from options.token
   * (`Synchro.open(url, {token: () => ...})`). Fails with rc "estore" where the browser has
   * no OPFS sync access handles: the store is never kept in memory instead. Tabs of one
   * origin share a store: the tab holding its Web Lock owns it (its worker syncs); the
   * others' calls go to it through a BroadcastChannel, and one of them takes over when it
   * closes. A tab that joins checks its own credentials with the server first, and fails
   * (rc "eserver", auth_required) when they are refused.
   */
  static async open(url: string, options: OpenOptions & { token: () => Promise<string> }): Promise<Synchro>;
  static async open(url: string, user: string, password: string, options?: OpenOptions): Promise<Synchro>;
  static async open(
    url: string,
    userOrOptions: string | OpenOptions,
    password = "",
    opts: OpenOptions = {},
  ): Promise<Synchro> {
    const byToken = typeof userOrOptions !== "string";
    const options = byToken ? userOrOptions : opts;
    if (byToken && typeof options.token !== "function")
      throw new SynchroError({ rc: "einval", message: "open: options.token must be a function returning a token" });
    const args: OpenArgs = {
      name: options.name ?? "synchro.db",
      url: new URL(url, location.href).href,
      user: byToken ? "" : userOrOptions,
      password: byToken ? "" : password,
      token: byToken,
      pollIntervalMs: options.pollIntervalMs ?? 30000,
      requestTimeoutMs: options.requestTimeoutMs ?? 60000,
      live: options.live ?? true,
    };
    const s = new Synchro(args, options.workerUrl ?? new URL("./worker.js", import.meta.url), options.token);
    const locks = (navigator as unknown as { locks?: LockManager }).locks;
    if (!locks) {
      await s.own().catch((e) => {
        s.stop();
        throw e;
      });
      return s;
    }
    const lock = "synchro:" + args.name;
    const held = new Promise<void>((release) => (s.releaseLock = release));
    let first: (owned: boolean) => void = () => undefined;
    const decided = new Promise<boolean>((r) => (first = r));
    // Try at once; without it, wait in line: the grant is the handover.
    void locks.request(lock, { ifAvailable: true }, async (l) => {
      if (!l) {
        first(false);
        return;
      }
      first(true);
      await held;
    });
    if (await decided) {
      try {
        await s.own();
      } catch (e) {
        s.stop();
        throw e;
      }
      return s;
    }
    try {
      await s.checkCredentials();
    } catch (e) {
      s.stop();
      throw e;
    }
    void locks.request(lock, async () => {
      if (s.closed) return;
      await s.own().catch(() => undefined);
      await held;
    });
    await s.call<Status>({ op: "status" }); // the owner answers: the store is open there
    return s;
  }

  private stop(): void {
    this.closed = true;
    this.worker?.terminate();
    this.worker = null;
    this.channel.close();
    this.releaseLock();
  }

  /**
   * Runs fn to record writes, then commits them as one transaction (durable when the
   * promise resolves: the intents survive the tab closing). atomic: one all-or-nothing
   * batch on the server. Resolves to the new intents' mutation ids.
   */
  async transaction(fn: (tx: Transaction) => void, options: { atomic?: boolean } = {}): Promise<string[]> {
    const tx = new Transaction();
    fn(tx);
    return this.call<string[]>({ op: "transaction", atomic: options.atomic ?? false, writes: tx.writes });
  }

  /** A row's visible state, or undefined when no one knows the row. */
  get(table: string, pk: unknown): Promise<Row | undefined> {
    return this.call<Row | undefined>({ op: "get", table, pk });
  }

  /** Every known row of table, in primary key order. */
  rows(table: string): Promise<Row[]> {
    return this.call<Row[]>({ op: "rows", table });
  }

  /**
   * Runs one read-only SQL statement over the visible rows of the synced tables: each
   * manifest table is a table of that name with its primary key's and its fields' columns
   * and `_state` ("synced", "pending", "conflict", "blocked"); deleted rows are absent.
   * params are bound in order (?). A write, ATTACH or PRAGMA fails with rc "einval":
   * the store changes only through transaction().
   */
  query(sql: string, params: unknown[] = []): Promise<QueryRow[]> {
    return this.call<QueryRow[]>({ op: "query", sql, params });
  }

  /**
   * An index on a synced table's columns, for query() and live(): kept in the store, made
   * again when a new schema rebuilds the tables. A table or column the schema lacks: einval.
   */
  index(table: string, columns: string[]): Promise<void> {
    return this.call<void>({ op: "index", table, columns });
  }

  /**
   * A live query: callback gets the result at once, then again whenever a local write or a
   * sync changed a table the statement reads and the result differs (once per step or
   * commit, not per row). Resolves, after the first result, to the function that ends it.
   */
  async live(sql: string, params: unknown[], callback: LiveCallback): Promise<() => void> {
    const liveId = this.next++;
    this.lives.set(liveId, { callback, msg: { id: 0, op: "live", liveId, sql, params } });
    try {
      await this.call<void>({ op: "live", liveId, sql, params });
    } catch (e) {
      this.lives.delete(liveId);
      throw e;
    }
    return () => {
      if (this.lives.delete(liveId)) void this.call<void>({ op: "unlive", liveId }).catch(() => undefined);
    };
  }

  /** Pushes every sendable intent and pulls until caught up; resolves to the status. */
  sync(timeoutMs = 60000): Promise<Status> {
    return this.call<Status>({ op: "sync", timeoutMs });
  }

  /** Phase, last error, counts by intent state: as synchro-cli status. */
  status(): Promise<Status> {
    return this.call<Status>({ op: "status" });
  }

  /** The unsettled intents in local order (all: every intent). */
  pending(all = false): Promise<Intent[]> {
    return this.call<Intent[]>({ op: "pending", all });
  }

  /** Why an intent is in its state, in one paragraph. */
  explain(mutationId: string): Promise<string> {
    return this.call<string>({ op: "explain", mutationId });
  }

  /**
   * Settles a conflicted, rejected, blocked or schema-incompatible intent, as synchro-cli
   * resolve: "discard" it, "accept" the server's row (a conflict), "rebase" it onto the
   * server's current row (with columns, or its own), or "remap" it under the current schema
   * (columns required). Resolves to the successor's mutation id, or null (discard, accept).
   */
  resolve(how: ResolveHow, mutationId: string, columns?: Record<string, unknown>): Promise<string | null> {
    return this.call<string | null>({ op: "resolve", how, mutationId, columns: columns ?? null });
  }

  /** Checks the store (SQLite's integrity, row checksums, batch SHA-256s, links), as synchro-cli verify. */
  verify(): Promise<VerifyResult> {
    return this.call<VerifyResult>({ op: "verify" });
  }

  /**
   * The store's own records (its intents with their states and links, sealed batches with
   * every attempt, the server rows, the meta keys), read in one transaction: what the
   * native client's SQLite file holds, for tests and support tools (the store itself
   * stays inside the origin's private file system). Read only.
   */
  records(): Promise<StoreRecords> {
    return this.call<StoreRecords>({ op: "records" });
  }

  /**
   * Closes the store (an in-flight request is abandoned; its batch goes again later). In a
   * tab that does not own the store, this tab only stops; in the owner, another tab of the
   * store takes it over.
   */
  async close(): Promise<void> {
    try {
      if (this.worker) await this.call<void>({ op: "close" });
    } finally {
      this.stop();
    }
  }
}
