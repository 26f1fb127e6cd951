// SPDX-License-Identifier: BSD-2-Clause
// protocol.ts: the messages between the page (synchro.ts) and the worker that owns the
// client (worker.ts), and the records both hand to the app.
//
// Layer: base of src/web (doc/hacking.md).
// Notes: Each request carries an id. The worker answers it once, with a value or an error.
// A "token" answer to the worker's own ask gets no answer.

/** A libsynchro-client error: rc is its code ("einval", "enotfound", "estore", ...). */
export interface ErrorInfo {
  rc: string;
  message: string;
}

/** The status, as `synchro-cli status --json` prints it. */
export interface Status {
  client_id: string;
  client_generation: number;
  schema_version: number;
  schema_hash: string | null;
  phase: "idle" | "connecting" | "schema" | "pushing" | "pulling" | "rebuilding" | "backoff" | "stopped";
  cursor: string | null;
  rebuilding: boolean;
  /** While rebuilding: the rows received so far. */
  rebuild_rows: number;
  /** The rows the whole rebuild holds, when the server said; draw rebuild_rows / rebuild_total. */
  rebuild_total: number | null;
  frozen: boolean;
  retired: boolean;
  last_error: string | null;
  last_error_retryable: boolean;
  next_attempt_ms: number;
  unsettled_batches: number;
  counts: Record<string, number>;
}

/** An intent, as `synchro-cli show --json` prints it. */
export interface Intent {
  mutation_id: string;
  state: string;
  table: string;
  pk: unknown;
  operation: "insert" | "update" | "delete";
  columns: Record<string, unknown> | null;
  base_version: string | null;
  client_version: string;
  schema_version: number;
  local_order: number;
  normalized: boolean;
  atomic: boolean;
  link: string | null;
  batch_id: string | null;
  code: string | null;
  outcome: unknown;
}

/** A row's visible state: the server's row overlaid with the unsettled intents. */
export interface Row {
  pk: unknown;
  state: "synced" | "pending" | "conflict" | "blocked";
  row: Record<string, unknown> | null;
}

export type Write =
  | { op: "insert"; table: string; pk: unknown; columns: Record<string, unknown> }
  | { op: "update"; table: string; pk: unknown; columns: Record<string, unknown> }
  | { op: "delete"; table: string; pk: unknown };

export interface OpenArgs {
  name: string;
  url: string;
  user: string;
  password: string;
  /** Bearer tokens instead of user and password: the worker asks the page for one (TokenAsk). */
  token: boolean;
  pollIntervalMs: number;
  requestTimeoutMs: number;
  live: boolean;
}

export type Request =
  | { id: number; op: "open"; args: OpenArgs }
  | { id: number; op: "transaction"; atomic: boolean; writes: Write[] }
  | { id: number; op: "get"; table: string; pk: unknown }
  | { id: number; op: "rows"; table: string }
  | { id: number; op: "status" }
  | { id: number; op: "pending"; all: boolean }
  | { id: number; op: "explain"; mutationId: string }
  | { id: number; op: "sync"; timeoutMs: number }
  | { id: number; op: "query"; sql: string; params: unknown[] }
  | { id: number; op: "live"; liveId: number; sql: string; params: unknown[] }
  | { id: number; op: "unlive"; liveId: number }
  | { id: number; op: "index"; table: string; columns: string[] }
  | { id: number; op: "resolve"; how: ResolveHow; mutationId: string; columns: Record<string, unknown> | null }
  | { id: number; op: "verify" }
  | { id: number; op: "records" }
  | { id: number; op: "close" }
  | { id: number; op: "token"; ask: number; token: string | null };

/** The worker asks the page for a bearer token (the first, or a fresh one after a 401); the
 *  page answers with a "token" request of the same ask, which the worker does not answer. */
export interface TokenAsk {
  tokenAsk: number;
}

/** The Authorization header of HTTP basic credentials (RFC 7617, UTF-8, as libcurl sends them). */
export function basicAuth(user: string, password: string): string {
  const bytes = new TextEncoder().encode(user + ":" + password);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return "Basic " + btoa(bin);
}

/** How resolve() settles an intent, as synchro-cli resolve. */
export type ResolveHow = "discard" | "accept" | "rebase" | "remap";

/** What verify() finds, as synchro-cli verify --json: ok, or the report of what failed. */
export interface VerifyResult {
  ok: boolean;
  report: string | null;
}

/**
 * What records() resolves to: the store's own tables (meta, rows, schemas, txns, intents,
 * batches, batch_members, attempts), each an array of its rows as objects of its columns;
 * a BLOB column (a batch's body, a response) is {hex: its bytes in hex}.
 */
export type StoreRecords = Record<string, Record<string, unknown>[]>;

/** What query() resolves to: the rows, each an object of the statement's columns. */
export type QueryRow = Record<string, unknown>;

/** The worker's own message to a live query: its new result, or why it could not run. */
export type LiveEvent = { live: number; rows: QueryRow[] } | { live: number; error: ErrorInfo };

export type Reply =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: ErrorInfo };
