// The hostpath driver's configuration, validated once in the constructor so every service can
// trust it. No I/O here. Defaults follow upstream csi-driver-host-path v1.18 where it has the same
// knob (driver name, topology on, 1 TiB max volume size), except two: the endpoint (upstream:
// unix://tmp/csi.sock, csikit: the /csi directory its deployments mount) and enable-attach
// (upstream: false, csikit: true because csikit runs an attacher).

import { isAbsolute, normalize, resolve } from "node:path";
import { ValidationError, silentLogger, type Logger } from "../../base/index.ts";

export const DEFAULT_DRIVER_NAME = "hostpath.csi.k8s.io";
export const DEFAULT_ENDPOINT = "unix:///csi/csi.sock";
/** Topology key whose value is the node ID a volume lives on (upstream's key). */
export const TOPOLOGY_KEY_NODE = "topology.hostpath.csi/node";
/** StorageClass parameter selecting the --capacity pool (upstream's `kind`). */
export const STORAGE_KIND_PARAMETER = "kind";
/** volume_context key the kubelet sets for inline ephemeral volumes. */
export const EPHEMERAL_CONTEXT_KEY = "csi.storage.k8s.io/ephemeral";
export const DEFAULT_MAX_VOLUME_SIZE = 1024 ** 4;
/** Size of a volume created without a capacity range: small, and always satisfiable. */
export const DEFAULT_VOLUME_SIZE = 1024 * 1024;
/** Example mutable parameter keys (tests and `csikit start` use them; the driver accepts any by default). */
export const DEFAULT_MUTABLE_PARAMETERS: readonly string[] = ["iops", "throughput"];
/**
 * Alpha controller capabilities of CSI v1.12 newer than those every sidecar knows: GET_SNAPSHOT
 * (GetSnapshot, advertised by upstream hostpath since v1.18.0, PR #606). Advertised by default,
 * as upstream v1.18; --enable-alpha-capabilities=false withholds them for sidecars built on
 * csi-lib-utils < 0.21, whose protosanitizer dereferences nil on a capability value its vendored
 * spec lacks (external-provisioner v5.2.0 panics in ControllerGetCapabilities), and for
 * csi-sanity before v5.5 ("Unknown capability"). The older alpha values (VOLUME_CONDITION,
 * GET_VOLUME, SINGLE_NODE_MULTI_WRITER) are known to every such release and always on.
 */
export const NEWER_ALPHA_CONTROLLER_CAPABILITIES = ["GET_SNAPSHOT"] as const;
/** --attach-limit's value for "report a random limit on every NodeGetInfo" (upstream's -1). */
export const RANDOM_ATTACH_LIMIT = -1;
/** The largest limit a random --attach-limit=-1 NodeGetInfo reports (csikit's choice). */
export const RANDOM_ATTACH_LIMIT_MAX = 100;
/** Where staging and target paths live on a real node: the kubelet's root directory. */
export const DEFAULT_ALLOWED_PATH_ROOTS: readonly string[] = ["/var/lib/kubelet"];

