// Distributed provisioning (--node-deployment), as the README's "Deployment on each node":
// every node runs a provisioner next to its driver; topology comes from the local driver only
// (NodeGetInfo). Late binding: only claims selected for this node. Immediate binding
// (--node-deployment-immediate-binding): each instance waits a random delay in
// [0, base-delay] (doubling per failed attempt up to max-delay), asks GetCapacity whether the
// volume fits here, then races to set selected-node to itself with an update carrying the
// claim's resourceVersion — a conflict means another instance won. The winner's own update
// event brings the claim back for normal provisioning.

import {
  GVR,
  parseQuantity,
  quantityValue,
  type CSINode,
  type Node,
  type PersistentVolumeClaim,
  type StorageClass,
} from "../../api/index.ts";
import { errorMessage } from "../../base/index.ts";
import {
  csiAccessMode,
  isConflict,
  isNotFound,
  type ProcessResult,
  type ReconcileContext,
} from "../../kube/index.ts";
import type { ProvisionerContext } from "./context.ts";
import type { DriverInfo } from "./driver.ts";
import { classFsType, driverParameters } from "./parameters.ts";
import { SELECTED_NODE } from "./request.ts";

/** The local node as the only CSINode/Node the topology code sees. */
export function localTopologyView(
  driver: DriverInfo,
  nodeName: string,
): { csiNodes: CSINode[]; nodes: Node[] } {
  return {
    csiNodes: [
      {
        metadata: { name: nodeName },
        spec: {
          drivers: [
            { name: driver.name, nodeID: nodeName, topologyKeys: Object.keys(driver.localTopology).sort() },
          ],
        },
      },
    ],
    nodes: [{ metadata: { name: nodeName, labels: { ...driver.localTopology } } }],
  };
}

function ownDelay(ctx: ProvisionerContext, attempts: number): number {
  const nd = ctx.options.nodeDeployment;
  const cap = Math.min(nd.baseDelayMs * 2 ** attempts, nd.maxDelayMs);
  return Math.floor(ctx.random() * cap);
}

async function fitsHere(
  ctx: ProvisionerContext,
  claim: PersistentVolumeClaim,
  storageClass: StorageClass,
  signal: AbortSignal,
): Promise<boolean> {
  if (!ctx.driver.getCapacity) return true;
  const requested = quantityValue(parseQuantity(claim.spec?.resources?.requests?.storage ?? "0"));
  const block = claim.spec?.volumeMode === "Block";
  const mode = csiAccessMode(claim.spec?.accessModes ?? [], ctx.driver.singleNodeMultiWriter);
  const parameters = storageClass.parameters ?? {};
  const response = await ctx.csi.controller.getCapacity(
    {
      volumeCapabilities: [
        block
          ? { block: {}, accessMode: { mode } }
          : {
              mount: {
                fsType: classFsType(parameters, ctx.options.defaultFsType),
                mountFlags: storageClass.mountOptions ?? [],
              },
              accessMode: { mode },
            },
      ],
      parameters: driverParameters(parameters),
      accessibleTopology: { segments: ctx.driver.localTopology },
    },
    { timeoutMs: ctx.options.timeoutMs, signal },
  );
  const available = BigInt(response.availableCapacity || "0");
  const maximum = response.maximumVolumeSize ? BigInt(response.maximumVolumeSize.value) : undefined;
  if (maximum !== undefined && maximum < requested) return false;
  // A driver reporting 0 without a maximum tracks no capacity (hostpath without --capacity).
  return available === 0n && maximum === undefined ? true : available >= requested;
}

export async function tryToOwnClaim(
  ctx: ProvisionerContext,
  claim: PersistentVolumeClaim,
  storageClass: StorageClass,
  rc: ReconcileContext,
): Promise<ProcessResult | void> {
  const nd = ctx.options.nodeDeployment;
  if (!nd.immediateBinding) return;
  const key = `${claim.metadata?.namespace}/${claim.metadata?.name}`;
  const attempts = ctx.state.ownAttempts.get(key) ?? 0;
  const now = ctx.clock.now();
  const notBefore = ctx.state.ownNotBefore.get(key);
  if (notBefore === undefined) {
    const delay = ownDelay(ctx, attempts);
    ctx.state.ownNotBefore.set(key, now + delay);
    if (delay > 0) return { requeueAfterMs: delay };
  } else if (now < notBefore) return { requeueAfterMs: notBefore - now };
  ctx.state.ownNotBefore.delete(key);
  const retry = (): ProcessResult => {
    ctx.state.ownAttempts.set(key, attempts + 1);
    const delay = ownDelay(ctx, attempts + 1);
    ctx.state.ownNotBefore.set(key, ctx.clock.now() + delay);
    return { requeueAfterMs: Math.max(delay, 1) };
  };
  try {
    if (!(await fitsHere(ctx, claim, storageClass, rc.signal))) {
      rc.logger.info(3, "not enough capacity here for the claim, leaving it to other nodes");
      return retry();
    }
  } catch (error) {
    rc.logger.info(3, "GetCapacity failed, will try again later", { err: errorMessage(error) });
    return retry();
  }
  const updated: PersistentVolumeClaim = structuredClone(claim);
  updated.metadata = {
    ...updated.metadata,
    annotations: { ...updated.metadata?.annotations, [SELECTED_NODE]: nd.nodeName },
  };
  try {
    await ctx.client.update(GVR.persistentVolumeClaims, updated, {}, rc.signal);
  } catch (error) {
    if (isConflict(error) || isNotFound(error)) {
      rc.logger.info(3, "another node owns the claim (or it changed)", { err: errorMessage(error) });
      return retry();
    }
    throw error;
  }
  ctx.state.ownAttempts.delete(key);
  rc.logger.info(2, "took ownership of an immediate-binding claim", { node: nd.nodeName });
  // Our update event requeues the claim; provisioning runs then with selected-node set.
}
