// The RPC table of `csikit csi`: for every CSI 1.12 RPC the words that name it (as gocsi's csc
// names them: `controller create-volume`, `node publish`, ...), which request field each
// positional argument and each typed flag fills, and whether the response streams. The command
// (csi.ts) is generic over this table; adding an RPC is one row.

import type { FlagSpec, FlagSpecs } from "../base/index.ts";
import { SERVICE_SPECS, type MethodSpec, type ServiceKey } from "../csi/index.ts";

/** How a typed flag's value goes into the request. */
export type FieldKind =
  | "string"
  | "bool"
  /** A whole number; int64 fields take it as a decimal string. */
  | "int"
  /** A byte quantity (1Gi, 10M, 1073741824) into an int64 field. */
  | "bytes"
  | "map"
  | "strings"
  /** Repeated `--cap MODE,TYPE[,FSTYPE[,MOUNTFLAG...]]` into a list of VolumeCapability. */
  | "caps"
  /** One `--cap` into a single VolumeCapability. */
  | "cap";

export interface FieldFlag {
  /** Dotted path of the request field ("capacityRange.requiredBytes"). */
  field: string;
  kind: FieldKind;
  help: string;
}

export interface RpcCommand {
  /** The service's word: identity, controller, node, group-controller, snapshot-metadata. */
  group: string;
  service: ServiceKey;
  /** Key of the method in SERVICE_SPECS (and on CsiClient's service objects). */
  key: string;
  /** The command word (csc's name where csc has the RPC). */
  name: string;
  aliases: readonly string[];
  /** Request fields filled by the positional arguments, in order. */
  args: readonly string[];
  flags: Readonly<Record<string, FieldFlag>>;
}

const CAP_HELP =
  "Volume capability ACCESS_MODE,ACCESS_TYPE[,FS_TYPE[,MOUNT_FLAG...]]: mode a VolumeCapability.AccessMode name (SINGLE_NODE_WRITER, MULTI_NODE_MULTI_WRITER, ...) or number, type mount or block";
const caps = (field = "volumeCapabilities"): FieldFlag => ({
  field,
  kind: "caps",
  help: `${CAP_HELP}; repeat for more than one`,
});
const cap = (field = "volumeCapability"): FieldFlag => ({ field, kind: "cap", help: CAP_HELP });
const str = (field: string, help: string): FieldFlag => ({ field, kind: "string", help });
const map = (field: string, help: string): FieldFlag => ({ field, kind: "map", help });
const CAPACITY = {
  "req-bytes": {
    field: "capacityRange.requiredBytes",
    kind: "bytes",
    help: "Required capacity (bytes or a quantity: 1Gi, 10M)",
  },
  "lim-bytes": {
    field: "capacityRange.limitBytes",
    kind: "bytes",
    help: "Capacity limit (bytes or a quantity)",
  },
} as const satisfies Record<string, FieldFlag>;
const PAGING = {
  "max-entries": {
    field: "maxEntries",
    kind: "int",
    help: "Most entries in one answer (0 = the driver's choice)",
  },
  "starting-token": str("startingToken", "next_token of the previous page"),
} as const satisfies Record<string, FieldFlag>;
const PARAMS = map("parameters", "Parameters (key=value,...) as a StorageClass or snapshot class gives them");
const VOLUME_CONTEXT = map("volumeContext", "Volume context (key=value,...) as CreateVolume returned it");
const PUBLISH_CONTEXT = map(
  "publishContext",
  "Publish context (key=value,...) as ControllerPublishVolume returned it",
);
const STAGING = str("stagingTargetPath", "Staging path (NodeStageVolume's staging_target_path)");
const NODE_ID = str("nodeId", "Node ID as NodeGetInfo returns it");
const READ_ONLY = { field: "readonly", kind: "bool", help: "Publish read-only" } as const satisfies FieldFlag;
const METADATA_PAGING = {
  "starting-offset": { field: "startingOffset", kind: "bytes", help: "Byte offset to start from" },
  "max-results": {
    field: "maxResults",
    kind: "int",
    help: "Most block entries per streamed message (0 = the driver's choice)",
  },
} as const satisfies Record<string, FieldFlag>;

function rpc(
  group: string,
  service: ServiceKey,
  key: string,
  name: string,
  aliases: readonly string[],
  args: readonly string[] = [],
  flags: Record<string, FieldFlag> = {},
): RpcCommand {
  return { group, service, key, name, aliases, args, flags };
}

