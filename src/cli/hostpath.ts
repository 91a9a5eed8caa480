// `csikit hostpath`: the reference CSI driver, matching upstream csi-driver-host-path v1.18. It
// accepts every flag of that release's hostpathplugin (and klog's, and the v1.16 ones) with
// upstream's type, default and meaning; the ones it cannot honour (--proxy-endpoint,
// --check-volume-lifecycle=false, --automaxprocs) are accepted and say so. csikit's own flags and spellings say so in their help; defaults that
// differ from upstream (--endpoint, --enable-attach) are listed in docs/hostpath.md.
// This file only turns flags into options for startHostpathDriver.

import { FlagError, parseByteQuantity, type Flags } from "../base/index.ts";
import {
  DEFAULT_ALLOWED_PATH_ROOTS,
  DEFAULT_DRIVER_NAME,
  DEFAULT_ENDPOINT,
  startHostpathDriver,
  type HostpathServerOptions,
} from "../drivers/index.ts";
import { csikitVersion, type Command } from "./command.ts";

function bytes(text: string, flag: string): number {
  let value: bigint;
  try {
    value = parseByteQuantity(text, `invalid value for flag -${flag}`);
  } catch (error) {
    throw new FlagError(error instanceof Error ? error.message : String(error));
  }
  if (value > BigInt(Number.MAX_SAFE_INTEGER))
    throw new FlagError(`invalid value ${JSON.stringify(text)} for flag -${flag}: larger than 8Pi`);
  return Number(value);
}

/** `--capacity` items: `<kind>=<quantity>` as upstream, or a bare quantity for kind "". */
export function parseCapacity(items: readonly string[]): Record<string, number> {
  const capacity: Record<string, number> = {};
  for (const item of items) {
    const eq = item.indexOf("=");
    const kind = eq >= 0 ? item.slice(0, eq) : "";
    capacity[kind] = bytes(eq >= 0 ? item.slice(eq + 1) : item, "capacity");
  }
  return capacity;
}

function pick(flags: Flags, name: string, alias: string): string {
  return flags.isSet(alias) && !flags.isSet(name) ? flags.string(alias) : flags.string(name);
}

/** What csikit cannot do of the upstream flags that were set: one line each, for the log. */
export function ignoredFlagWarnings(flags: Flags): string[] {
  const warnings: string[] = [];
  if (flags.string("proxy-endpoint") !== "")
    warnings.push(
      "-proxy-endpoint is ignored: csikit embeds no Kubernetes e2e mock driver to proxy to; serving the hostpath driver",
    );
  if (flags.isSet("check-volume-lifecycle") && !flags.bool("check-volume-lifecycle"))
    warnings.push(
      "-check-volume-lifecycle=false is ignored: csikit always enforces the volume lifecycle (see docs/hostpath.md)",
    );
  return warnings;
}

function blockType(text: string): "FIXED_LENGTH" | "VARIABLE_LENGTH" {
  if (text === "FIXED_LENGTH" || text === "VARIABLE_LENGTH") return text;
  throw new FlagError(
    `invalid value ${JSON.stringify(text)} for flag -snapshot-metadata-block-type: want FIXED_LENGTH or VARIABLE_LENGTH`,
  );
}

export function hostpathOptions(flags: Flags): HostpathServerOptions {
  const nodeId = flags.string("nodeid");
  if (nodeId === "") throw new FlagError("flag -nodeid is required");
  const maxPerNode =
    flags.isSet("maxvolumespernode") && !flags.isSet("max-volumes-per-node")
      ? flags.number("maxvolumespernode")
      : flags.number("max-volumes-per-node");
  // -node-expand-required is upstream's deprecated spelling of -enable-volume-expansion.
  const expansion =
    flags.isSet("node-expand-required") && !flags.isSet("enable-volume-expansion")
      ? flags.bool("node-expand-required")
      : flags.bool("enable-volume-expansion");
  return {
    endpoint: flags.string("endpoint"),
    nodeId,
    driverName: flags.string("drivername"),
    vendorVersion: flags.string("vendor-version") || csikitVersion(),
    stateDir: pick(flags, "state-dir", "statedir"),
    maxVolumesPerNode: maxPerNode,
    capacity: parseCapacity(flags.strings("capacity")),
    maxVolumeSize: bytes(flags.string("max-volume-size"), "max-volume-size"),
    maxVolumeSizeNode: bytes(flags.string("max-volume-size-node"), "max-volume-size-node"),
    attachLimit: flags.number("attach-limit"),
    enableTopology: flags.bool("enable-topology"),
    ephemeral: flags.bool("ephemeral"),
    nodeService: flags.bool("node-service"),
    controllerService: flags.bool("controller-service"),
    enableAttach: flags.bool("enable-attach"),
    enableVolumeExpansion: expansion,
    disableControllerExpansion: flags.bool("disable-controller-expansion"),
    disableNodeExpansion: flags.bool("disable-node-expansion"),
    enableControllerModifyVolume: flags.bool("enable-controller-modify-volume"),
    acceptedMutableParameterNames: flags.strings("accepted-mutable-parameter-names"),
    enableSnapshotMetadata: flags.bool("enable-snapshot-metadata"),
    enableAlphaCapabilities: flags.bool("enable-alpha-capabilities"),
    enableListSnapshots: flags.bool("enable-list-snapshots"),
    snapshotMetadataBlockType: blockType(flags.string("snapshot-metadata-block-type")),
    allowedPathRoots: flags.strings("allowed-path-roots"),
  };
}

