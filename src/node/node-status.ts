// The Node object and its heartbeats, as the kubelet keeps them: registration (labels
// kubernetes.io/hostname, kubernetes.io/os|arch and their beta twins, --node-labels, the
// controller-managed-attach-detach annotation), status with a Ready condition, the node Lease
// in kube-node-lease renewed every 10s, and status.volumesInUse. Every Node write goes
// through `mutateNode` (read, change, write with conflict retry, one at a time), so CSI
// registration and volume reporting never overwrite each other. Ready stays False ("CSINode is
// not yet initialized", as the kubelet) until the CSINode with its migrated-plugins annotation
// exists: the seed's ADC–kubelet sync, so nothing is scheduled here before controllers can see
// which in-tree plugins this node migrated.

import { hostname as osHostname } from "node:os";
import { ANNOTATIONS, GVR, LABELS, type Lease, type Node, type NodeCondition } from "../api/index.ts";
import { errorMessage } from "../base/index.ts";
import { isAlreadyExists, isConflict, isNotFound, microTime } from "../kube/index.ts";
import type { NodeContext } from "./options.ts";

export const NODE_LEASE_NAMESPACE = "kube-node-lease";
const CONFLICT_RETRIES = 10;

/** Go's GOARCH for this process, as the kubelet labels kubernetes.io/arch. */
export function goArch(arch: string = process.arch): string {
  const map: Record<string, string> = { x64: "amd64", ia32: "386", ppc64: "ppc64le" };
  return map[arch] ?? arch;
}

export function nodeLabels(nodeName: string, hostname: string, extra: Readonly<Record<string, string>>) {
  return {
    "beta.kubernetes.io/arch": goArch(),
    "beta.kubernetes.io/os": "linux",
    "kubernetes.io/arch": goArch(),
    [LABELS.hostname.key]: hostname || nodeName,
    "kubernetes.io/os": "linux",
    ...extra,
  };
}