export interface HostpathOptions {
  /** Node ID reported by NodeGetInfo and used as this instance's topology segment. Required. */
  nodeId: string;
  /** Directory holding all volume data and state. Required; made absolute. */
  stateDir: string;
  /** Default "hostpath.csi.k8s.io". */
  driverName?: string;
  /** Reported by GetPluginInfo. Default the csikit version given by the caller, else "0.0.0". */
  vendorVersion?: string;
  /** NodeGetInfo max_volumes_per_node and the ControllerPublish limit; 0 = unlimited. Default 0. */
  maxVolumesPerNode?: number;
  /**
   * Bytes each topology segment may hand out, per `kind` parameter ("" for volumes without
   * one). Empty = unlimited (bounded only by maxVolumeSize per volume). Default empty.
   */
  capacity?: Readonly<Record<string, number>>;
  /** Largest volume in bytes. Default 1 TiB. */
  maxVolumeSize?: number;
  /** Report and honour topology. Default true. */
  enableTopology?: boolean;
  /** Treat publishes without the ephemeral context key as inline ephemeral. Default false. */
  ephemeral?: boolean;
  /** Serve Node. Default true. */
  nodeService?: boolean;
  /** Serve Controller and GroupController. Default true. */
  controllerService?: boolean;
  /** Offer PUBLISH_UNPUBLISH_VOLUME (ControllerPublish/Unpublish). Default true (upstream: false). */
  enableAttach?: boolean;
  /**
   * Directories the CO's target_path, staging_target_path and volume_path must lie strictly
   * inside (absolute; symlinks are resolved when the server starts). Default ["/var/lib/kubelet"].
   */
  allowedPathRoots?: readonly string[];
  /**
   * Keys ControllerModifyVolume (and CreateVolume mutable_parameters) accept. Default empty:
   * every key, as upstream; a non-empty list is csikit's stricter mode.
   */
  acceptedMutableParameterNames?: readonly string[];
  /** Offer MODIFY_VOLUME (ControllerModifyVolume). Default false, as upstream. */
  enableControllerModifyVolume?: boolean;
  /** Offer volume expansion (controller and node side). Default true, as upstream. */
  enableVolumeExpansion?: boolean;
  /** Withhold controller-side expansion (EXPAND_VOLUME, the ONLINE plugin capability). Default false. */
  disableControllerExpansion?: boolean;
  /** Withhold node-side expansion (node EXPAND_VOLUME). Default false. */
  disableNodeExpansion?: boolean;
  /** Largest size NodeExpandVolume accepts in bytes; 0 = maxVolumeSize (upstream's default). */
  maxVolumeSizeNode?: number;
  /**
   * Volumes ControllerPublishVolume attaches to one node before RESOURCE_EXHAUSTED, also
   * reported as NodeGetInfo max_volumes_per_node; 0 = no limit. -1 (upstream's value since
   * v1.16.1) = no attach limit, and NodeGetInfo reports a fresh random limit on every call, so
   * a CO's mutable attach-limit handling (KEP-4876) can be tested. Default 0.
   */
  attachLimit?: number;
  /** Serve the SnapshotMetadata service (GetMetadataAllocated/Delta). Default false, as upstream. */
  enableSnapshotMetadata?: boolean;
  /** Block metadata type the SnapshotMetadata service answers with. Default FIXED_LENGTH. */
  snapshotMetadataBlockType?: "FIXED_LENGTH" | "VARIABLE_LENGTH";
  /**
   * Advertise (and serve) NEWER_ALPHA_CONTROLLER_CAPABILITIES (GET_SNAPSHOT). Default true, as
   * upstream v1.18 (the release csikit matches); false for sidecars built on csi-lib-utils
   * < 0.21, which panic on an enum value they do not know.
   */
  enableAlphaCapabilities?: boolean;
  /** Advertise (and serve) LIST_SNAPSHOTS. Default true, as upstream's --enable-list-snapshots. */
  enableListSnapshots?: boolean;
  /** Default silent. */
  logger?: Logger;
  /** Wall clock in ms, for snapshot creation times. Default Date.now. */
  now?: () => number;
}

const DRIVER_NAME = /^[a-zA-Z0-9]([a-zA-Z0-9._-]{0,61}[a-zA-Z0-9])?$/;

function nonNegativeInteger(value: number, what: string): number {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new ValidationError(`${what} must be a non-negative integer, got ${value}`);
  return value;
}

function allowedRoots(roots: readonly string[]): string[] {
  if (roots.length === 0)
    throw new ValidationError("allowed path roots must not be empty (flag --allowed-path-roots)");
  return roots.map((root) => {
    if (!isAbsolute(root))
      throw new ValidationError(
        `allowed path root ${JSON.stringify(root)} must be an absolute directory (flag --allowed-path-roots)`,
      );
    const normalized = normalize(root).replace(/(.)\/+$/, "$1");
    if (normalized === "/")
      throw new ValidationError(
        "allowed path root must not be / (it would allow every path; flag --allowed-path-roots)",
      );
    return normalized;
  });
}

export class HostpathConfig {
  readonly nodeId: string;
  readonly stateDir: string;
  readonly driverName: string;
  readonly vendorVersion: string;
  readonly maxVolumesPerNode: number;
  readonly capacity: ReadonlyMap<string, number>;
  readonly maxVolumeSize: number;
  readonly enableTopology: boolean;
  readonly ephemeral: boolean;
  readonly nodeService: boolean;
  readonly controllerService: boolean;
  readonly enableAttach: boolean;
  /** Empty = every key is accepted. */
  readonly acceptedMutableParameterNames: ReadonlySet<string>;
  readonly enableControllerModifyVolume: boolean;
  /** Controller side of expansion offered (enable and not disabled). */
  readonly controllerExpansion: boolean;
  /** Node side of expansion offered (enable and not disabled). */
  readonly nodeExpansion: boolean;
  readonly maxVolumeSizeNode: number;
  readonly attachLimit: number;
  readonly enableSnapshotMetadata: boolean;
  readonly snapshotMetadataBlockType: "FIXED_LENGTH" | "VARIABLE_LENGTH";
  readonly enableAlphaCapabilities: boolean;
  readonly enableListSnapshots: boolean;
  /** Normalized, absolute; not yet symlink-resolved (that is I/O, done by the server). */
  readonly allowedPathRoots: readonly string[];
  readonly logger: Logger;
  readonly now: () => number;

