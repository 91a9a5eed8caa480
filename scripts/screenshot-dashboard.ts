// `npm run screenshot:dashboard`: starts `csikit up --walkthrough` in a temp state dir, opens the
// dashboard line it prints in Debian's Chromium while the walkthrough runs, and writes a PNG of
// the page to docs/dashboard.png (the README's picture). The cluster and temp dir go away after.

import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseProgramFlags } from "../src/cli/command.ts";
import { browserUnavailable, openBrowser } from "../test/harness/browser.ts";

const flags = parseProgramFlags(
  "screenshot-dashboard",
  "npm run screenshot:dashboard -- [--out=docs/dashboard.png]",
  {
    out: { type: "string", default: "docs/dashboard.png", help: "Where the PNG goes." },
    "timeout-s": { type: "int", default: "600", help: "Bound on the whole run, seconds." },
  },
  "Starts csikit up --walkthrough and writes a screenshot of its dashboard mid-walkthrough.",
);
const missing = browserUnavailable();
if (missing) {
  console.error(`screenshot-dashboard: ${missing}`);
  process.exit(1);
}
const ROOT = resolve(import.meta.dirname, "..");
const base = await mkdtemp(join(tmpdir(), "csikit-shot-"));
const stateDir = join(base, "state");
const args = [join(ROOT, "src/cli/main.ts"), "up", `--state-dir=${stateDir}`, "--walkthrough", "--nodes=2"];
const child =
  process.getuid?.() === 0
    ? spawn("unshare", ["-m", "--propagation", "private", process.execPath, ...args], {
        stdio: ["ignore", "pipe", "pipe"],
      })
    : spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
let output = "";
child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
const deadline = Date.now() + flags.number("timeout-s") * 1000;
const waitFor = async <T>(what: string, probe: () => T | undefined): Promise<T> => {
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (child.exitCode !== null) throw new Error(`up exited while waiting for ${what}:\n${output}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
};
const browser = await openBrowser({ width: 1400, height: 1100 });
let code = 0;
try {
  const url = await waitFor("the dashboard line", () => /dashboard: (https:\/\/\S+)/.exec(output)?.[1]);
  const page = await browser.context.newPage();
  await page.goto(url);
  // Mid-walkthrough: once the claim is bound and its pod runs, while later steps are ahead.
  await waitFor("the walkthrough's volume to be published", () =>
    /volume published/.test(output) ? true : undefined,
  );
  await page.locator('[data-claim="default/walkthrough-claim"]').waitFor({ timeout: 120_000 });
  await page.locator('[data-claim="default/walkthrough-claim"]').click();
  await page.waitForTimeout(6000); // a few metrics scrapes for the charts
  const out = resolve(ROOT, flags.string("out"));
  await page.screenshot({ path: out, fullPage: true });
  console.log(`screenshot-dashboard: wrote ${out} (${(await readFile(out)).length} bytes)`);
} catch (error) {
  console.error(`screenshot-dashboard: ${(error as Error).message}`);
  code = 1;
} finally {
  await browser.close();
  child.kill("SIGTERM");
  const killer = setTimeout(() => child.kill("SIGKILL"), 120_000);
  await new Promise((r) => child.once("close", r));
  clearTimeout(killer);
  await rm(base, { recursive: true, force: true });
}
process.exit(code);