function time(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

export interface NodeStatusOptions {
  hostname: string;
  labels: Readonly<Record<string, string>>;
  leaseDurationSeconds: number;
  kubeletVersion: string;
  /**
   * status.runtimeHandlers' features of the default handler (""): whether containers get
   * recursive read-only mounts (KEP-3857). Omitted while the RecursiveReadOnlyMounts gate is off.
   */
  recursiveReadOnlyMounts?: boolean;
}

/** The node's InternalIP: the secure port's own address when it names one, else loopback. */
function internalIP(bindAddress: string | undefined): string {
  if (!bindAddress || bindAddress === "0.0.0.0" || bindAddress === "::" || bindAddress === "")
    return "127.0.0.1";
  return bindAddress;
}

export class NodeStatusManager {
  readonly #context: NodeContext;
  readonly #options: NodeStatusOptions;
  #chain: Promise<unknown> = Promise.resolve();
  #uid = "";
  #reportedInUse: string[] | undefined;
  /** Whether the CSINode (with the migrated-plugins annotation) is written. */
  #csiNodeInitialized = false;
  /** Where the secure port listens (status.addresses' InternalIP, status.daemonEndpoints). */
  #kubeletEndpoint: { address: string; port: number } | undefined;

  constructor(context: NodeContext, options: NodeStatusOptions) {
    this.#context = context;
    this.#options = options;
  }

  get uid(): string {
    return this.#uid;
  }

  /** Volumes last written to status.volumesInUse (undefined before the first write). */
  get reportedInUse(): ReadonlySet<string> {
    return new Set(this.#reportedInUse ?? []);
  }

  /**
   * The secure port's address and port, as the kubelet reports them for the API server to reach
   * it (pods/log, pods/exec); written with the next status.
   */
  setKubeletEndpoint(address: string, port: number): void {
    this.#kubeletEndpoint = { address, port };
  }

  /** Creates the Node, or merges labels/annotation into an existing one; then writes status. */
  async register(signal: AbortSignal): Promise<Node> {
    const { client, nodeName } = this.#context;
    const labels = nodeLabels(nodeName, this.#options.hostname, this.#options.labels);
    const annotations = { [ANNOTATIONS.controllerManagedAttachDetach.key]: "true" };
    let node: Node;
    try {
      node = await client.create<Node>(
        GVR.nodes,
        { apiVersion: "v1", kind: "Node", metadata: { name: nodeName, labels, annotations }, spec: {} },
        signal,
      );
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
      node = await this.mutateNode((current) => {
        const metadata = (current.metadata ??= {});
        metadata.labels = { ...metadata.labels, ...labels };
        metadata.annotations = { ...metadata.annotations, ...annotations };
        return true;
      }, signal);
    }
    this.#uid = node.metadata?.uid ?? "";
    this.#reportedInUse = node.status?.volumesInUse ?? [];
    await this.writeStatus(signal);
    return node;
  }

  /** The CSINode is initialized: the next status write may say Ready. */
  markCSINodeInitialized(): void {
    this.#csiNodeInitialized = true;
  }

  /** Writes the node status with a fresh Ready heartbeat (and the kubelet's other conditions). */
  async writeStatus(signal: AbortSignal): Promise<void> {
    const now = time(this.#context.clock.now());
    await this.#serialize(async () => {
      const current = await this.#context.client.get<Node>(GVR.nodes, this.#context.nodeName, {}, signal);
      const previous = new Map((current.status?.conditions ?? []).map((c) => [c.type, c]));
      const condition = (type: string, status: "True" | "False", reason: string, message: string) => {
        const old = previous.get(type);
        const result: NodeCondition = {
          type,
          status,
          lastHeartbeatTime: now,
          lastTransitionTime: old && old.status === status ? (old.lastTransitionTime ?? now) : now,
          reason,
          message,
        };
        return result;
      };
      const status = {
        capacity: { cpu: "2", memory: "4Gi", pods: "110", "ephemeral-storage": "10Gi" },
        allocatable: { cpu: "2", memory: "4Gi", pods: "110", "ephemeral-storage": "10Gi" },
        conditions: [
          condition(
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
          ),
          condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
          condition(
            "PIDPressure",
            "False",
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
          ),
          this.#csiNodeInitialized
            ? condition("Ready", "True", "KubeletReady", "kubelet is posting ready status")
            : condition("Ready", "False", "KubeletNotReady", "CSINode is not yet initialized"),
        ],
        addresses: [
          { type: "InternalIP", address: internalIP(this.#kubeletEndpoint?.address) },
          { type: "Hostname", address: this.#options.hostname || this.#context.nodeName },
        ],
        // A restarted node agent writes status before its server listens: the port the last run
        // reported stays until then, so `kubectl exec` and logs keep finding the node.
        daemonEndpoints: {
          kubeletEndpoint: {
            Port: this.#kubeletEndpoint?.port ?? current.status?.daemonEndpoints?.kubeletEndpoint?.Port ?? 0,
          },
        },
        nodeInfo: {
          machineID: "",
          systemUUID: "",
          bootID: "",
          kernelVersion: "",
          osImage: `csikit virtual node on ${osHostname()}`,
          containerRuntimeVersion: "csikit://none",
          kubeletVersion: this.#options.kubeletVersion,
          kubeProxyVersion: "",
          operatingSystem: "linux",
          architecture: goArch(),
        },
        ...(this.#options.recursiveReadOnlyMounts !== undefined
          ? {
              runtimeHandlers: [
                { name: "", features: { recursiveReadOnlyMounts: this.#options.recursiveReadOnlyMounts } },
              ],
            }
          : {}),
      };
      await this.#context.client.patch(
        GVR.nodes,
        this.#context.nodeName,
        { status },
        {
          subresource: "status",
        },
        signal,
      );
    });
  }

  /** Sets status.volumesInUse (sorted) unless it already says exactly that. */
  async setVolumesInUse(volumes: readonly string[], signal: AbortSignal): Promise<void> {
    const sorted = [...new Set(volumes)].sort();
    if (this.#reportedInUse && sameList(this.#reportedInUse, sorted)) return;
    await this.#serialize(async () => {
      await this.#context.client.patch(
        GVR.nodes,
        this.#context.nodeName,
        { status: { volumesInUse: sorted.length > 0 ? sorted : null } },
        { subresource: "status" },
        signal,
      );
      this.#reportedInUse = sorted;
    });
  }

  /**
   * Read-modify-write of the Node: `change` edits a copy and returns whether it changed
   * anything (no write when not). Retries on conflict; writes run one at a time.
   */
  async mutateNode(change: (node: Node) => boolean, signal?: AbortSignal): Promise<Node> {
    return this.#serialize(async () => {
      for (let attempt = 0; ; attempt++) {
        const current = await this.#context.client.get<Node>(GVR.nodes, this.#context.nodeName, {}, signal);
        const copy = structuredClone(current);
        if (!change(copy)) return current;
        try {
          return await this.#context.client.update<Node>(GVR.nodes, copy, {}, signal);
        } catch (error) {
          if (!isConflict(error) || attempt >= CONFLICT_RETRIES) throw error;
        }
      }
    });
  }

  /** Renews the node Lease every interval until the signal aborts (create on first run). */
  async runLease(intervalMs: number, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.renewLease(signal);
      } catch (error) {
        if (signal.aborted) return;
        this.#context.logger.warn("failed to renew node lease", { err: errorMessage(error) });
      }
      await this.#context.clock.sleep(intervalMs, signal).catch(() => undefined);
    }
  }

  async renewLease(signal: AbortSignal): Promise<void> {
    const { client, nodeName, clock } = this.#context;
    const spec = {
      holderIdentity: nodeName,
      leaseDurationSeconds: this.#options.leaseDurationSeconds,
      renewTime: microTime(clock.now()),
    };
    const ownerReferences = this.#uid
      ? [{ apiVersion: "v1", kind: "Node", name: nodeName, uid: this.#uid }]
      : undefined;
    try {
      const lease = await client.get<Lease>(
        GVR.leases,
        nodeName,
        { namespace: NODE_LEASE_NAMESPACE },
        signal,
      );
      const copy = structuredClone(lease);
      copy.spec = { ...copy.spec, ...spec };
      if (ownerReferences) copy.metadata = { ...copy.metadata, ownerReferences };
      await client.update(GVR.leases, copy, {}, signal);
    } catch (error) {
      if (!isNotFound(error)) throw error;
      await client.create<Lease>(
        GVR.leases,
        {
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: {
            name: nodeName,
            namespace: NODE_LEASE_NAMESPACE,
            ...(ownerReferences ? { ownerReferences } : {}),
          },
          spec,
        },
        signal,
      );
    }
  }

  /** Rewrites the status (fresh Ready heartbeat) every interval until the signal aborts. */
  async runHeartbeat(intervalMs: number, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.#context.clock.sleep(intervalMs, signal).catch(() => undefined);
      if (signal.aborted) return;
      await this.writeStatus(signal).catch((error: unknown) => {
        if (!signal.aborted)
          this.#context.logger.warn("failed to update node status", { err: errorMessage(error) });
      });
    }
  }

  #serialize<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(fn, fn);
    this.#chain = run.catch(() => undefined);
    return run;
  }
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((value, i) => value === b[i]);
}
