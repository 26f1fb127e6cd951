// SPDX-License-Identifier: BSD-2-Clause
// What the browser tests' drivers (web_driver.mjs, web_faults_driver.mjs) share: Debian's
// Chromium launched by playwright-core (never a downloaded browser) on a profile of its
// own, the test page opened and ready, and a tab closed the way a crash or a kill closes
// it (CDP Target.closeTarget: no unload handlers run).

import { createRequire } from "node:module";

export const CHROMIUM = "/usr/bin/chromium";
const ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
];

/** playwright-core's chromium, from the web build's node_modules directory pwDir. */
export function chromiumOf(pwDir) {
  const require = createRequire(import.meta.url);
  return require(pwDir).chromium;
}

/** A browser on its own profile directory (one device: its own origin storage, OPFS). */
export function launch(chromium, profile) {
  return chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS });
}

/**
 * A new tab of context on url (the test page), once the page says it is ready; its console
 * lines and errors go to log, each prefixed with label.
 */
export async function openPage(context, url, log, label = "") {
  const p = await context.newPage();
  const prefix = label ? label + " " : "";
  p.on("console", (m) => log.push(prefix + m.type() + ": " + m.text()));
  p.on("pageerror", (e) => log.push(prefix + "pageerror: " + e.message));
  await p.goto(url);
  await p.waitForFunction(() => window.ready === true, null, { timeout: 20000 });
  return p;
}

/** Closes the tab of page p at once, as a crash would (no unload handlers run). */
export async function closeTab(context, p) {
  const cdp = await context.newCDPSession(p);
  const { targetInfo } = await cdp.send("Target.getTargetInfo");
  await cdp.send("Target.closeTarget", { targetId: targetInfo.targetId }).catch(() => p.close());
}
