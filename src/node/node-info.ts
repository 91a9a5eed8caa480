// What the kubelet's nodeinfomanager does for CSI drivers: the CSINode object (owned by the
// Node, created at start-up with no drivers), a driver's entry in CSINode spec.drivers, its
// node ID in the Node's csi.volume.kubernetes.io/nodeid annotation (JSON map driver → ID) and
// its topology segments as Node labels. Uninstall removes the CSINode entry and the
// annotation key; topology labels stay, as the kubelet leaves them.

import { ANNOTATIONS, GVR, type CSINode, type CSINodeDriver, type Node } from "../api/index.ts";
import { setMigratedPluginsAnnotation } from "../migration/index.ts";
import { CsikitError } from "../base/index.ts";
import { isAlreadyExists, isConflict, isNotFound } from "../kube/index.ts";
import type { NodeStatusManager } from "./node-status.ts";
import type { NodeContext } from "./options.ts";

const CONFLICT_RETRIES = 10;

export interface DriverNodeInfo {
  driverName: string;
  nodeID: string;
  /** max_volumes_per_node; 0 = no limit (allocatable omitted). */
  maxVolumesPerNode: number;
  /** accessible_topology segments. */
  topology: Readonly<Record<string, string>>;
}

export class NodeInfoManager {
  readonly #context: NodeContext;
  readonly #status: NodeStatusManager;
  /** In-tree plugins migrated on this node: the CSINode's migrated-plugins annotation. */
  readonly #migratedPlugins: readonly string[];

  /** MutableCSINodeAllocatableCount: allocatable.count may change in place (KEP-4876). */
  readonly #mutableAllocatable: boolean;

  constructor(
    context: NodeContext,
    status: NodeStatusManager,
    migratedPlugins: readonly string[] = [],
    options: { mutableAllocatable?: boolean } = {},
  ) {
    this.#context = context;
    this.#status = status;
    this.#migratedPlugins = migratedPlugins;
    this.#mutableAllocatable = options.mutableAllocatable ?? false;
  }

