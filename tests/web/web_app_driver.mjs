// SPDX-License-Identifier: BSD-2-Clause
// The browser half of tests/web/test_web_app.pgt: Debian's Chromium driven by playwright-core
// (never a downloaded browser; the launch options of web_driver.mjs), one fresh profile, on
// the example to-do app (contrib/example/web). It works the app as a user does (typing and
// clicks) one step at a time: each line on stdin is a JSON command, answered by one JSON
// line on stdout (what the screen shows), so that the Python side checks the server's table
// between the steps.
// Usage: node web_app_driver.mjs PLAYWRIGHT_CORE_DIR APP_URL PROFILE_DIR LOG_DIR

import { createRequire } from "node:module";
import { createInterface } from "node:readline";

const [pwDir, appUrl, profile, logDir] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const { chromium } = require(pwDir);

const STEP_MS = 60000; // a step's bound (a slow shared machine: generous)
const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  viewport: { width: 860, height: 900 },
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
context.setDefaultTimeout(STEP_MS);
const consoleLines = [];
// A violation of the app's Content-Security-Policy, in the console where the test reads it
// (test_web_app.pgt fails on one), besides Chromium's own "Refused to ..." line.
await context.addInitScript(() => {
  document.addEventListener("securitypolicyviolation", (e) =>
    console.error("CSP violation: " + e.effectiveDirective + " blocked " + e.blockedURI));
});
const page = await context.newPage();
page.on("console", (m) => consoleLines.push(m.type() + ": " + m.text()));
page.on("pageerror", (e) => consoleLines.push("pageerror: " + e.message));

/** What the app's screen shows, read from its DOM. */
function screen() {
  return page.evaluate(() => {
    const $ = (id) => document.getElementById(id);
    const text = (e) => (e ? e.textContent.trim() : null);
    return {
      state: document.body.dataset.state,
      todos: [...document.querySelectorAll("#list li.todo")].map((li) => ({
        id: li.dataset.id,
        state: li.dataset.state,
        title: text(li.querySelector(".title")),
        done: li.querySelector("input[type=checkbox]").checked,
        badge: text(li.querySelector(".badge")),
      })),
      pending: Number($("sync-state").dataset.pending ?? "-1"),
      syncText: text($("sync-state")),
      banner: $("banner").hidden ? null : text($("banner")),
      message: $("message").hidden ? null : text($("message")),
      problems: [...document.querySelectorAll("#problems li.problem")].map((li) => ({
        mid: li.dataset.mid,
        state: li.dataset.state,
        pk: li.dataset.pk,
        heading: text(li.querySelector("h3")),
        server: text(li.querySelector(".side.server p")),
        mine: text(li.querySelector(".side.mine p")),
        why: text(li.querySelector(".why")),
        choices: [...li.querySelectorAll(".choices button")].map((b) => b.dataset.how + ":" + b.textContent),
        left: li.dataset.left === "true",
      })),
      online: navigator.onLine,
      count: $("count").hidden ? null : text($("count")),
      pageText: $("pager").hidden ? null : text($("page-text")),
      lists: [...$("list-picker").options].map((o) => o.textContent),
      list: $("list-picker").selectedOptions[0]?.textContent ?? null,
      shares: $("sharing").hidden ? null : [...$("shares").children].map((li) => li.dataset.user),
      listTitle: $("sharing").hidden ? null : text($("list-title")),
      listOwner: $("sharing").hidden ? null : text($("list-owner")),
      listActions: [...document.querySelectorAll(".list-actions button")].filter((b) => !b.hidden)
        .map((b) => b.textContent),
      removable: [...$("shares").querySelectorAll("button")].map((b) => b.getAttribute("aria-label")),
    };
  });
}

