// Where everything of one `csikit up` cluster lives under its state dir, and the small record
// (cluster.json) that lets a second `up` on the same dir resume it: the API server's port (so
// every kubeconfig written before stays valid) and the nodes with their zones.

import { createHash } from "node:crypto";
import { chmod, lstat, mkdir, readFile, readlink, rm, rmdir, symlink, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve, sep } from "node:path";
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

/**
 * Unix socket paths end at 107 bytes (sun_path); the longest up binds is a registrar's temp
 * socket beside its own (<registration dir>/<driver>-reg.sock.tmp-xxxxxx), kept under this.
 */
export const SOCKET_PATH_BUDGET = 100;

/** Paths of one cluster's state dir. */
export class ClusterLayout {
  readonly stateDir: string;
  /**
   * Where the sockets live when the state dir is too deep for them (socket paths have 107
   * bytes): a short private dir named after the state dir (shortSocketRoot), recorded in
   * socketRootFile. Undefined: under the state dir (sockets/, and the nodes' kubelet dirs).
   */
  socketRoot: string | undefined;
  constructor(stateDir: string, socketRoot?: string) {
    this.stateDir = stateDir;
    this.socketRoot = socketRoot;
  }
  /** Names the short socket dir of this cluster, when it has one. */
  get socketRootFile(): string {
    return join(this.stateDir, "socket-dir");
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
    return join(this.socketRoot ?? this.stateDir, "sockets");
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
    return join(
      this.socketRoot === undefined ? this.rootOf(node) : join(this.socketRoot, node),
      "plugins",
      driver,
      "csi.sock",
    );
  }
  /**
   * Where the registrar puts its socket: the node's kubelet dir's plugins_registry/, or with a
   * socket root that dir's <node>/plugins_registry/, which the kubelet dir's plugins_registry
   * then links to (linkRegistrationDirs; the node agent addresses sockets by the real path).
   */
  registrationDirOf(node: string): string {
    return join(
      this.socketRoot === undefined ? this.rootOf(node) : join(this.socketRoot, node),
      "plugins_registry",
    );
  }
  /** The longest socket path up binds for these nodes (see SOCKET_PATH_BUDGET). */
  longestSocketPath(nodes: readonly string[], driver: string): string {
    const paths = [
      `${this.controllerSocket}`,
      ...nodes.flatMap((node) => [
        `${this.registrationDirOf(node)}/${driver}-reg.sock.tmp-xxxxxx`,
        // a fault proxy's driver listens on driver-<socket> beside it
        join(dirname(this.nodeSocketOf(node, driver)), "driver-csi.sock"),
      ]),
    ];
    return paths.reduce((a, b) => (Buffer.byteLength(b) > Buffer.byteLength(a) ? b : a));
  }

  /**
   * Picks where the sockets go: the dir recorded by an earlier run, else under the state dir
   * when every socket path fits, else a short dir (shortSocketRoot), recorded for the next run
   * and for tools. Creates the short dir 0700 (refusing one that is not this user's own private
   * dir) and points each node's plugins_registry/ at its registration dir there. Throws when even
   * the short paths do not fit (a very long driver name).
   */
  async placeSockets(nodes: readonly string[], driver: string): Promise<void> {
    let recorded: string | undefined;
    try {
      recorded = (await readFile(this.socketRootFile, "utf8")).trim() || undefined;
    } catch (error) {
      if (!isErrno(error, "ENOENT")) throw error;
    }
    this.socketRoot = recorded;
    if (
      recorded === undefined &&
      Buffer.byteLength(this.longestSocketPath(nodes, driver)) > SOCKET_PATH_BUDGET
    )
      this.socketRoot = shortSocketRoot(this.stateDir);
    const longest = this.longestSocketPath(nodes, driver);
    if (Buffer.byteLength(longest) > SOCKET_PATH_BUDGET)
      throw new CsikitError(
        "CSIKIT_ERR_SOCKET_PATH",
        `socket paths like ${longest} exceed the 107-byte limit of Unix sockets even in ${this.socketRoot ?? this.stateDir}; use a shorter --state-dir or driver name`,
      );
    if (this.socketRoot === undefined) return;
    await privateDir(this.socketRoot);
    if (recorded === undefined) await writeAtomic(this.socketRootFile, `${this.socketRoot}\n`, 0o600);
    for (const node of nodes) {
      const target = this.registrationDirOf(node);
      await mkdir(target, { recursive: true, mode: 0o700 });
      const link = join(this.rootOf(node), "plugins_registry");
      await mkdir(this.rootOf(node), { recursive: true, mode: 0o700 });
      const existing = await lstat(link).catch((error: unknown) => {
        if (isErrno(error, "ENOENT")) return undefined;
        throw error;
      });
      if (existing?.isSymbolicLink()) {
        if ((await readlink(link)) === target) continue;
        await unlink(link);
      } else if (existing !== undefined) await rmdir(link); // an empty dir of an earlier run
      await symlink(target, link);
    }
  }

  /** Removes the short socket dir (teardown; the next run makes it again). */
  async removeSocketRoot(): Promise<void> {
    if (this.socketRoot !== undefined) await rm(this.socketRoot, { recursive: true, force: true });
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

/**
 * A short dir for the sockets of the cluster in `stateDir`: csikit-<hash of its absolute path>
 * in the temp dir (or /tmp when TMPDIR is itself long), one per state dir.
 */
export function shortSocketRoot(stateDir: string): string {
  const name = `csikit-${createHash("sha256").update(resolve(stateDir)).digest("hex").slice(0, 16)}`;
  const base = Buffer.byteLength(tmpdir()) <= 20 ? tmpdir() : "/tmp";
  return join(base, name);
}

/** Makes `dir` (in a shared temp dir) this user's private dir, or refuses one someone else made. */
async function privateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const stat = await lstat(dir);
  if (!stat.isDirectory() || (process.getuid !== undefined && stat.uid !== process.getuid()))
    throw new CsikitError(
      "CSIKIT_ERR_SOCKET_PATH",
      `${dir} (the cluster's socket dir) is not a directory of this user's; remove it or use another --state-dir`,
    );
  if ((stat.mode & 0o077) !== 0) await chmod(dir, 0o700);
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
