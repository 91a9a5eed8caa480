// TEST STAND-IN for the external-provisioner sidecar (the attacher's was replaced by the real
// `csikit attacher`). It is the smallest loop that plays the sidecar's role against the real
// API server and the real hostpath controller service, so the cluster loops and the virtual
// nodes can be proven end to end. It polls (every 50 ms) rather than watches: it is not the
// sidecar, only what the scenarios need of it. Replace it with the real provisioner.

import {
  ANNOTATIONS,
  GVR,
  type CSINode,
  type Node,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type StorageClass,
} from "../../src/api/index.ts";
import { errorMessage } from "../../src/base/index.ts";
import type { CsiClient, Topology } from "../../src/csi/index.ts";
import { isNotFound, type KubeClient } from "../../src/kube/index.ts";

export interface StandIn {
  stop(): Promise<void>;
  /** Errors the loop met (each retried on the next pass); for diagnostics. */
  errors: string[];
}

/** Runs `pass` every 50 ms until stopped; errors are recorded and retried. */
function loop(pass: (signal: AbortSignal) => Promise<void>): StandIn {
  const controller = new AbortController();
  const errors: string[] = [];
  const done = (async () => {
    while (!controller.signal.aborted) {
      try {
        await pass(controller.signal);
      } catch (error) {
        if (!controller.signal.aborted) errors.push(errorMessage(error));
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  return {
    errors,
    stop: async () => {
      controller.abort();
      await done;
    },
  };
}

/** Topology segments of every node that registered `driver`, from CSINode keys and Node labels. */
async function segmentsOf(client: KubeClient, driver: string, nodeNames?: string[]): Promise<Topology[]> {
  const out: Topology[] = [];
  const csiNodes = await client.list<CSINode>(GVR.csiNodes);
  for (const csiNode of csiNodes.items) {
    const name = csiNode.metadata?.name ?? "";
    if (nodeNames && !nodeNames.includes(name)) continue;
    const entry = csiNode.spec.drivers.find((d) => d.name === driver);
    if (!entry?.topologyKeys?.length) continue;
    const node = await client.get<Node>(GVR.nodes, name);
    const segments: Record<string, string> = {};
    for (const key of entry.topologyKeys) {
      const value = node.metadata?.labels?.[key];
      if (value !== undefined) segments[key] = value;
    }
    out.push({ segments });
  }
  return out;
}

/** Whether a node with these labels satisfies the class's allowedTopologies (none: every node). */
function allowed(labels: Record<string, string>, klass: StorageClass): boolean {
  const terms = klass.allowedTopologies ?? [];
  if (terms.length === 0) return true;
  return terms.some((term) =>
    (term.matchLabelExpressions ?? []).every((expr) => expr.values.includes(labels[expr.key] ?? "")),
  );
}

/**
 * Stand-in external-provisioner: for claims whose storage-provisioner annotation names
 * `driver` (and, for WaitForFirstConsumer, that carry selected-node), CreateVolume with the
 * requirements the topology of the selected node (or of every allowed node) gives, then
 * creates the PV `pvc-<claim uid>` with claimRef, nodeAffinity and provisioned-by.
 * `created` counts CreateVolume calls per claim.
 */
export function startProvisionerStandIn(options: {
  client: KubeClient;
  csi: CsiClient;
  driver: string;
}): StandIn & { created: Map<string, number> } {
  const { client, csi, driver } = options;
  const created = new Map<string, number>();
  const standIn = loop(async () => {
    const claims = await client.list<PersistentVolumeClaim>(GVR.persistentVolumeClaims);
    for (const claim of claims.items) {
      const annotations = claim.metadata?.annotations ?? {};
      if (annotations[ANNOTATIONS.storageProvisioner.key] !== driver) continue;
      if (claim.spec?.volumeName || claim.metadata?.deletionTimestamp) continue;
      const uid = claim.metadata?.uid ?? "";
      const pvName = `pvc-${uid}`;
      const existing = await client
        .get<PersistentVolume>(GVR.persistentVolumes, pvName)
        .catch((e: unknown) => {
          if (isNotFound(e)) return undefined;
          throw e;
        });
      if (existing) continue;
      const klass = await client.get<StorageClass>(GVR.storageClasses, claim.spec?.storageClassName ?? "");
      const selected = annotations[ANNOTATIONS.selectedNode.key];
      if (klass.volumeBindingMode === "WaitForFirstConsumer" && !selected) continue;
      let candidates = await segmentsOf(client, driver, selected ? [selected] : undefined);
      if (!selected) {
        const nodes = await client.list<Node>(GVR.nodes);
        const allowedNames = nodes.items
          .filter((n) => allowed(n.metadata?.labels ?? {}, klass))
          .map((n) => n.metadata?.name ?? "");
        candidates = await segmentsOf(client, driver, allowedNames);
      }
      const block = claim.spec?.volumeMode === "Block";
      const capability = {
        ...(block ? { block: {} } : { mount: {} }),
        accessMode: { mode: "SINGLE_NODE_WRITER" as const },
      };
      const response = await csi.controller.createVolume({
        name: pvName,
        capacityRange: { requiredBytes: "1048576" },
        volumeCapabilities: [capability],
        parameters: klass.parameters ?? {},
        ...(candidates.length > 0
          ? { accessibilityRequirements: { requisite: candidates, preferred: candidates } }
          : {}),
      });
      created.set(claim.metadata?.name ?? "", (created.get(claim.metadata?.name ?? "") ?? 0) + 1);
      const volume = response.volume;
      const terms = (volume?.accessibleTopology ?? []).map((topology) => ({
        matchExpressions: Object.entries(topology.segments).map(([key, value]) => ({
          key,
          operator: "In" as const,
          values: [value],
        })),
      }));
      await client.create<PersistentVolume>(GVR.persistentVolumes, {
        apiVersion: "v1",
        kind: "PersistentVolume",
        metadata: { name: pvName, annotations: { [ANNOTATIONS.provisionedBy.key]: driver } },
        spec: {
          capacity: { storage: "1Mi" },
          accessModes: claim.spec?.accessModes ?? ["ReadWriteOnce"],
          persistentVolumeReclaimPolicy: klass.reclaimPolicy ?? "Delete",
          storageClassName: klass.metadata?.name ?? "",
          volumeMode: block ? "Block" : "Filesystem",
          claimRef: {
            kind: "PersistentVolumeClaim",
            apiVersion: "v1",
            namespace: claim.metadata?.namespace ?? "",
            name: claim.metadata?.name ?? "",
            uid,
          },
          csi: {
            driver,
            volumeHandle: volume?.volumeId ?? "",
            volumeAttributes: volume?.volumeContext ?? {},
          },
          ...(terms.length > 0 ? { nodeAffinity: { required: { nodeSelectorTerms: terms } } } : {}),
        },
      });
    }
  });
  return { ...standIn, created };
}
