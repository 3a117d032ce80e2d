// One headless Debian chromium, driven by playwright-core, taking one JSON command a line on
// stdin and answering one JSON line on stdout: {"ok": true, "value": ...} or {"ok": false, "error": "..."}.
// Started once per test module by tests/browser/browser_session.py.
import { chromium } from "playwright-core";
import { createInterface } from "node:readline";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const userDataDir = mkdtempSync(join(tmpdir(), "asyncbroker-chromium-"));
// HTTP Basic credentials for the console's login (BROWSER_HTTP_CREDENTIALS="user:password"),
// answered to its 401 challenge as a user typing them in the browser's dialog would.
const credentials = process.env.BROWSER_HTTP_CREDENTIALS;
const httpCredentials = credentials
  ? { username: credentials.slice(0, credentials.indexOf(":")), password: credentials.slice(credentials.indexOf(":") + 1) }
  : undefined;
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
  viewport: { width: 1280, height: 900 },
  httpCredentials,
});
const page = context.pages()[0] || await context.newPage();
page.setDefaultTimeout(15000);

const ops = {
  goto: async (c) => { const r = await page.goto(c.url); return r ? r.status() : 0; },
  fill: async (c) => { await page.fill(c.selector, c.value); },
  select: async (c) => { await page.selectOption(c.selector, c.value); },
  click: async (c) => { await Promise.all([c.navigates ? page.waitForLoadState("load") : null, page.click(c.selector)]); await page.waitForLoadState("load"); return page.url(); },
  text: async (c) => await page.textContent(c.selector),
  texts: async (c) => await page.locator(c.selector).allTextContents(),
  waitForText: async (c) => {
    await page.waitForFunction(([sel, want]) => { const el = document.querySelector(sel); return el && el.textContent.trim() === want; },
                               [c.selector, c.text], { timeout: c.timeout || 15000 });
  },
  screenshot: async (c) => { await page.screenshot({ path: c.path, fullPage: true }); return c.path; },
  url: async () => page.url(),
};

const lines = createInterface({ input: process.stdin });
process.stdout.write(JSON.stringify({ ok: true, value: "ready" }) + "\n");
for await (const line of lines) {
  if (!line.trim()) continue;
  const command = JSON.parse(line);
  if (command.op === "close") break;
  try {
    const value = await ops[command.op](command);
    process.stdout.write(JSON.stringify({ ok: true, value: value ?? null }) + "\n");
  } catch (e) {
    process.stdout.write(JSON.stringify({ ok: false, error: String(e && e.message || e) }) + "\n");
  }
}
await context.close();
rmSync(userDataDir, { recursive: true, force: true });
// The readline interface still holds stdin open: exit rather than wait for the test to close it.
process.exit(0);