  /** Creates the CSINode (no drivers, owner: the Node) unless it exists; fixes a missing owner. */
  async initializeCSINode(nodeUID: string, signal: AbortSignal): Promise<void> {
    const { client, nodeName } = this.#context;
    const ownerReferences = [{ apiVersion: "v1", kind: "Node", name: nodeName, uid: nodeUID }];
    const fresh: CSINode = {
      apiVersion: "storage.k8s.io/v1",
      kind: "CSINode",
      metadata: { name: nodeName, ownerReferences },
      spec: { drivers: [] },
    };
    // The annotation is there from the start: controllers must not see this node's CSINode
    // without it and conclude the node runs in-tree plugins (the seed's ADC–kubelet sync).
    setMigratedPluginsAnnotation(fresh, this.#migratedPlugins);
    try {
      await client.create<CSINode>(GVR.csiNodes, fresh, signal);
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
      await this.#mutateCSINode((csiNode) => {
        const owners = csiNode.metadata?.ownerReferences ?? [];
        if (owners.some((o) => o.kind === "Node" && o.uid === nodeUID)) return false;
        csiNode.metadata = { ...csiNode.metadata, ownerReferences };
        return true;
      }, signal);
    }
  }

  /** Adds or replaces the driver on the Node (annotation, labels) and in CSINode. */
  async installDriver(info: DriverNodeInfo, signal: AbortSignal): Promise<void> {
    await this.#status.mutateNode((node) => {
      let changed = false;
      const labels = (node.metadata ??= {}).labels ?? {};
      for (const [key, value] of Object.entries(info.topology)) {
        const existing = labels[key];
        if (existing !== undefined && existing !== value) {
          throw new CsikitError(
            "CSIKIT_ERR_NODE",
            `detected topology value collision: driver reported "${key}":"${value}" but existing label is "${key}":"${existing}"`,
          );
        }
        if (existing === undefined) {
          labels[key] = value;
          changed = true;
        }
      }
      node.metadata.labels = labels;
      const ids = nodeIDs(node);
      if (ids[info.driverName] !== info.nodeID) {
        ids[info.driverName] = info.nodeID;
        setNodeIDs(node, ids);
        changed = true;
      }
      return changed;
    }, signal);
    const entry: CSINodeDriver = {
      name: info.driverName,
      nodeID: info.nodeID,
      topologyKeys: Object.keys(info.topology).sort(),
      ...(info.maxVolumesPerNode > 0 ? { allocatable: { count: info.maxVolumesPerNode } } : {}),
    };
    const existing = await this.#driverEntry(info.driverName, signal);
    if (existing && sameEntry(existing, entry)) return;
    // Only the count changed and it may change in place: one write, the entry never missing.
    if (
      existing &&
      this.#mutableAllocatable &&
      sameEntry(existing, { ...entry, allocatable: existing.allocatable ?? {} })
    ) {
      await this.updateAllocatable(info.driverName, info.maxVolumesPerNode, signal);
      return;
    }
    // An existing entry is immutable as a whole: drop it first, then add the new one.
    if (existing) await this.#removeEntry(info.driverName, signal);
    await this.#mutateCSINode((csiNode) => {
      csiNode.spec = {
        drivers: [...(csiNode.spec?.drivers ?? []).filter((d) => d.name !== entry.name), entry],
      };
      return true;
    }, signal);
  }

  /**
   * KEP-4876: sets the driver's allocatable.count in place (MutableCSINodeAllocatableCount makes
   * it the one mutable field of an entry) to max_volumes_per_node, 0 meaning no limit (field
   * omitted). Writes only when it differs; a driver with no entry is left alone. Returns
   * whether it wrote.
   */
  async updateAllocatable(
    driverName: string,
    maxVolumesPerNode: number,
    signal: AbortSignal,
  ): Promise<boolean> {
    let wrote = false;
    await this.#mutateCSINode((csiNode) => {
      wrote = false;
      const entry = csiNode.spec?.drivers?.find((d) => d.name === driverName);
      if (entry === undefined) return false;
      const want = maxVolumesPerNode > 0 ? maxVolumesPerNode : undefined;
      if (entry.allocatable?.count === want) return false;
      if (want === undefined) delete entry.allocatable;
      else entry.allocatable = { count: want };
      wrote = true;
      return true;
    }, signal);
    return wrote;
  }

  /** Removes the driver's CSINode entry and node-ID annotation key (labels stay). */
  async uninstallDriver(driverName: string, signal: AbortSignal): Promise<void> {
    await this.#removeEntry(driverName, signal);
    await this.#status.mutateNode((node) => {
      const ids = nodeIDs(node);
      if (!(driverName in ids)) return false;
      delete ids[driverName];
      setNodeIDs(node, ids);
      return true;
    }, signal);
  }

  async #driverEntry(driverName: string, signal: AbortSignal): Promise<CSINodeDriver | undefined> {
    try {
      const csiNode = await this.#context.client.get<CSINode>(
        GVR.csiNodes,
        this.#context.nodeName,
        {},
        signal,
      );
      return csiNode.spec?.drivers?.find((d) => d.name === driverName);
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  async #removeEntry(driverName: string, signal: AbortSignal): Promise<void> {
    await this.#mutateCSINode((csiNode) => {
      const drivers = csiNode.spec?.drivers ?? [];
      if (!drivers.some((d) => d.name === driverName)) return false;
      csiNode.spec = { drivers: drivers.filter((d) => d.name !== driverName) };
      return true;
    }, signal);
  }

  async #mutateCSINode(change: (csiNode: CSINode) => boolean, signal: AbortSignal): Promise<void> {
    const { client, nodeName } = this.#context;
    for (let attempt = 0; ; attempt++) {
      let current: CSINode;
      try {
        current = await client.get<CSINode>(GVR.csiNodes, nodeName, {}, signal);
      } catch (error) {
        if (!isNotFound(error)) throw error;
        const node = await client.get<Node>(GVR.nodes, nodeName, {}, signal);
        await this.initializeCSINode(node.metadata?.uid ?? "", signal);
        continue;
      }
      const copy = structuredClone(current);
      const changed = change(copy);
      // Every CSINode write also brings the migrated-plugins annotation up to date.
      if (!setMigratedPluginsAnnotation(copy, this.#migratedPlugins) && !changed) return;
      try {
        await client.update(GVR.csiNodes, copy, {}, signal);
        return;
      } catch (error) {
        if (!isConflict(error) || attempt >= CONFLICT_RETRIES) throw error;
      }
    }
  }
}

function nodeIDs(node: Node): Record<string, string> {
  const text = node.metadata?.annotations?.[ANNOTATIONS.nodeID.key];
  if (!text) return {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== "object" || parsed === null) return {};
    return Object.fromEntries(
      Object.entries(parsed).filter((entry): entry is [string, string] => typeof entry[1] === "string"),
    );
  } catch {
    return {};
  }
}

function setNodeIDs(node: Node, ids: Record<string, string>): void {
  const annotations = { ...(node.metadata?.annotations ?? {}) };
  if (Object.keys(ids).length === 0) delete annotations[ANNOTATIONS.nodeID.key];
  else annotations[ANNOTATIONS.nodeID.key] = JSON.stringify(ids);
  node.metadata = { ...node.metadata, annotations };
}

function sameEntry(a: CSINodeDriver, b: CSINodeDriver): boolean {
  return (
    a.nodeID === b.nodeID &&
    JSON.stringify([...(a.topologyKeys ?? [])].sort()) === JSON.stringify(b.topologyKeys ?? []) &&
    (a.allocatable?.count ?? 0) === (b.allocatable?.count ?? 0)
  );
}