  constructor(options: HostpathOptions) {
    if (options.nodeId.trim() === "") throw new ValidationError("nodeid must not be empty (flag --nodeid)");
    if (options.nodeId.length > 256)
      throw new ValidationError("nodeid must be at most 256 bytes (flag --nodeid)");
    this.nodeId = options.nodeId;
    if (options.stateDir === "") throw new ValidationError("state dir must not be empty (flag --state-dir)");
    this.stateDir = resolve(options.stateDir);
    this.driverName = options.driverName ?? DEFAULT_DRIVER_NAME;
    if (!DRIVER_NAME.test(this.driverName))
      throw new ValidationError(
        `driver name ${JSON.stringify(this.driverName)} is invalid (flag --drivername): at most 63 characters, alphanumerics, '-', '_', '.', starting and ending alphanumeric`,
      );
    this.vendorVersion = options.vendorVersion ?? "0.0.0";
    this.maxVolumesPerNode = nonNegativeInteger(options.maxVolumesPerNode ?? 0, "max volumes per node");
    const capacity = new Map<string, number>();
    for (const [kind, bytes] of Object.entries(options.capacity ?? {}))
      capacity.set(kind, nonNegativeInteger(bytes, `capacity of kind ${JSON.stringify(kind)}`));
    this.capacity = capacity;
    this.maxVolumeSize = nonNegativeInteger(
      options.maxVolumeSize ?? DEFAULT_MAX_VOLUME_SIZE,
      "max volume size",
    );
    this.enableTopology = options.enableTopology ?? true;
    this.ephemeral = options.ephemeral ?? false;
    this.nodeService = options.nodeService ?? true;
    this.controllerService = options.controllerService ?? true;
    if (!this.nodeService && !this.controllerService)
      throw new ValidationError("at least one of --node-service and --controller-service must be true");
    this.enableAttach = options.enableAttach ?? true;
    this.acceptedMutableParameterNames = new Set(options.acceptedMutableParameterNames ?? []);
    this.enableControllerModifyVolume = options.enableControllerModifyVolume ?? false;
    const expansion = options.enableVolumeExpansion ?? true;
    this.controllerExpansion = expansion && !(options.disableControllerExpansion ?? false);
    this.nodeExpansion = expansion && !(options.disableNodeExpansion ?? false);
    this.maxVolumeSizeNode =
      nonNegativeInteger(options.maxVolumeSizeNode ?? 0, "max volume size on the node") || this.maxVolumeSize;
    this.attachLimit = options.attachLimit ?? 0;
    if (!Number.isSafeInteger(this.attachLimit) || this.attachLimit < RANDOM_ATTACH_LIMIT)
      throw new ValidationError(
        `attach limit must be -1 (random) or a non-negative integer, got ${this.attachLimit} (flag --attach-limit)`,
      );
    this.enableSnapshotMetadata = options.enableSnapshotMetadata ?? false;
    this.snapshotMetadataBlockType = options.snapshotMetadataBlockType ?? "FIXED_LENGTH";
    if (
      this.snapshotMetadataBlockType !== "FIXED_LENGTH" &&
      this.snapshotMetadataBlockType !== "VARIABLE_LENGTH"
    )
      throw new ValidationError(
        `snapshot metadata block type ${JSON.stringify(this.snapshotMetadataBlockType)} is invalid (flag --snapshot-metadata-block-type): want FIXED_LENGTH or VARIABLE_LENGTH`,
      );
    this.enableAlphaCapabilities = options.enableAlphaCapabilities ?? true;
    this.enableListSnapshots = options.enableListSnapshots ?? true;
    this.allowedPathRoots = allowedRoots(options.allowedPathRoots ?? DEFAULT_ALLOWED_PATH_ROOTS);
    this.logger = options.logger ?? silentLogger;
    this.now = options.now ?? Date.now;
  }

  /**
   * NodeGetInfo's max_volumes_per_node, as upstream computes it: --attach-limit when positive,
   * else --maxvolumespernode (0 = no limit), and with --attach-limit=-1 a random
   * 1..RANDOM_ATTACH_LIMIT_MAX drawn on each call (`random` returns [0, 1)).
   */
  reportedVolumeLimit(random: () => number = Math.random): number {
    if (this.attachLimit === RANDOM_ATTACH_LIMIT) return 1 + Math.floor(random() * RANDOM_ATTACH_LIMIT_MAX);
    return this.attachLimit > 0 ? this.attachLimit : this.maxVolumesPerNode;
  }

  /** The topology segments of a volume living on `nodeId` (none when topology is off). */
  topologyOf(nodeId: string): Array<{ segments: Record<string, string> }> {
    return this.enableTopology ? [{ segments: { [TOPOLOGY_KEY_NODE]: nodeId } }] : [];
  }
}
