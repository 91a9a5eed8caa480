// Where everything of one `csikit up` cluster lives under its state dir, and the small record
// (cluster.json) that lets a second `up` on the same dir resume it: the API server's port (so
// every kubeconfig written before stays valid) and the nodes with their zones.

import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile, rename } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { isErrno, isRecord, CsikitError } from "../base/index.ts";

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
    return { port: value.port, nodes, driverName: value.driverName };
  }

  async writeRecord(record: ClusterRecord): Promise<void> {
    const temp = `${this.recordPath}.${randomBytes(4).toString("hex")}`;
    await writeFile(temp, JSON.stringify(record, null, 2) + "\n", { mode: 0o600 });
    await rename(temp, this.recordPath);
  }
}

/** Node names and zones: node-1, node-2, … alternating over the two zones. */
export function nodeSpecs(count: number): NodeSpec[] {
  return Array.from({ length: count }, (_, i) => ({ name: `node-${i + 1}`, zone: ZONES[i % ZONES.length]! }));
}

/** A free TCP port on 127.0.0.1 (bound and released; the API server takes it next). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