export const RPCS: readonly RpcCommand[] = [
  rpc("identity", "identity", "getPluginInfo", "plugin-info", ["info"]),
  rpc("identity", "identity", "getPluginCapabilities", "plugin-capabilities", ["caps"]),
  rpc("identity", "identity", "probe", "probe", []),

  rpc("controller", "controller", "createVolume", "create-volume", ["new", "create"], ["name"], {
    cap: caps(),
    ...CAPACITY,
    params: PARAMS,
    "mutable-params": map(
      "mutableParameters",
      "Mutable parameters (key=value,...) of a VolumeAttributesClass",
    ),
    "source-snapshot": str("volumeContentSource.snapshot.snapshotId", "Create from this snapshot"),
    "source-volume": str("volumeContentSource.volume.volumeId", "Clone this volume"),
  }),
  rpc("controller", "controller", "deleteVolume", "delete-volume", ["d", "rm", "del"], ["volumeId"]),
  rpc("controller", "controller", "controllerPublishVolume", "publish", ["att", "attach"], ["volumeId"], {
    "node-id": NODE_ID,
    cap: cap(),
    "read-only": READ_ONLY,
    "volume-context": VOLUME_CONTEXT,
  }),
  rpc("controller", "controller", "controllerUnpublishVolume", "unpublish", ["det", "detach"], ["volumeId"], {
    "node-id": NODE_ID,
  }),
  rpc(
    "controller",
    "controller",
    "validateVolumeCapabilities",
    "validate-volume-capabilities",
    ["validate"],
    ["volumeId"],
    { cap: caps(), params: PARAMS, "volume-context": VOLUME_CONTEXT },
  ),
  rpc("controller", "controller", "listVolumes", "list-volumes", ["ls", "list"], [], PAGING),
  rpc("controller", "controller", "getCapacity", "get-capacity", ["getc", "capacity"], [], {
    cap: caps(),
    params: PARAMS,
    topology: map("accessibleTopology.segments", "Topology segments (key=value,...) the capacity is for"),
  }),
  rpc("controller", "controller", "controllerGetCapabilities", "get-capabilities", ["cap"]),
  rpc("controller", "controller", "createSnapshot", "create-snapshot", ["snap"], ["name"], {
    "source-volume": str("sourceVolumeId", "Volume to snapshot (required)"),
    params: PARAMS,
  }),
  rpc("controller", "controller", "deleteSnapshot", "delete-snapshot", ["delsnap"], ["snapshotId"]),
  rpc("controller", "controller", "listSnapshots", "list-snapshots", ["snapshots"], [], {
    ...PAGING,
    "source-volume": str("sourceVolumeId", "Only snapshots of this volume"),
    "snapshot-id": str("snapshotId", "Only this snapshot"),
  }),
  rpc("controller", "controller", "getSnapshot", "get-snapshot", [], ["snapshotId"]),
  rpc("controller", "controller", "controllerExpandVolume", "expand-volume", ["expand"], ["volumeId"], {
    ...CAPACITY,
    cap: cap(),
  }),
  rpc("controller", "controller", "controllerGetVolume", "get-volume", [], ["volumeId"]),
  rpc("controller", "controller", "controllerModifyVolume", "modify-volume", ["modify"], ["volumeId"], {
    "mutable-params": map("mutableParameters", "Mutable parameters (key=value,...) to apply"),
  }),

  rpc("node", "node", "nodeStageVolume", "stage", [], ["volumeId"], {
    "staging-target-path": STAGING,
    cap: cap(),
    "publish-context": PUBLISH_CONTEXT,
    "volume-context": VOLUME_CONTEXT,
  }),
  rpc("node", "node", "nodeUnstageVolume", "unstage", [], ["volumeId"], { "staging-target-path": STAGING }),
  rpc("node", "node", "nodePublishVolume", "publish", ["mnt", "mount"], ["volumeId"], {
    "target-path": str("targetPath", "Where the volume is published (the pod's volume path)"),
    "staging-target-path": STAGING,
    cap: cap(),
    "read-only": READ_ONLY,
    "publish-context": PUBLISH_CONTEXT,
    "volume-context": VOLUME_CONTEXT,
  }),
  rpc("node", "node", "nodeUnpublishVolume", "unpublish", ["umount", "unmount"], ["volumeId"], {
    "target-path": str("targetPath", "The path NodePublishVolume published to"),
  }),
  rpc("node", "node", "nodeGetVolumeStats", "stats", ["volume-stats"], ["volumeId"], {
    "volume-path": str("volumePath", "A path the volume is published at"),
    "staging-target-path": STAGING,
  }),
  rpc("node", "node", "nodeExpandVolume", "expand", [], ["volumeId"], {
    "volume-path": str("volumePath", "A path the volume is published at"),
    "staging-target-path": STAGING,
    ...CAPACITY,
    cap: cap(),
  }),
  rpc("node", "node", "nodeGetCapabilities", "get-capabilities", ["cap"]),
  rpc("node", "node", "nodeGetInfo", "get-info", ["info", "get-id"]),

  rpc("group-controller", "groupController", "groupControllerGetCapabilities", "get-capabilities", ["cap"]),
  rpc(
    "group-controller",
    "groupController",
    "createVolumeGroupSnapshot",
    "create-group-snapshot",
    ["create"],
    ["name"],
    {
      "source-volume": {
        field: "sourceVolumeIds",
        kind: "strings",
        help: "Volumes of the group (id,id,...; or repeat)",
      },
      params: PARAMS,
    },
  ),
  rpc(
    "group-controller",
    "groupController",
    "deleteVolumeGroupSnapshot",
    "delete-group-snapshot",
    ["delete"],
    ["groupSnapshotId"],
    {
      "snapshot-id": { field: "snapshotIds", kind: "strings", help: "The group's snapshot ids (id,id,...)" },
    },
  ),
  rpc(
    "group-controller",
    "groupController",
    "getVolumeGroupSnapshot",
    "get-group-snapshot",
    ["get"],
    ["groupSnapshotId"],
    {
      "snapshot-id": { field: "snapshotIds", kind: "strings", help: "The group's snapshot ids (id,id,...)" },
    },
  ),

  rpc(
    "snapshot-metadata",
    "snapshotMetadata",
    "getMetadataAllocated",
    "allocated",
    ["get-allocated"],
    ["snapshotId"],
    METADATA_PAGING,
  ),
  rpc(
    "snapshot-metadata",
    "snapshotMetadata",
    "getMetadataDelta",
    "delta",
    ["get-delta"],
    ["baseSnapshotId", "targetSnapshotId"],
    METADATA_PAGING,
  ),
];

