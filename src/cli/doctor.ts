// `csikit doctor`: flags into options, the report to stdout, the exit code. Per-item confirmation
// reads the terminal; without one, --fix needs --yes (a script must say it means it).

import { createInterface } from "node:readline/promises";
import { FlagError, type FlagSpecs } from "../base/index.ts";
import { renderJson, renderText, runDoctor, type Finding } from "../doctor/index.ts";
import { kubeClientFromOptions } from "../kube/index.ts";
import type { Command } from "./command.ts";

const FLAGS: FlagSpecs = {
  kubeconfig: {
    type: "string",
    help: "Kubeconfig of the cluster (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)",
  },
  master: { type: "string", help: "API server URL, overriding the kubeconfig's" },
  "csi-address": {
    type: "string",
    help: "The driver's controller socket (unix:///path or a path); without it the backend checks are skipped",
  },
  "driver-name": { type: "string", help: "The driver's name (default: its GetPluginInfo name)" },
  "node-root": {
    type: "strings",
    help: "A node's kubelet root dir (e.g. /var/lib/kubelet, or csikit up's <state>/nodes/<node>) whose mounts and loop devices are checked; repeat for more nodes",
  },
  fix: {
    type: "bool",
    help: "Repair what can be repaired, asking per item on a terminal (or all with --yes)",
  },
  yes: { type: "bool", help: "With --fix: repair without asking" },
  output: { type: "string", default: "text", help: "Output format: text or json" },
  o: { type: "string", help: "Short for --output" },
  timeout: {
    type: "duration",
    default: "1m",
    help: "Deadline of each CSI call and of the wait for the driver (0 = none)",
  },
  "min-age": {
    type: "duration",
    default: "1m",
    help: "A deletion pending for less than this is in progress, not stuck (finalizer checks)",
  },
  "kube-api-qps": { type: "float", default: "50", help: "Requests per second to the API server" },
  "kube-api-burst": { type: "int", default: "100", help: "Request burst to the API server" },
};

const DESCRIPTION =
  "Finds what is left over or stuck: backend volumes and snapshots no PV or VolumeSnapshotContent names\n" +
  "(with --csi-address), PVs whose backend volume is gone, finalizers held past their owner's life\n" +
  "(provisioner, attacher, snapshotter, PVC/PV protection, csikit's in-flight mark), VolumeAttachments\n" +
  "to deleted nodes, and mounts and loop devices under a node root (--node-root) no pod owns.\n" +
  "Reports by default and writes nothing. --fix repairs each fixable finding after asking (or all\n" +
  "with --yes), re-checking each against a fresh look first; it never deletes a backend volume a PV\n" +
  "names. Exit code 0: nothing found (or all fixed); 1: findings left; 2: bad flags. See docs/doctor.md.";

async function askOnTerminal(finding: Finding): Promise<boolean> {
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await prompt.question(
      `${finding.kind}: ${finding.object}\n  ${finding.fix?.description}? [y/N] `,
    );
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    prompt.close();
  }
}

export const doctorCommand: Command = {
  name: "doctor",
  summary:
    "Find what is left over or stuck (leaked volumes, stuck finalizers, stale attachments, orphan mounts) and fix it on request",
  usage:
    "csikit doctor [--kubeconfig=FILE] [--csi-address=SOCKET] [--node-root=DIR]... [--fix [--yes]] [-o json]",
  description: DESCRIPTION,
  flags: FLAGS,
  async run({ flags, logger, signal, stdout }) {
    const format = flags.isSet("o") ? flags.string("o") : flags.string("output");
    if (format !== "text" && format !== "json")
      throw new FlagError(`invalid value ${JSON.stringify(format)} for flag -output: want text or json`);
    const fix = flags.bool("fix");
    const yes = flags.bool("yes");
    if (yes && !fix) throw new FlagError("--yes needs --fix");
    if (fix && !yes && !process.stdin.isTTY)
      throw new FlagError(
        "--fix asks before each repair and needs a terminal for that: give --yes to repair without asking",
      );
    if (flags.parsed.positionals.length > 0)
      throw new FlagError(`unexpected argument ${JSON.stringify(flags.parsed.positionals[0])}`);
    const kube = kubeClientFromOptions({
      kubeconfig: flags.string("kubeconfig"),
      master: flags.string("master"),
      kubeApiQps: flags.number("kube-api-qps"),
      kubeApiBurst: flags.number("kube-api-burst"),
      userAgent: "csikit-doctor",
    });
    try {
      const report = await runDoctor({
        kube,
        ...(flags.string("csi-address") ? { csiAddress: flags.string("csi-address") } : {}),
        ...(flags.string("driver-name") ? { driverName: flags.string("driver-name") } : {}),
        nodeRoots: flags.strings("node-root"),
        minAgeMs: flags.number("min-age"),
        timeoutMs: flags.number("timeout"),
        fix,
        ...(fix && !yes ? { confirm: askOnTerminal } : {}),
        logger,
        signal,
      });
      stdout.write(format === "json" ? renderJson(report) : renderText(report));
      return report.remaining === 0 ? 0 : 1;
    } finally {
      kube.close();
    }
  },
};
