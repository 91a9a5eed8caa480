// Where everything of one `csikit up` cluster lives under its state dir, and the small record
// (cluster.json) that lets a second `up` on the same dir resume it: the API server's port (so
// every kubeconfig written before stays valid) and the nodes with their zones.

import { mkdir, readFile } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { isErrno, isRecord, CsikitError, tightenTree, writeAtomic } from "../base/index.ts";
import { mountsUnder } from "./drain.ts";

export const ZONE_LABEL = "topology.kubernetes.io/zone";
export const ZONES = ["zone-a", "zone-b"] as const;

export interface NodeSpec {
  name: string;
  zone: string;
}

export interface ClusterRecord {
  port: number;
  nodes: NodeSpec[];
  driverName: string;
  /** Driver deployed per node (`up --distributed`): its volumes live in the node instances. */
  distributed?: boolean;
}

/** Paths of one cluster's state dir. */
export class ClusterLayout {
  readonly stateDir: string;
  constructor(stateDir: string) {
    this.stateDir = stateDir;
  }
  get adminKubeconfig(): string {
    return join(this.stateDir, "kubeconfig");
  }
  get recordPath(): string {
    return join(this.stateDir, "cluster.json");
  }
  get logsDir(): string {
    return join(this.stateDir, "logs");
  }
  get identitiesDir(): string {
    return join(this.stateDir, "identities");
  }
  get tokenAuthFile(): string {
    return join(this.identitiesDir, "tokens.csv");
  }
  /** The API server's admin bearer token (its pki/, as `csikit apiserver` writes it). */
  get adminTokenFile(): string {
    return join(this.stateDir, "pki", "admin.token");
  }
  get pidsFile(): string {
    return join(this.stateDir, "pids.json");
  }
  kubeconfigOf(component: string): string {
    return join(this.identitiesDir, `${component}.kubeconfig`);
  }
  logOf(component: string): string {
    return join(this.logsDir, `${component}.log`);
  }
  get socketsDir(): string {
    return join(this.stateDir, "sockets");
  }
  get controllerSocket(): string {
    return join(this.socketsDir, "controller.sock");
  }
  get driverStateDir(): string {
    return join(this.stateDir, "hostpath");
  }
  get nodesDir(): string {
    return join(this.stateDir, "nodes");
  }
  /** The node's kubelet root (its own --root-dir). */
  rootOf(node: string): string {
    return join(this.nodesDir, node);
  }
  /** The node plugin's socket, where the kubelet convention puts it: plugins/<driver>/csi.sock. */
  nodeSocketOf(node: string, driver: string): string {
    return join(this.rootOf(node), "plugins", driver, "csi.sock");
  }
  registrationDirOf(node: string): string {
    return join(this.rootOf(node), "plugins_registry");
  }

  /** Creates the state dir (0700: it holds tokens and keys) and its fixed subdirs. */
  async create(): Promise<void> {
    await mkdir(this.stateDir, { recursive: true, mode: 0o700 });
    for (const dir of [this.logsDir, this.identitiesDir, this.socketsDir, this.nodesDir])
      await mkdir(dir, { recursive: true, mode: 0o700 });
  }

  /**
   * Takes group and other access away from everything of the cluster under the state dir
   * (0700 directories, 0600 files), as it may have been loosened since the last run: keys,
   * tokens, kubeconfigs, logs, the driver's records. Left as they are: what the cluster's
   * volumes hold (the driver's volume, snapshot and ephemeral data; the nodes' pod dirs and
   * staging paths, whose modes pods rely on) and any mount point. Returns how many it changed.
   */
  async tighten(): Promise<number> {
    const mounts = new Set(await mountsUnder(this.stateDir));
    return tightenTree(this.stateDir, {
      leave: (path) => mounts.has(path) || holdsVolumeData(relative(this.stateDir, path).split(sep)),
    });
  }

  async readRecord(): Promise<ClusterRecord | undefined> {
    let text: string;
    try {
      text = await readFile(this.recordPath, "utf8");
    } catch (error) {
      if (isErrno(error, "ENOENT")) return undefined;
      throw error;
    }
    const value: unknown = JSON.parse(text);
    if (
      !isRecord(value) ||
      typeof value.port !== "number" ||
      !Array.isArray(value.nodes) ||
      typeof value.driverName !== "string"
    )
      throw new CsikitError(
        "CSIKIT_ERR_CLUSTER_RECORD",
        `${this.recordPath} is not a csikit cluster record; remove the state dir to start afresh`,
      );
    const nodes = value.nodes
      .filter(isRecord)
      .map((node) => ({ name: String(node.name), zone: String(node.zone) }));
    return {
      port: value.port,
      nodes,
      driverName: value.driverName,
      ...(value.distributed === true ? { distributed: true } : {}),
    };
  }

  async writeRecord(record: ClusterRecord): Promise<void> {
    await writeAtomic(this.recordPath, JSON.stringify(record, null, 2) + "\n", 0o600);
  }
}

/** The hostpath driver's dirs of volume content (in its state dir, one per node when distributed). */
const DRIVER_DATA_DIRS: ReadonlySet<string> = new Set(["volumes", "snapshots", "ephemeral"]);

/**
 * Whether a path (as segments relative to the state dir) is inside what the volumes hold: a
 * node's pod dirs (nodes/<n>/pods/<uid>/…) and volume staging (nodes/<n>/plugins/kubernetes.io/…),
 * or the driver's volume data (hostpath/…/volumes/<id>/…).
 */
function holdsVolumeData(segments: readonly string[]): boolean {
  if (segments[0] === "nodes")
    return (
      segments.length >= 4 &&
      (segments[2] === "pods" || (segments[2] === "plugins" && segments[3] === "kubernetes.io"))
    );
  if (segments[0] === "hostpath") {
    const data = segments.findIndex((segment, i) => i >= 1 && DRIVER_DATA_DIRS.has(segment));
    return data >= 0 && segments.length > data + 1;
  }
  return false;
}

/** Node names and zones: node-1, node-2, … alternating over the two zones. */
export function nodeSpecs(count: number): NodeSpec[] {
  return Array.from({ length: count }, (_, i) => ({ name: `node-${i + 1}`, zone: ZONES[i % ZONES.length]! }));
}
