// `csikit up`: the whole CSI cluster on one machine (src/cluster). This file turns flags into
// options, decides where mounting is possible (root, or a user + mount namespace), and wires
// --walkthrough (what `npm start` runs).

import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { FlagError } from "../base/index.ts";
import {
  DEFAULT_DRIVER_NAME,
  inUserMountNamespace,
  mountProblem,
  reexecInUserMountNamespace,
  runCluster,
  runWalkthrough,
  WALKTHROUGHS,
  type Walkthrough,
} from "../cluster/index.ts";
import type { Command } from "./command.ts";
import { memorySettingsOf } from "./memory-settings.ts";
import { FEATURE_GATES_FLAG, featureGates } from "./feature-gates.ts";
import { kubernetesMinorFlag, RELEASE_FLAGS } from "./release-flags.ts";
import { KUBERNETES_MINORS, kubeFeatureGatesHelp, kubeRelease } from "../api/index.ts";

const CLI_DIR = dirname(fileURLToPath(import.meta.url));
const CLI_MAIN = join(CLI_DIR, "main.ts");
/** Sidecars `up` may run; each is one file per subcommand here (a checkout may lack some). */
const OPTIONAL_SUBCOMMANDS = [
  "attacher",
  "registrar",
  "livenessprobe",
  "resizer",
  "snapshot-controller",
  "snapshotter",
  "snapshot-metadata",
  "health-monitor",
];

/** Subcommands this checkout has (read from the files, not the command list: no import cycle). */
function availableSubcommands(): Set<string> {
  const names = ["apiserver", "controllers", "hostpath", "node", "provisioner", ...OPTIONAL_SUBCOMMANDS];
  return new Set(names.filter((name) => existsSync(join(CLI_DIR, `${name}.ts`))));
}

/** --walkthrough's value: none (off), or which one (true/false still read as before). */
export function walkthroughOf(value: string): Walkthrough | undefined {
  if (value === "" || value === "false") return undefined;
  if (value === "true") return "all";
  const which = WALKTHROUGHS.find((name) => name === value);
  if (which === undefined)
    throw new FlagError(
      `invalid value ${JSON.stringify(value)} for flag -walkthrough: want ${WALKTHROUGHS.join(" or ")}`,
    );
  return which;
}