/** Polls the screen until every condition of want holds (or fails after STEP_MS). */
async function until(want) {
  const deadline = Date.now() + STEP_MS;
  let s;
  for (;;) {
    s = await screen();
    const todo = (t) => s.todos.find((x) => x.title === t);
    const ok =
      (want.pending === undefined || s.pending === want.pending) &&
      (want.banner === undefined || (s.banner !== null) === want.banner) &&
      (want.problems === undefined || s.problems.length === want.problems) &&
      (want.problemsLeft === undefined ||
        (s.problems.length > 0 && s.problems.every((p) => p.left) === want.problemsLeft)) &&
      (want.present ?? []).every((t) => todo(t)) &&
      (want.synced ?? []).every((t) => todo(t)?.state === "synced") &&
      (want.absent ?? []).every((t) => !todo(t)) &&
      (want.done ?? []).every((t) => todo(t)?.done === true) &&
      (want.lists ?? []).every((l) => s.lists.includes(l)) &&
      (want.noLists ?? []).every((l) => !s.lists.includes(l)) &&
      (want.list === undefined || s.list === want.list) &&
      (want.listTitle === undefined || s.listTitle === want.listTitle) &&
      (want.shares === undefined || JSON.stringify(s.shares) === JSON.stringify(want.shares));
    if (ok) return s;
    if (Date.now() > deadline) throw new Error("the screen never showed " + JSON.stringify(want) + ": " + JSON.stringify(s));
    await page.waitForTimeout(150);
  }
}

async function offline(on) {
  // Both: the browser's own offline mode (navigator.onLine, the events), and every request
  // to /v3/ refused while offline, whichever of them reaches the store's worker.
  await context.setOffline(on);
  if (on) await context.route("**/v3/**", (route) => route.abort("internetdisconnected"));
  else await context.unroute("**/v3/**");
}

