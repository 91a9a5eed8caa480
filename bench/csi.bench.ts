// `npm run bench:csi`: CSI round trips against the hostpath driver over a Unix socket — Probe,
// CreateVolume+DeleteVolume pairs, and NodePublish+NodeUnpublish pairs when the process may
// mount — printed as a table of ops/s and p50/p99 latency. Iterations are bounded so the run
// ends well within a minute; then the scale part (csi-scale.ts: 10,000 volumes, 32 in flight). As root it re-executes itself in a private mount namespace, so no
// mount can outlive it. Nothing here asserts on timings.

import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CsiClient } from "../src/csi/index.ts";
import type { VolumeCapabilityInput } from "../src/csi/index.ts";
import { serveHostpathDriver } from "../src/drivers/index.ts";
import { scaleReport } from "./csi-scale.ts";
import { benchFlags, rerunInPrivateMountNamespace } from "./cli.ts";
import { percentile } from "./stats.ts";
import { filesystemOf, machine } from "./where.ts";

const PROBES = 2000;
const VOLUME_PAIRS = 200;
const PUBLISH_PAIRS = 200;
const WARMUP = 20;

interface Row {
  operation: string;
  iterations: number;
  totalMs: number;
  samples: number[];
}

async function measure(
  operation: string,
  iterations: number,
  step: (i: number) => Promise<void>,
): Promise<Row> {
  for (let i = 0; i < WARMUP; i++) await step(-1 - i);
  const samples: number[] = [];
  const started = performance.now();
  for (let i = 0; i < iterations; i++) {
    const t0 = performance.now();
    await step(i);
    samples.push(performance.now() - t0);
  }
  return { operation, iterations, totalMs: performance.now() - started, samples };
}

function table(rows: readonly Row[], notes: readonly string[]): string {
  const header = ["operation", "iterations", "ops/s", "p50 ms", "p99 ms"];
  const body = rows.map((row) => {
    const sorted = [...row.samples].sort((a, b) => a - b);
    return [
      row.operation,
      String(row.iterations),
      (row.iterations / (row.totalMs / 1000)).toFixed(0),
      percentile(sorted, 50).toFixed(3),
      percentile(sorted, 99).toFixed(3),
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]): string =>
    "| " + cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(" | ") + " |";
  const rule =
    "|" + widths.map((w, i) => (i === 0 ? "-".repeat(w + 2) : "-".repeat(w + 1) + ":")).join("|") + "|";
  return [line(header), rule, ...body.map(line), ...notes.map((n) => `\n${n}`)].join("\n") + "\n";
}

async function main(): Promise<number> {
  benchFlags(
    "csi",
    {},
    "CSI round trips against the hostpath driver over a Unix socket (Probe, CreateVolume+DeleteVolume, and NodePublish+NodeUnpublish when the process may mount, in a private mount namespace as root), then the scale part: csikit hostpath as its own process, 10,000 CreateVolume calls with 32 in flight (state dir on a real disk: $CSIKIT_BENCH_DIR, else the OS temp dir unless it is tmpfs, else ./).",
  );
  const rerun = rerunInPrivateMountNamespace(fileURLToPath(import.meta.url));
  if (rerun !== undefined) return rerun;
  const dir = await mkdtemp(join(tmpdir(), "csikit-bench-csi-"));
  const where = `${machine()}; state dir on ${filesystemOf(dir)}`;
  const driver = await serveHostpathDriver({
    endpoint: join(dir, "csi.sock"),
    nodeId: "bench-node",
    stateDir: join(dir, "state"),
    allowedPathRoots: [dir],
  });
  const client = CsiClient.connect(driver.path, { timeoutMs: 30_000 });
  const rows: Row[] = [];
  const notes: string[] = [];
  try {
    await client.waitForReady({ timeoutMs: 30_000 });
    rows.push(await measure("Probe", PROBES, async () => void (await client.identity.probe({}))));

    const capability: VolumeCapabilityInput = { accessMode: { mode: "SINGLE_NODE_WRITER" }, mount: {} };
    rows.push(
      await measure("CreateVolume+DeleteVolume", VOLUME_PAIRS, async (i) => {
        const created = await client.controller.createVolume({
          name: `bench-${i}`,
          volumeCapabilities: [capability],
          capacityRange: { requiredBytes: String(1024 * 1024) },
        });
        await client.controller.deleteVolume({ volumeId: created.volume?.volumeId ?? "" });
      }),
    );

    const volume = (
      await client.controller.createVolume({
        name: "bench-publish",
        volumeCapabilities: [capability],
        capacityRange: { requiredBytes: String(1024 * 1024) },
      })
    ).volume;
    const volumeId = volume?.volumeId ?? "";
    const nodeId = (await client.node.nodeGetInfo({})).nodeId;
    const controllerCaps = await client.controllerCapabilities();
    const nodeCaps = await client.nodeCapabilities();
    const publishContext = controllerCaps.has("PUBLISH_UNPUBLISH_VOLUME")
      ? (await client.controller.controllerPublishVolume({ volumeId, nodeId, volumeCapability: capability }))
          .publishContext
      : {};
    const staging = join(dir, "staging");
    await mkdir(staging);
    let mayMount = true;
    try {
      if (nodeCaps.has("STAGE_UNSTAGE_VOLUME")) {
        await client.node.nodeStageVolume({
          volumeId,
          stagingTargetPath: staging,
          volumeCapability: capability,
          publishContext,
        });
      }
    } catch (error) {
      mayMount = false;
      notes.push(
        `NodePublish+NodeUnpublish skipped: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    if (mayMount) {
      const targets = join(dir, "targets");
      await mkdir(targets);
      rows.push(
        await measure("NodePublish+NodeUnpublish", PUBLISH_PAIRS, async (i) => {
          const targetPath = join(targets, `t${i}`);
          await client.node.nodePublishVolume({
            volumeId,
            targetPath,
            stagingTargetPath: nodeCaps.has("STAGE_UNSTAGE_VOLUME") ? staging : "",
            volumeCapability: capability,
            publishContext,
            readonly: false,
          });
          await client.node.nodeUnpublishVolume({ volumeId, targetPath });
        }),
      );
      if (nodeCaps.has("STAGE_UNSTAGE_VOLUME"))
        await client.node.nodeUnstageVolume({ volumeId, stagingTargetPath: staging });
    }
    if (controllerCaps.has("PUBLISH_UNPUBLISH_VOLUME"))
      await client.controller.controllerUnpublishVolume({ volumeId, nodeId });
    await client.controller.deleteVolume({ volumeId });
  } finally {
    client.close();
    await driver.close();
    await rm(dir, { recursive: true, force: true });
  }
  process.stdout.write(
    `CSI round trips against hostpath over a Unix socket (sequential, after ${WARMUP} warm-up calls each; ${where})\n\n`,
  );
  process.stdout.write(table(rows, notes));
  process.stdout.write(`\nScale (issue 10 §4)\n\n${await scaleReport()}`);
  return 0;
}

process.exitCode = await main();
