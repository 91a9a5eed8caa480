// One doctor run: collect (the driver's listing first, then the API objects — so a volume
// created after the listing cannot look leaked, its PV being newer still), check, and with
// fixing on, ask about each fixable finding, then collect and check again and apply only the
// confirmed fixes whose finding is still there, unchanged: a person may take minutes to answer,
// and the cluster moves on meanwhile.

import { isDeepStrictEqual } from "node:util";
import { errorMessage, type Logger } from "../base/index.ts";
import { CsiClient } from "../csi/index.ts";
import type { KubeClient } from "../kube/index.ts";
import { collectBackend } from "./collect-backend.ts";
import { collectCluster } from "./collect-cluster.ts";
import { collectNodeRoots } from "./collect-node-root.ts";
import { diagnose } from "./diagnose.ts";
import { FixRefused, applyFix, type FixContext } from "./fix.ts";
import type { BackendState, DoctorInputs, Finding } from "./types.ts";

export interface DoctorOptions {
  kube: KubeClient;
  /** The driver's controller socket; without it the backend checks are skipped. */
  csiAddress?: string;
  /** Default: the driver's GetPluginInfo name. */
  driverName?: string;
  /** Kubelet root dirs whose mounts and loop devices are checked. Default: none. */
  nodeRoots?: readonly string[];
  /** A deletion younger than this is in progress, not stuck (ms). */
  minAgeMs: number;
  /** Deadline of each CSI call and of the wait for the driver (ms; 0 = none). */
  timeoutMs: number;
  /** Repair what can be repaired. Default false: report only, no write of any kind. */
  fix?: boolean;
  /** Asked per fixable finding when fixing; absent = yes to all (--yes). */
  confirm?: (finding: Finding) => Promise<boolean>;
  logger: Logger;
  signal?: AbortSignal;
}

export type FixStatus = "fixed" | "already-gone" | "declined" | "no-longer-found" | "refused" | "failed";

export interface FixResult {
  id: string;
  description: string;
  status: FixStatus;
  message?: string;
}

export interface DoctorReport {
  driverName?: string;
  /** Checks skipped and why. */
  notes: string[];
  findings: Finding[];
  /** With fixing on: what happened to each fixable finding. */
  fixes?: FixResult[];
  /** Findings not fixed (exit code 1 when any). */
  remaining: number;
}

interface Pass {
  inputs: DoctorInputs;
  findings: Finding[];
}

async function collect(options: DoctorOptions, csi: CsiClient | undefined, notes: string[]): Promise<Pass> {
  let backend: BackendState | undefined;
  if (csi) {
    const collected = await collectBackend(csi, {
      ...(options.driverName ? { driverName: options.driverName } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    backend = collected.backend;
    notes.push(...collected.notes);
  }
  const cluster = await collectCluster(options.kube, options.signal);
  const nodeRoots = await collectNodeRoots(options.nodeRoots ?? []);
  const inputs: DoctorInputs = {
    cluster,
    ...(backend ? { backend } : {}),
    nodeRoots,
    now: Date.now(),
    minAgeMs: options.minAgeMs,
  };
  return { inputs, findings: diagnose(inputs) };
}

async function fixAll(
  options: DoctorOptions,
  csi: CsiClient | undefined,
  first: Pass,
): Promise<{ results: FixResult[]; fixed: Set<string> }> {
  const results: FixResult[] = [];
  const chosen: Finding[] = [];
  for (const finding of first.findings) {
    if (!finding.fix) continue;
    if (!options.confirm || (await options.confirm(finding))) chosen.push(finding);
    else results.push({ id: finding.id, description: finding.fix.description, status: "declined" });
  }
  const fixed = new Set<string>();
  if (chosen.length === 0) return { results, fixed };
  const fresh = await collect(options, csi, []);
  const context: FixContext = {
    kube: options.kube,
    ...(csi && fresh.inputs.backend ? { csi: { client: csi, backend: fresh.inputs.backend } } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  };
  for (const finding of chosen) {
    const description = finding.fix!.description;
    const now = fresh.findings.find((f) => f.id === finding.id);
    if (!now?.fix || !isDeepStrictEqual(now.fix.action, finding.fix!.action)) {
      results.push({ id: finding.id, description, status: "no-longer-found" });
      continue;
    }
    try {
      const outcome = await applyFix(context, now.fix.action);
      results.push({ id: finding.id, description, status: outcome === "done" ? "fixed" : "already-gone" });
      fixed.add(finding.id);
    } catch (error) {
      const status: FixStatus = error instanceof FixRefused ? "refused" : "failed";
      results.push({ id: finding.id, description, status, message: errorMessage(error) });
      options.logger.warn("fix failed", { finding: finding.id, err: errorMessage(error) });
    }
  }
  return { results, fixed };
}

export async function runDoctor(options: DoctorOptions): Promise<DoctorReport> {
  const notes: string[] = [];
  let csi: CsiClient | undefined;
  if (options.csiAddress) {
    csi = CsiClient.connect(options.csiAddress, {
      logger: options.logger,
      ...(options.timeoutMs > 0 ? { timeoutMs: options.timeoutMs } : {}),
    });
  } else {
    notes.push(
      "skipped backend checks (leaked volumes and snapshots, PVs whose volume is gone): no --csi-address",
    );
  }
  if ((options.nodeRoots ?? []).length === 0)
    notes.push("skipped mount and loop device checks: no --node-root");
  try {
    if (csi)
      await csi.waitForReady({
        ...(options.timeoutMs > 0 ? { timeoutMs: options.timeoutMs } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
    const first = await collect(options, csi, notes);
    const report: DoctorReport = {
      ...(first.inputs.backend ? { driverName: first.inputs.backend.driverName } : {}),
      notes,
      findings: first.findings,
      remaining: first.findings.length,
    };
    if (!options.fix) return report;
    const { results, fixed } = await fixAll(options, csi, first);
    report.fixes = results;
    report.remaining = first.findings.filter((f) => !fixed.has(f.id)).length;
    return report;
  } finally {
    csi?.close();
  }
}
