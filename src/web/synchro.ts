// SPDX-License-Identifier: BSD-2-Clause
// The page's side of the browser client: a Synchro owns a dedicated Worker (worker.ts)
// that owns the store, and every call is one message to it, answered once. The writes of
// a transaction go in one message and are committed in one SQLite transaction there.

import type {
  ErrorInfo,
  Intent,
  LiveEvent,
  QueryRow,
  Reply,
  Request,
  ResolveHow,
  Row,
  Status,
  VerifyResult,
  Write,
} from "./protocol.js";

export type { ErrorInfo, Intent, QueryRow, ResolveHow, Row, Status, VerifyResult, Write } from "./protocol.js";

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
  /** Where worker.js is (default: beside this module). */
  workerUrl?: string | URL;
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

type Pending = { resolve(v: unknown): void; reject(e: SynchroError): void };

/** A live query's callback: its result whenever it changed, or the error of a re-run. */
export type LiveCallback = (rows: QueryRow[], error?: SynchroError) => void;
type Body<T> = T extends unknown ? Omit<T, "id"> : never;

export class Synchro {
  private next = 1;
  private readonly calls = new Map<number, Pending>();
  private readonly lives = new Map<number, LiveCallback>();

  private constructor(private readonly worker: Worker) {
    worker.onmessage = (e: MessageEvent) => {
      if ("live" in e.data) {
        const l = e.data as LiveEvent;
        const cb = this.lives.get(l.live);
        if (cb) {
          if ("rows" in l) cb(l.rows);
          else cb([], new SynchroError(l.error));
        }
        return;
      }
      const r = e.data as Reply;
      const p = this.calls.get(r.id);
      if (!p) return;
      this.calls.delete(r.id);
      if (r.ok) p.resolve(r.value);
      else p.reject(new SynchroError(r.error));
    };
    worker.onerror = (e: ErrorEvent) => {
      const err = new SynchroError({ rc: "estate", message: "the worker failed: " + e.message });
      for (const p of this.calls.values()) p.reject(err);
      this.calls.clear();
    };
  }

  private call<T>(r: Body<Request>): Promise<T> {
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      this.calls.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.worker.postMessage({ ...r, id });
    });
  }

  /**
   * Opens (creating when absent) the store and starts synchronizing with the server at
   * url as user. Fails with rc "estore" where the browser has no OPFS sync access handles:
   * the store is never kept in memory instead.
   */
  static async open(url: string, user: string, password: string, options: OpenOptions = {}): Promise<Synchro> {
    const worker = new Worker(options.workerUrl ?? new URL("./worker.js", import.meta.url), { type: "module" });
    const s = new Synchro(worker);
    try {
      await s.call<Status>({
        op: "open",
        args: {
          name: options.name ?? "synchro.db",
          url: new URL(url, location.href).href,
          user,
          password,
          pollIntervalMs: options.pollIntervalMs ?? 30000,
          requestTimeoutMs: options.requestTimeoutMs ?? 60000,
        },
      });
    } catch (e) {
      worker.terminate();
      throw e;
    }
    return s;
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
   * A live query: callback gets the result at once, then again whenever a local write or a
   * sync changed a table the statement reads and the result differs (once per step or
   * commit, not per row). Resolves, after the first result, to the function that ends it.
   */
  async live(sql: string, params: unknown[], callback: LiveCallback): Promise<() => void> {
    const liveId = this.next++;
    this.lives.set(liveId, callback);
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

  /** Closes the store (an in-flight request is abandoned; its batch goes again later). */
  async close(): Promise<void> {
    try {
      await this.call<void>({ op: "close" });
    } finally {
      this.worker.terminate();
    }
  }
}