export const upCommand: Command = {
  name: "up",
  summary: "Run the whole CSI cluster on one machine: API server, controllers, nodes, driver and sidecars",
  usage:
    "csikit up [--state-dir=.csikit] [--nodes=3] [--walkthrough[=expand] [--exit]] [--driver-name=NAME] [--feature-gates=K=V,...] [--driver-socket=PATH | --driver-command=CMD] [--distributed] [--driver-fault-proxy] [--dashboard=false]",
  description:
    "Starts, each as its own supervised process with its own identity (RBAC from deploy/rbac/): the API server,\n" +
    "the controllers, the driver's controller instance with the provisioner and attacher, and per virtual node\n" +
    "the node agent, the driver's node instance, the registrar and the livenessprobe. Prints the kubeconfig to\n" +
    "use; Ctrl-C tears the volumes down (pods ended, volumes unpublished, unstaged, detached), then the\n" +
    "processes, and exits 0. A second run on the same --state-dir resumes the cluster. Logs:\n" +
    "<state-dir>/logs/<component>.log. Not root, it runs in a user + mount namespace (unshare -rm).",
  flags: {
    "state-dir": {
      type: "string",
      default: ".csikit",
      help: "Directory holding the cluster's state (created 0700).",
    },
    nodes: {
      type: "int",
      default: "3",
      help: "Virtual nodes of a new cluster, spread over zone-a and zone-b.",
    },
    "driver-name": {
      type: "string",
      default: DEFAULT_DRIVER_NAME,
      help:
        "CSI driver name (CSIDriver, StorageClass provisioner, registration); the hostpath driver runs under it, e.g. " +
        "ebs.csi.aws.com to serve a migrated in-tree plugin's volumes.",
    },
    "driver-socket": {
      type: "string",
      help: "Use the CSI driver already listening on this socket (controller and node services) instead of hostpath.",
    },
    "driver-command": {
      type: "string",
      help: "Start this command per driver instance instead of hostpath; {endpoint}, {nodeid} and {mode} (controller|node, or distributed with --distributed) are replaced.",
    },
    distributed: {
      type: "bool",
      default: "false",
      help:
        "Deploy the driver as upstream's distributed deployment (csi-driver-host-path deploy/kubernetes-distributed): " +
        "per node one driver instance serving the controller and node services, with its own provisioner " +
        "(--node-deployment, strict topology) and snapshotter (--node-deployment; the snapshot-controller with " +
        "--enable-distributed-snapshotting); no controller instance, no attacher (CSIDriver attachRequired=false), " +
        "no resizer. For a driver whose state lives in each process (upstream hostpath); {mode} is then distributed. " +
        "A new state dir only.",
    },
    sidecars: {
      type: "string",
      default: "separate",
      help:
        "How the controller sidecars run: separate (one process each: provisioner, attacher, resizer, snapshotter, " +
        "health-monitor) or combined (one `csikit sidecars` process: one CSI connection, one watch per resource under " +
        "the csikit-sidecars identity, each sidecar's writes under its own ServiceAccount as when separate).",
    },
    "driver-fault-proxy": {
      type: "bool",
      default: "false",
      help:
        "Put a csikit fault-proxy in front of every driver instance (it serves the driver's usual socket, the driver " +
        "listens on driver-<socket> beside it); no faults until rules are set over each proxy's loopback API, whose " +
        "address is in its log (docs/csi.md). Not with --driver-socket (up starts no driver then).",
    },
    walkthrough: {
      type: "string",
      bare: "all",
      help:
        "Once ready, run a walkthrough, then keep running: all (StorageClass, claim, pod, write/read, grow the claim, delete) " +
        "or expand (the same without the write/read: grow the published claim, show its size through the mount).",
    },
    exit: {
      type: "bool",
      default: "false",
      help: "Tear down and exit once ready (after --walkthrough, if given).",
    },
    "component-v": { type: "int", default: "2", help: "-v of every component (their logs)." },
    dashboard: {
      type: "bool",
      default: "true",
      help:
        "Serve the live dashboard on loopback (HTTPS with the API server's certificate, a random token) and print " +
        "its address: dashboard: https://127.0.0.1:<port>/?token=… (docs: README, Dashboard).",
    },
    "pod-processes": {
      type: "bool",
      default: "true",
      help:
        "Run the commands of pods' containers as sandboxed host processes on their node (bubblewrap; the image is not " +
        "pulled, the command comes from the host's filesystem). false: pods are Running with nothing executed.",
    },
    "kubernetes-version": {
      ...RELEASE_FLAGS["kubernetes-version"],
      help:
        `The release (${KUBERNETES_MINORS.join(", ")}) the whole cluster acts as, passed as --kubernetes-version to ` +
        "the API server (/version, served group versions such as storage.k8s.io/v1 VolumeAttributesClass from 1.34, " +
        "field gating) and to the controllers and node agents (their storage feature gates and defaults). The " +
        "sidecars follow the API server as upstream's do: they use what it serves (VolumeAttributesClass v1 or " +
        "v1beta1, VolumeAttachment error codes, CSIDriver fields).",
    },
    "feature-gates": {
      ...FEATURE_GATES_FLAG,
      help:
        "Passed as --feature-gates to the controllers and every node agent (kube-controller-manager's and the " +
        "kubelet's storage and CSI migration gates, resolved at --kubernetes-version; the API server takes the same " +
        "release's defaults). Each run takes its own: resuming with a migration gate turned off rolls migration back. " +
        "The node agents get CSIVolumeHealth=true unless this sets it (volume health events and metrics on up's own " +
        `cluster; alpha and off in a real kubelet). Options are (1.37's defaults): ${kubeFeatureGatesHelp()}.`,
    },
  },
  async run({ flags, logger, signal, stdout }) {
    const nodes = flags.number("nodes");
    if (!Number.isInteger(nodes) || nodes < 1 || nodes > 50)
      throw new FlagError(`invalid value ${nodes} for flag -nodes: want 1..50`);
    const walkthrough = walkthroughOf(flags.string("walkthrough"));
    const minor = kubernetesMinorFlag(flags);
    featureGates(flags, minor); // a bad gate fails here, naming itself, not in every component's log
    const release = kubeRelease(minor, flags.map("feature-gates"));
    const gates = Object.entries(flags.map("feature-gates"))
      .map(([name, value]) => `${name}=${value}`)
      .join(",");
    const driverSocket = flags.string("driver-socket");
    const driverCommand = flags.string("driver-command");
    if (driverSocket !== "" && driverCommand !== "")
      throw new FlagError("flags -driver-socket and -driver-command exclude each other");
    const distributed = flags.bool("distributed");
    if (distributed && driverSocket !== "")
      throw new FlagError(
        "flags -distributed and -driver-socket exclude each other: -distributed runs a driver per node",
      );
    const sidecars = flags.string("sidecars");
    if (sidecars !== "separate" && sidecars !== "combined")
      throw new FlagError(`flag -sidecars must be separate or combined, got ${JSON.stringify(sidecars)}`);
    const driverFaultProxy = flags.bool("driver-fault-proxy");
    if (driverFaultProxy && driverSocket !== "")
      throw new FlagError(
        "flags -driver-fault-proxy and -driver-socket exclude each other: up starts no driver to put the proxy in front of",
      );
    if (process.getuid?.() !== 0 && !inUserMountNamespace()) {
      const problem = mountProblem();
      if (problem === undefined) return reexecInUserMountNamespace(process.argv.slice(1));
      stdout.write(`warning: ${problem}\n`);
    }
    // A second Ctrl-C must not cut the teardown short.
    process.on("SIGINT", () => {});
    process.on("SIGTERM", () => {});
    const print = (line: string): void => void stdout.write(line + "\n");
    return runCluster(
      {
        stateDir: resolve(flags.string("state-dir")),
        nodes,
        driverName: flags.string("driver-name"),
        ...(driverSocket !== "" ? { driverSocket: resolve(driverSocket) } : {}),
        ...(driverCommand !== "" ? { driverCommand } : {}),
        ...(distributed ? { distributed } : {}),
        ...(driverFaultProxy ? { driverFaultProxy } : {}),
        ...(sidecars === "combined" ? { combinedSidecars: true } : {}),
        verbosity: flags.number("component-v"),
        featureGates: gates,
        release,
        ...(flags.bool("pod-processes") ? {} : { podProcesses: false }),
        commands: availableSubcommands(),
        cliMain: CLI_MAIN,
        memorySettingsOf,
        logger,
        print,
        ...(walkthrough !== undefined
          ? { afterReady: (cluster, inner) => runWalkthrough(cluster, { print, which: walkthrough }, inner) }
          : {}),
        exit: flags.bool("exit"),
        dashboard: flags.bool("dashboard"),
      },
      signal,
    );
  },
};
