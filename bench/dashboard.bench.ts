// `npm run bench:dashboard`: how the dashboard page copes with many claims, in Debian's
// Chromium against a real API server (in process, temp state dir): time from navigation to the
// first render of all N claims (the count shown), and per update (one claim changed through the
// API) the time until the page has drawn it and the draw itself. Medians of --reps; the machine
// (cores, load) printed beside, since a loaded 2-core box and a quiet one differ many times.

import { GVR, type PersistentVolumeClaim } from "../src/api/index.ts";
import { startDashboard } from "../src/dashboard/index.ts";
import { KubeClient, loadKubeConfig } from "../src/kube/index.ts";
import { startTestServer } from "../test/harness/apiserver.ts";
import { browserUnavailable, openBrowser } from "../test/harness/browser.ts";
import { benchFlags } from "./cli.ts";
import { median } from "./stats.ts";
import { machine } from "./where.ts";

/** What the page keeps on window for measurement (static/app.js). */
type PageGlobals = typeof globalThis & { csikitDashboard: { renders: number; lastRenderMs: number } };

const flags = benchFlags(
  "dashboard",
  {
    claims: { type: "int", default: "1000", help: "Claims in the cluster." },
    reps: { type: "int", default: "5", help: "Page loads (time to first render) measured." },
    updates: { type: "int", default: "20", help: "Claim updates measured per load." },
  },
  "Time to first render of N claims and the cost of one claim's update, in Debian's Chromium.",
);
const claims = flags.number("claims");
const reps = flags.number("reps");
const updates = flags.number("updates");

const missing = browserUnavailable();
if (missing) {
  console.log(`bench:dashboard skipped: ${missing}`);
  process.exit(0);
}

const server = await startTestServer();
const client = new KubeClient({
  kubeConfig: loadKubeConfig({ kubeconfig: server.handle.kubeconfigPath }),
  qps: 1000,
  burst: 2000,
});
const stop = new AbortController();
const browser = await openBrowser();
try {
  for (let i = 0; i < claims; i += 100)
    await Promise.all(
      Array.from({ length: Math.min(100, claims - i) }, (_, j) =>
        client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
          metadata: { name: `bench-${String(i + j).padStart(5, "0")}`, namespace: "default" },
          spec: {
            accessModes: ["ReadWriteOnce"],
            storageClassName: "none",
            resources: { requests: { storage: "1Mi" } },
          },
        }),
      ),
    );
  const dashboard = await startDashboard({ client }, stop.signal);
  const firstRender: number[] = [];
  const updateToDraw: number[] = [];
  const drawMs: number[] = [];
  for (let rep = 0; rep < reps; rep++) {
    const page = await browser.context.newPage();
    const started = performance.now();
    await page.goto(dashboard.loginUrl);
    await page.getByText(`(${claims} of ${claims})`).waitFor({ timeout: 300_000 });
    firstRender.push(performance.now() - started);
    for (let u = 0; u < updates; u++) {
      const name = `bench-${String((u * 37) % claims).padStart(5, "0")}`;
      const before = await page.evaluate(() => (globalThis as PageGlobals).csikitDashboard.renders);
      const sent = performance.now();
      await client.patch(
        GVR.persistentVolumeClaims,
        name,
        { metadata: { labels: { rep: `${rep}-${u}` } } },
        { namespace: "default" },
      );
      await page.waitForFunction((n) => (globalThis as PageGlobals).csikitDashboard.renders > n, before, {
        timeout: 60_000,
      });
      updateToDraw.push(performance.now() - sent);
      drawMs.push(await page.evaluate(() => (globalThis as PageGlobals).csikitDashboard.lastRenderMs));
    }
    await page.close();
  }
  await dashboard.close();
  console.log(
    `## dashboard: ${claims} claims, ${reps} page loads × ${updates} updates (Debian Chromium, headless)`,
  );
  console.log(`${machine()}\n`);
  console.log("| measure | median ms | min ms | max ms |");
  console.log("|---|---:|---:|---:|");
  for (const [label, values] of [
    ["time to first render (navigate → all claims counted)", firstRender],
    ["claim update → drawn (API patch → watch → SSE → frame)", updateToDraw],
    ["one draw of the claims list (in the page)", drawMs],
  ] as const)
    console.log(
      `| ${label} | ${median(values).toFixed(1)} | ${Math.min(...values).toFixed(1)} | ${Math.max(...values).toFixed(1)} |`,
    );
} finally {
  stop.abort();
  await browser.close();
  client.close();
  await server.dispose();
}
