// The CSI node ID of a Kubernetes node for this driver, as the attacher finds it:
//   1. the node's CSINode entry for the driver (written by the kubelet at registration);
//   2. the Node's `csi.volume.kubernetes.io/nodeid` annotation (JSON {driver: id}), which
//      kubelets wrote before CSINode existed — read with a GET only when CSINode has no
//      entry, and skipped when RBAC forbids reading Nodes (upstream's ClusterRole grants none);
//   3. for a detach only, the `csi.alpha.kubernetes.io/node-id` annotation the attacher put on
//      the VolumeAttachment before ControllerPublishVolume, so a volume can be detached after
//      its node, its CSINode or the driver's registration is gone.

import { ANNOTATIONS, GVR, type Node, type VolumeAttachment } from "../../api/index.ts";
import { apiStatusCode } from "../../kube/index.ts";
import type { AttacherContext } from "./context.ts";

export class NodeIdError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "NodeIdError";
  }
}

async function nodeAnnotationId(
  ctx: AttacherContext,
  nodeName: string,
  signal: AbortSignal,
): Promise<string> {
  let node: Node;
  try {
    node = await ctx.client.get<Node>(GVR.nodes, nodeName, {}, signal);
  } catch (error) {
    const status = apiStatusCode(error);
    if (status === 404 || status === 403) return "";
    throw error;
  }
  const raw = node.metadata?.annotations?.[ANNOTATIONS.nodeID.key];
  if (!raw) return "";
  try {
    const ids: unknown = JSON.parse(raw);
    if (typeof ids === "object" && ids !== null) {
      const id: unknown = (ids as Record<string, unknown>)[ctx.driver.name];
      if (typeof id === "string") return id;
    }
  } catch {
    // A malformed annotation is as good as none.
  }
  return "";
}

/**
 * The node ID for `nodeName`; pass `va` (detach) to fall back on the ID recorded at attach.
 * Throws NodeIdError naming what was missing.
 */
export async function nodeIdFor(
  ctx: AttacherContext,
  nodeName: string,
  options: { va?: VolumeAttachment; signal: AbortSignal },
): Promise<string> {
  const csiNode = ctx.csiNodes.get(nodeName);
  const entry = csiNode?.spec.drivers.find((driver) => driver.name === ctx.driver.name);
  if (entry) return entry.nodeID;
  const fromNode = await nodeAnnotationId(ctx, nodeName, options.signal);
  if (fromNode !== "") return fromNode;
  const recorded = options.va?.metadata?.annotations?.[ANNOTATIONS.attachmentNodeID.key];
  if (recorded !== undefined && recorded !== "") return recorded;
  throw new NodeIdError(
    csiNode
      ? `CSINode ${nodeName} does not contain driver ${ctx.driver.name}`
      : `csinode.storage.k8s.io "${nodeName}" not found`,
  );
}