export const hostpathCommand: Command = {
  name: "hostpath",
  summary: "Run the hostpath reference CSI driver (controller and/or node service) on a Unix socket",
  usage: "csikit hostpath --nodeid=NODE [--endpoint=unix:///csi/csi.sock] [--state-dir=DIR] [flags]",
  description:
    "A drop-in for upstream csi-driver-host-path v1.18's hostpathplugin (registry.k8s.io/sig-storage/hostpathplugin):\n" +
    "its flags, capabilities (GetSnapshot included) and access-mode rules. Volumes are directories under\n" +
    "--state-dir (block volumes: sparse files on loop devices), bind-mounted on NodeStage/NodePublish.\n" +
    "Mounting needs root; without it node calls answer FAILED_PRECONDITION.",
  flags: {
    endpoint: {
      type: "string",
      default: DEFAULT_ENDPOINT,
      help: "CSI endpoint: unix:///path, unix:path or /path (upstream default: unix://tmp/csi.sock).",
    },
    nodeid: {
      type: "string",
      help: "Node ID reported by NodeGetInfo and used as topology segment (required).",
    },
    drivername: { type: "string", default: DEFAULT_DRIVER_NAME, help: "Name of the driver (GetPluginInfo)." },
    "vendor-version": {
      type: "string",
      help: "Vendor version reported by GetPluginInfo (default: the csikit version).",
    },
    "state-dir": {
      type: "string",
      default: "/csi-data-dir",
      help: "Directory for volume data and driver state.",
    },
    statedir: {
      type: "string",
      default: "/csi-data-dir",
      help: "Upstream's name of --state-dir (--state-dir is csikit's own spelling).",
    },
    "max-volumes-per-node": {
      type: "int",
      default: "0",
      help: "csikit's own spelling of upstream's --maxvolumespernode.",
    },
    maxvolumespernode: {
      type: "int",
      default: "0",
      help: "Limit of volumes per node: NodeGetInfo max_volumes_per_node, and ControllerPublishVolume answers RESOURCE_EXHAUSTED past it; 0 = unlimited.",
    },
    capacity: {
      type: "strings",
      help: "Capacity per topology segment: <kind>=<quantity> (kind = StorageClass parameter 'kind') or a bare quantity for volumes without kind, e.g. 1Gi, fast=100Gi; repeatable. Unset = unlimited.",
    },
    "max-volume-size": {
      type: "string",
      default: "1Ti",
      help: "Largest volume in bytes (inclusive); larger requests are OUT_OF_RANGE. Upstream takes an int64 of bytes; csikit also takes a quantity (e.g. 1Ti, 100Mi).",
    },
    "max-volume-size-node": {
      type: "string",
      default: "0",
      help: "Largest size NodeExpandVolume accepts, in bytes or as a quantity; 0 = --max-volume-size.",
    },
    "attach-limit": {
      type: "int",
      default: "0",
      help: "Volumes ControllerPublishVolume attaches to one node before answering RESOURCE_EXHAUSTED, also NodeGetInfo's max_volumes_per_node (in place of --maxvolumespernode, as upstream); 0 = no limit. -1, as upstream: no attach limit, and each NodeGetInfo reports a random limit (1-100) to exercise a CO's changing attach limits.",
    },
    "check-volume-lifecycle": {
      type: "bool",
      default: "false",
      help: "Upstream: turn lifecycle violations into errors instead of warnings. csikit always enforces the lifecycle; setting it false logs that it is ignored.",
    },
    "enable-volume-expansion": {
      type: "bool",
      default: "true",
      help: "Offer volume expansion (controller EXPAND_VOLUME with the ONLINE plugin capability, node EXPAND_VOLUME).",
    },
    "node-expand-required": {
      type: "bool",
      default: "true",
      help: "Same as --enable-volume-expansion (upstream keeps it as a deprecated name).",
      deprecated:
        "an alias: sets whether the driver offers volume expansion as --enable-volume-expansion does (which wins when both are given); use that",
    },
    "disable-controller-expansion": {
      type: "bool",
      default: "false",
      help: "Withhold controller-side expansion (ControllerExpandVolume is UNIMPLEMENTED).",
    },
    "disable-node-expansion": {
      type: "bool",
      default: "false",
      help: "Withhold node-side expansion (NodeExpandVolume is UNIMPLEMENTED).",
    },
    "enable-controller-modify-volume": {
      type: "bool",
      default: "false",
      help: "Offer MODIFY_VOLUME (ControllerModifyVolume).",
    },
    "enable-alpha-capabilities": {
      type: "bool",
      default: "true",
      help: "csikit's own: advertise and serve CSI v1.12's alpha controller capability GET_SNAPSHOT (GetSnapshot), as upstream v1.18 does. =false withholds it (GetSnapshot answers UNIMPLEMENTED), as upstream v1.16 did, for sidecars built on csi-lib-utils < 0.21, which panic on a capability value they do not know, and for csi-sanity < v5.5. The older alpha ones (VOLUME_CONDITION, GET_VOLUME, SINGLE_NODE_MULTI_WRITER) are always on.",
    },
    "enable-list-snapshots": {
      type: "bool",
      default: "true",
      help: "Advertise LIST_SNAPSHOTS; =false withholds it (ListSnapshots answers UNIMPLEMENTED; upstream: INVALID_ARGUMENT) to emulate a driver without ListSnapshots.",
    },
    automaxprocs: {
      type: "bool",
      default: "false",
      help: "Upstream: set GOMAXPROCS to the container's CPU quota. Accepted for upstream manifests; no effect in csikit: a Node.js process has no GOMAXPROCS.",
    },
    "enable-snapshot-metadata": {
      type: "bool",
      default: "false",
      help: "Serve the SnapshotMetadata service (allocated and changed blocks of block-volume snapshots, streamed).",
    },
    "snapshot-metadata-block-type": {
      type: "string",
      default: "FIXED_LENGTH",
      help: "Block metadata type of SnapshotMetadata answers: FIXED_LENGTH or VARIABLE_LENGTH.",
    },
    "proxy-endpoint": {
      type: "string",
      help: "Upstream: run no driver; forward the calls arriving at --endpoint to this listening socket, where the mock CSI driver embedded in the Kubernetes e2e suite connects. csikit does not implement that forwarding (it needs the e2e suite's tunnel on the other side): a non-empty value is accepted, logged as ignored, and csikit serves its own hostpath driver on --endpoint.",
    },
    "enable-topology": {
      type: "bool",
      default: "true",
      help: "Report topology (key topology.hostpath.csi/node) and honour accessibility requirements.",
    },
    ephemeral: {
      type: "bool",
      default: "false",
      help: "Treat NodePublish without csi.storage.k8s.io/ephemeral as an inline ephemeral volume.",
    },
    "node-service": { type: "bool", default: "true", help: "Serve the Node service." },
    "controller-service": {
      type: "bool",
      default: "true",
      help: "Serve the Controller and GroupController services.",
    },
    "enable-attach": {
      type: "bool",
      default: "true",
      help: "Offer ControllerPublishVolume/ControllerUnpublishVolume (upstream default: false; csikit runs an attacher).",
    },
    "accepted-mutable-parameter-names": {
      type: "strings",
      help: "Keys ControllerModifyVolume (and CreateVolume mutable_parameters) accept; others are INVALID_ARGUMENT. Unset = every key, as upstream.",
    },
    "allowed-path-roots": {
      type: "strings",
      default: DEFAULT_ALLOWED_PATH_ROOTS.join(","),
      help: "csikit's own: absolute directories that target, staging and volume paths must lie strictly inside (no symlink may lead out); others are INVALID_ARGUMENT naming this flag. Default the kubelet's root; add the dirs a test suite uses (e.g. csikit sanity's --mount-dir parent). Comma list or repeatable. Upstream has no such check (docs/hostpath.md).",
    },
  },
  async run({ flags, logger, signal }) {
    for (const warning of ignoredFlagWarnings(flags)) logger.warn(warning);
    await startHostpathDriver({ ...hostpathOptions(flags), logger }, signal);
    return 0;
  },
};