/** Other words accepted for a group. */
export const GROUP_ALIASES: Readonly<Record<string, string>> = {
  i: "identity",
  c: "controller",
  ctrl: "controller",
  n: "node",
  g: "group-controller",
  "group-snapshot": "group-controller",
  gc: "group-controller",
  sm: "snapshot-metadata",
};

export function methodSpec(command: RpcCommand): MethodSpec {
  return SERVICE_SPECS[command.service].methods[command.key]!;
}

/** Lower-case letters and digits only: "CreateVolume", "create-volume" and "createvolume" match. */
function squash(word: string): string {
  return word.toLowerCase().replace(/[^a-z0-9]/g, "");
}

/**
 * The RPC `words` name and how many words that took: `<group> <name|alias|ProtoName>`, or the
 * proto method name alone (`CreateVolume`, unambiguous across services). Undefined when none.
 */
export function findRpc(words: readonly string[]): { command: RpcCommand; used: number } | undefined {
  const [first, second] = words;
  if (first === undefined) return undefined;
  const group = GROUP_ALIASES[first] ?? first;
  if (second !== undefined) {
    const inGroup = RPCS.filter((command) => command.group === group);
    const found =
      inGroup.find((command) => command.name === second || command.aliases.includes(second)) ??
      inGroup.find((command) => squash(methodSpec(command).name) === squash(second));
    if (found) return { command: found, used: 2 };
  }
  const byProto = RPCS.find((command) => squash(methodSpec(command).name) === squash(first));
  return byProto ? { command: byProto, used: 1 } : undefined;
}

/** The typed flags of one RPC as the flag parser takes them. */
export function rpcFlagSpecs(command: RpcCommand): FlagSpecs {
  const specs: FlagSpecs = {};
  for (const [name, flag] of Object.entries(command.flags)) {
    const type: FlagSpec["type"] =
      flag.kind === "bool"
        ? "bool"
        : flag.kind === "map"
          ? "map"
          : flag.kind === "strings"
            ? "strings"
            : "string";
    specs[name] = {
      type,
      help: `${flag.help} (${methodSpec(command).requestType.replace(/^csi\.v1\./, "")}.${flag.field})`,
    };
  }
  return specs;
}
