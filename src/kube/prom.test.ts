import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import * as promClient from "prom-client";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "./prom.ts";

test("prom.ts's classes are the ones prom-client's index exports (an upgrade that moves a file fails here)", () => {
  assert.equal(Registry, promClient.Registry);
  assert.equal(Counter, promClient.Counter);
  assert.equal(Gauge, promClient.Gauge);
  assert.equal(Histogram, promClient.Histogram);
});

/** "# HELP"/"# TYPE" lines: what a scraper sees of each metric, values aside. */
function descriptors(text: string): string[] {
  return text
    .split("\n")
    .filter((line) => line.startsWith("# "))
    .sort();
}

test("collectDefaultMetrics registers prom-client's default metrics, names, help and types alike", async () => {
  const ours = new Registry();
  collectDefaultMetrics({ register: ours });
  const theirs = new promClient.Registry();
  promClient.collectDefaultMetrics({ register: theirs });
  const [a, b] = [await ours.metrics(), await theirs.metrics()];
  assert.deepEqual(descriptors(a), descriptors(b));
  assert.ok(descriptors(a).includes("# TYPE process_cpu_seconds_total counter"));
  // Metric order, too: a scrape lists them as prom-client does.
  const names = (text: string) => [...text.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]);
  assert.deepEqual(names(a), names(b));
});

test("the CPU counters count this process's CPU time, user + system = total", async () => {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const value = (text: string, name: string): number => {
    const match = new RegExp(`^${name} (\\S+)$`, "m").exec(text);
    assert.ok(match, `${name} in ${text.slice(0, 200)}`);
    return Number(match[1]);
  };
  await registry.metrics();
  const spinUntil = process.cpuUsage().user + 30_000;
  while (process.cpuUsage().user < spinUntil); // 30 ms of user CPU
  const text = await registry.metrics();
  const user = value(text, "process_cpu_user_seconds_total");
  const system = value(text, "process_cpu_system_seconds_total");
  assert.ok(user >= 0.03, `user ${user}`);
  assert.ok(Math.abs(value(text, "process_cpu_seconds_total") - (user + system)) < 1e-9);
});

test("prom.ts with the default metrics does not load @opentelemetry/api (prom-client's index does)", () => {
  const module = fileURLToPath(new URL("./prom.ts", import.meta.url));
  // A fresh process each: this one has loaded prom-client's index already. The cwd lets the
  // bare "prom-client" resolve from the project's node_modules.
  const probe = (source: string): string =>
    execFileSync(process.execPath, ["--input-type=module", "-e", source], {
      encoding: "utf8",
      cwd: fileURLToPath(new URL(".", import.meta.url)),
      timeout: 60_000,
    });
  const loaded = `const { createRequire } = await import("node:module");
    process.stdout.write(String(Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes("@opentelemetry"))));`;
  const viaProm = `const p = await import(${JSON.stringify(module)}); p.collectDefaultMetrics({ register: new p.Registry() }); ${loaded}`;
  const viaIndex = `await import("prom-client"); ${loaded}`;
  assert.equal(probe(viaProm), "false");
  // The control: the index does load it, so the probe can see a load.
  assert.equal(probe(viaIndex), "true");
});
