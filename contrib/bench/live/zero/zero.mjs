// SPDX-License-Identifier: BSD-2-Clause
// Rocicorp Zero beside contrib/bench/live (bench.py's zero phase runs it, with zero-cache
// started by bench.py on the same PostgreSQL): the app's query endpoint that zero-cache
// asks (ZERO_QUERY_URL: the query "mine", the to-dos whose owner is the user the request's
// token names; here the token is the user's name) on 127.0.0.1:QUERY_PORT, and a Node client
// with an in-memory store (kvStore "mem") subscribed to that query through zero-cache at
// 127.0.0.1:ZERO_PORT. It prints {"ready": true} once the query's first complete result is
// in, then one line per to-do id the view sees for the first time: {"pk": ID, "m": M}, M in
// ms on CLOCK_MONOTONIC (process.hrtime), the bench's clock (watch.py). It ends when stdin
// closes.
// Usage: node zero.mjs ZERO_PORT QUERY_PORT USER

import http from "node:http";
import WebSocket from "ws";
import { Zero, createSchema, table, string, boolean, createBuilder, defineQueries, defineQuery } from "@rocicorp/zero";
import { handleQueryRequest } from "@rocicorp/zero/server";

const [zeroPort, queryPort, user] = process.argv.slice(2);
globalThis.WebSocket ??= WebSocket; // Node 20 has none of its own

const todo = table("todo").columns({ id: string(), title: string(), owner: string(), done: boolean().optional() }).primaryKey("id");
const schema = createSchema({ tables: [todo] });
const zql = createBuilder(schema);
const queries = defineQueries({ mine: defineQuery(({ ctx }) => zql.todo.where("owner", ctx.userID)) });

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", async () => {
    try {
      const auth = req.headers.authorization ?? "";
      const who = auth.startsWith("Bearer ") ? auth.slice(7) : null;
      if (!who) {
        res.writeHead(401).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString());
      const out = await handleQueryRequest(
        (name, args) => queries[name].fn({ args, ctx: { userID: who } }),
        schema, body);
      res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(out));
    } catch (e) {
      process.stderr.write("zero.mjs: query endpoint: " + e.stack + "\n");
      res.writeHead(500).end();
    }
  });
});
await new Promise((r) => server.listen(Number(queryPort), "127.0.0.1", r));

const z = new Zero({ server: "http://127.0.0.1:" + zeroPort, userID: user, auth: user, schema, kvStore: "mem",
                     context: { userID: user }, logLevel: "error" });
const view = z.materialize(queries.mine());
const seen = new Set();
let ready = false;
view.addListener((rows, resultType) => {
  const m = Number(process.hrtime.bigint()) / 1e6;
  for (const r of rows) {
    if (seen.has(r.id)) continue;
    seen.add(r.id);
    if (ready) process.stdout.write(JSON.stringify({ pk: r.id, m }) + "\n");
  }
  if (!ready && resultType === "complete") {
    ready = true;
    process.stdout.write(JSON.stringify({ ready: true }) + "\n");
  }
});

process.stdin.resume();
await new Promise((resolve) => process.stdin.on("end", resolve));
view.destroy();
await z.close();
server.close();
