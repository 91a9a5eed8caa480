// `csikit hostpath`: the reference CSI driver. Flags follow upstream csi-driver-host-path
// (its no-dash spellings --statedir, --maxvolumespernode, --maxvolumesize are accepted too);
// where a default differs from upstream's (--endpoint, --enable-attach) the help says so;
// this file only turns them into options for startHostpathDriver.

import { FlagError, type Flags } from "../base/index.ts";
import {
  DEFAULT_ALLOWED_PATH_ROOTS,
  DEFAULT_DRIVER_NAME,
  DEFAULT_ENDPOINT,
  DEFAULT_MUTABLE_PARAMETERS,
  parseQuantity,
  startHostpathDriver,
  type HostpathServerOptions,
} from "../drivers/index.ts";
import { csikitVersion, type Command } from "./command.ts";

function bytes(text: string, flag: string): number {
  let value: bigint;
  try {
    value = parseQuantity(text);
  } catch (error) {
    throw new FlagError(
      `invalid value ${JSON.stringify(text)} for flag -${flag}: ${error instanceof Error ? error.message : ""}`,
    );
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

export function hostpathOptions(flags: Flags): HostpathServerOptions {
  const nodeId = flags.string("nodeid");
  if (nodeId === "") throw new FlagError("flag -nodeid is required");
  const maxPerNode =
    flags.isSet("maxvolumespernode") && !flags.isSet("max-volumes-per-node")
      ? flags.number("maxvolumespernode")
      : flags.number("max-volumes-per-node");
  return {
    endpoint: flags.string("endpoint"),
    nodeId,
    driverName: flags.string("drivername"),
    vendorVersion: flags.string("vendor-version") || csikitVersion(),
    stateDir: pick(flags, "state-dir", "statedir"),
    maxVolumesPerNode: maxPerNode,
    capacity: parseCapacity(flags.strings("capacity")),
    maxVolumeSize: bytes(pick(flags, "max-volume-size", "maxvolumesize"), "max-volume-size"),
    enableTopology: flags.bool("enable-topology"),
    ephemeral: flags.bool("ephemeral"),
    nodeService: flags.bool("node-service"),
    controllerService: flags.bool("controller-service"),
    enableAttach: flags.bool("enable-attach"),
    acceptedMutableParameterNames: flags.strings("accepted-mutable-parameter-names"),
    allowedPathRoots: flags.strings("allowed-path-roots"),
  };
}

export const hostpathCommand: Command = {
  name: "hostpath",
  summary: "Run the hostpath reference CSI driver (controller and/or node service) on a Unix socket",
  usage: "csikit hostpath --nodeid=NODE [--endpoint=unix:///csi/csi.sock] [--state-dir=DIR] [flags]",
  description:
    "Volumes are directories under --state-dir (block volumes: sparse files on loop devices), bind-mounted\n" +
    "on NodeStage/NodePublish. Mounting needs root; without it node calls answer FAILED_PRECONDITION.",
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
    statedir: { type: "string", default: "/csi-data-dir", help: "Upstream spelling of --state-dir." },
    "max-volumes-per-node": {
      type: "int",
      default: "0",
      help: "Volumes one node may have published; 0 = unlimited.",
    },
    maxvolumespernode: { type: "int", default: "0", help: "Upstream spelling of --max-volumes-per-node." },
    capacity: {
      type: "strings",
      help: "Capacity per topology segment: <kind>=<quantity> (kind = StorageClass parameter 'kind') or a bare quantity for volumes without kind, e.g. 1Gi, fast=100Gi; repeatable. Unset = unlimited.",
    },
    "max-volume-size": {
      type: "string",
      default: "1Ti",
      help: "Largest volume, as a quantity (e.g. 1Ti, 100Mi).",
    },
    maxvolumesize: { type: "string", default: "1Ti", help: "Upstream spelling of --max-volume-size." },
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
      default: DEFAULT_MUTABLE_PARAMETERS.join(","),
      help: "Keys ControllerModifyVolume (and CreateVolume mutable_parameters) accept; others are INVALID_ARGUMENT.",
    },
    "allowed-path-roots": {
      type: "strings",
      default: DEFAULT_ALLOWED_PATH_ROOTS.join(","),
      help: "Absolute directories that target, staging and volume paths must lie strictly inside (symlinks resolved at start); others are INVALID_ARGUMENT. Comma list or repeatable. Upstream has no such check.",
    },
  },
  async run({ flags, logger, signal }) {
    await startHostpathDriver({ ...hostpathOptions(flags), logger }, signal);
    return 0;
  },
};
