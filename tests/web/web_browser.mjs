// SPDX-License-Identifier: BSD-2-Clause
// What the browser tests' node drivers share (tests/web/web_driver.mjs,
// web_faults_driver.mjs, web_kill_driver.mjs, tests/chaos/chaos_browser.mjs): Debian's
// Chromium launched by playwright-core (never a downloaded browser) on a profile directory,
// a page of tests/web/page.html loaded and ready, and a tab's renderer ended the hard ways
// (CDP Target.closeTarget: no unload handlers run; Page.crash: the renderer crashes).

import { createRequire } from "node:module";

export const CHROMIUM = "/usr/bin/chromium";
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"];
const QUIET = ["--disable-background-networking", "--disable-component-update", "--disable-sync"];

/** playwright-core's chromium, from the web build's node_modules (pwDir). */
export function chromiumOf(pwDir) {
  return createRequire(import.meta.url)(pwDir).chromium;
}

/** A persistent context (one browser profile: one device's origin storage) on Chromium. */
export function launch(chromium, profile, { quiet = true } = {}) {
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: quiet ? [...ARGS, ...QUIET] : ARGS,
  });
}

/**
 * A new page of context at url, once its module set window.ready; its console lines and
 * errors go to log (an array they are pushed to, or a function called with each), each
 * prefixed with label.
 */
export async function openPage(context, url, log, label = "") {
  const put = typeof log === "function" ? log : (line) => log.push(line);
  const prefix = label ? (label.endsWith(" ") ? label : label + " ") : "";
  const p = await context.newPage();
  p.on("console", (m) => put(prefix + m.type() + ": " + m.text()));
  p.on("pageerror", (e) => put(prefix + "pageerror: " + e.message));
  await p.goto(url);
  await p.waitForFunction(() => window.ready === true, null, { timeout: 20000 });
  return p;
}

/**
 * Ends page's tab at once, as a browser does when its tab is killed: "close" is CDP
 * Target.closeTarget (the renderer goes away, no unload handler runs), "crash" is CDP
 * Page.crash (the renderer process crashes; the tab is then closed). Resolves once the
 * page is gone.
 */
export async function killTab(context, page, how = "close") {
  const cdp = await context.newCDPSession(page);
  const gone = new Promise((resolve) => {
    if (page.isClosed()) resolve();
    page.once("close", resolve);
    page.once("crash", resolve);
  });
  if (how === "crash") {
    // Page.crash never answers: the renderer it would answer from is gone.
    cdp.send("Page.crash").catch(() => undefined);
    await gone;
    await page.close().catch(() => undefined);
  } else {
    const { targetInfo } = await cdp.send("Target.getTargetInfo");
    await cdp.send("Target.closeTarget", { targetId: targetInfo.targetId }).catch(() => page.close());
    await gone;
  }
}

/** Closes the tab of page p at once, as a crash would (no unload handlers run). */
export function closeTab(context, p) {
  return killTab(context, p, "close");
}

const TYPES = { html: "text/html", js: "text/javascript", mjs: "text/javascript", wasm: "application/wasm",
                json: "application/json" };

/**
 * Serves base + "/web/" to context's pages from the web build (dist) and the test page's
 * directory (pageDir) by route interception, so that only the API's requests (/v3/) reach
 * the network: the page keeps base's origin. Set before the first page.
 */
export async function serveWeb(context, base, dist, pageDir) {
  const { readFile } = await import("node:fs/promises");
  const { join } = await import("node:path");
  await context.route(base + "/web/**", async (route) => {
    const name = new URL(route.request().url()).pathname.slice("/web/".length);
    const ext = name.slice(name.lastIndexOf(".") + 1);
    for (const dir of [dist, pageDir]) {
      try {
        const body = await readFile(join(dir, name.replace(/\.\.+/g, "")));
        return route.fulfill({ status: 200, body, contentType: TYPES[ext] || "application/octet-stream" });
      } catch {
        // not in this directory
      }
    }
    return route.fulfill({ status: 404, body: "not found" });
  });
}