const steps = {
  async refused({ user, password }) {
    await page.goto(appUrl);
    await page.getByLabel("Name", { exact: true }).fill(user);
    await page.getByLabel("Password", { exact: true }).fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForSelector("#sign-in-error:not([hidden])");
    await page.screenshot({ path: logDir + "/web-app-sign-in.png" });
    return { error: await page.locator("#sign-in-error").textContent(), ...(await screen()) };
  },
  async open({ user, password }) {
    await page.goto(appUrl);
    await page.getByLabel("Name", { exact: true }).fill(user);
    await page.getByLabel("Password", { exact: true }).fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForSelector("body[data-state=signed-in]");
    return until({ pending: 0 });
  },
  async openLarge({ user, password }) {
    // Signs in, keeping every text the first sync's progress bar showed (and its value/max).
    await page.goto(appUrl);
    await page.evaluate(() => {
      window.progressSeen = [];
      const text = document.getElementById("first-sync-text");
      new MutationObserver(() => {
        const bar = document.getElementById("first-sync-bar");
        if (!document.getElementById("first-sync").hidden)
          window.progressSeen.push(text.textContent + " [" + bar.value + "/" + bar.max + "]");
      }).observe(text, { childList: true, characterData: true, subtree: true });
    });
    await page.getByLabel("Name", { exact: true }).fill(user);
    await page.getByLabel("Password", { exact: true }).fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForSelector("body[data-state=signed-in]", { timeout: 4 * STEP_MS });
    const s = await until({ pending: 0 });
    return { progress: await page.evaluate(() => window.progressSeen), ...s };
  },
  async addTimed({ title }) {
    // Adds a to-do as a user does and times it from the form's submit to its row in the list.
    await page.getByLabel("New to-do").fill(title);
    const ms = await page.evaluate((title) => new Promise((resolve) => {
      const list = document.getElementById("list");
      const shown = () => [...list.querySelectorAll("li.todo .title")].some((e) => e.textContent.trim() === title);
      const t0 = performance.now();
      new MutationObserver((_, mo) => {
        if (shown()) {
          mo.disconnect();
          resolve(performance.now() - t0);
        }
      }).observe(list, { childList: true, subtree: true, characterData: true });
      document.getElementById("add-form").requestSubmit();
    }), title);
    return { ms, ...(await screen()) };
  },
  async click({ name }) {
    await page.getByRole("button", { name, exact: true }).click();
    return screen();
  },
  async signOut() {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForSelector("body[data-state=signed-out]");
    return screen();
  },
  async add({ title, listed = true }) {
    await page.getByLabel("New to-do").fill(title);
    await page.getByLabel("New to-do").press("Enter");
    return listed ? until({ present: [title] }) : screen();
  },
  async edit({ from, to }) {
    await page.getByRole("button", { name: "Edit \u201c" + from + "\u201d", exact: true }).click();
    const input = page.getByLabel("New title for \u201c" + from + "\u201d", { exact: true });
    await input.fill(to);
    await input.press("Enter");
    return until({ present: [to], absent: [from] });
  },
  async complete({ title }) {
    await page.getByRole("checkbox", { name: "Mark done: " + title, exact: true }).click();
    return until({ done: [title] });
  },
  async remove({ title }) {
    await page.getByRole("button", { name: "Delete \u201c" + title + "\u201d", exact: true }).click();
    return until({ absent: [title] });
  },
  async newList({ name }) {
    await page.getByLabel("New list name").fill(name);
    await page.getByRole("button", { name: "New list", exact: true }).click();
    return until({ lists: [name], list: name });
  },
  async pickList({ name }) {
    await page.getByLabel("List", { exact: true }).selectOption({ label: name });
    return until({ list: name });
  },
  async shareWith({ user }) {
    await page.getByLabel("Share with").fill(user);
    await page.getByRole("button", { name: "Share", exact: true }).click();
    return screen();
  },
  async renameList({ name, screenshot }) {
    await page.getByRole("button", { name: "Rename", exact: true }).click();
    await page.getByLabel("New name of the list", { exact: true }).fill(name);
    if (screenshot) await page.screenshot({ path: logDir + "/" + screenshot, fullPage: true });
    await page.getByRole("button", { name: "Save", exact: true }).click();
    return until({ lists: [name], list: name, listTitle: name });
  },
  async confirmed({ action, screenshot }) {
    // "Delete list" or "Leave list", then the same button of the question the app asks.
    await page.getByRole("button", { name: action, exact: true }).click();
    await page.waitForSelector("#confirm:not([hidden])");
    const question = await page.locator("#confirm-text").textContent();
    if (screenshot) await page.screenshot({ path: logDir + "/" + screenshot, fullPage: true });
    await page.locator("#confirm").getByRole("button", { name: action, exact: true }).click();
    return { question, ...(await screen()) };
  },
  async unshare({ user }) {
    await page.getByRole("button", { name: "Stop sharing with " + user, exact: true }).click();
    return screen();
  },
  async offline({ on }) {
    await offline(on);
    return screen();
  },
  async unreachable({ on }) {
    // The browser online, the server not answering: the banner comes from the failed syncs.
    if (on) await context.route("**/v3/**", (route) => route.abort("connectionrefused"));
    else await context.unroute("**/v3/**");
    return screen();
  },
  async syncNow() {
    await page.getByRole("button", { name: "Sync now" }).click();
    return screen();
  },
  async until(want) {
    return until(want);
  },
  async resolve({ pk, how }) {
    await page.locator(`#problems li.problem[data-pk="${pk}"] button[data-how="${how}"]`).click();
    return screen();
  },
  async screenshot({ name, width, height, full = true }) {
    if (width) await page.setViewportSize({ width, height });
    if (!full) await page.evaluate(() => window.scrollTo(0, 0)); // the top of the page, as it opens
    await page.screenshot({ path: logDir + "/" + name, fullPage: full });
    if (width) await page.setViewportSize({ width: 860, height: 900 });
    return { path: logDir + "/" + name, ...(await screen()) };
  },
  async a11y() {
    // Every control has an accessible name; the list and the status are labelled regions.
    return page.evaluate(() => {
      const unnamed = [...document.querySelectorAll("button, input")]
        .filter((e) => e.offsetParent !== null)
        .filter((e) => !(e.getAttribute("aria-label") || e.labels?.length || e.textContent.trim()))
        .map((e) => e.outerHTML.slice(0, 80));
      return { unnamed, lang: document.documentElement.lang };
    });
  },
};

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  const cmd = JSON.parse(line);
  let out;
  try {
    out = { ok: true, value: await steps[cmd.step](cmd) };
  } catch (e) {
    out = { ok: false, error: String(e && e.stack ? e.stack : e) };
  }
  out.console = consoleLines.splice(0);
  process.stdout.write(JSON.stringify(out) + "\n");
}
await context.close();
