// The decision at the heart of external-resizer's expandAndRecover (RecoverVolumeExpansionFailure),
// as a pure function: given the claim's sizes and allocatedResourceStatuses["storage"], which
// size to ask the driver for — or nothing. Written "space shuttle style": each branch names
// what it observed. Table-tested in expand-plan.test.ts.
//
// The rule that makes recovery safe: a size the driver may still be working on (an operation
// that ended without a final answer) is never replaced by a lower user request; only after a
// final error may the user's lowered request be tried.

import { compareSizes } from "./conditions.ts";
import { RESIZE_STATUS } from "./names.ts";

export interface PlanInput {
  /** spec.resources.requests.storage. */
  requested: string;
  /** pv.spec.capacity.storage. */
  volume: string | undefined;
  /** status.allocatedResources.storage. */
  allocated: string | undefined;
  /** status.allocatedResourceStatuses.storage ("" when unset). */
  status: string;
  /** The last controller expansion of this claim ended with a final error (in memory, as upstream). */
  finalError: boolean;
  /** The driver expands in the controller (not the trivial resizer). */
  controlPlane: boolean;
  /** The claim has the FileSystemResizePending condition. */
  fsResizePending: boolean;
}

export type Plan = { expand: false; why: string } | { expand: true; size: string };

export function planExpansion(input: PlanInput): Plan {
  const { requested, volume, allocated, status } = input;
  const orAllocated = allocated ?? requested;
  if (compareSizes(volume, requested) < 0) {
    // OBSERVATION: the PV is smaller than the request: some controller expansion is needed.
    switch (status) {
      case RESIZE_STATUS.nodeInfeasible:
        return { expand: true, size: orAllocated };
      case RESIZE_STATUS.nodePending:
      case RESIZE_STATUS.nodeInProgress:
        // Let the node finish the size already allocated before growing again.
        if (compareSizes(volume, orAllocated) >= 0)
          return { expand: false, why: "node expansion of the allocated size is pending" };
        return { expand: true, size: orAllocated };
      case RESIZE_STATUS.controllerInProgress:
        // Uncertain: the driver may still be growing to the allocated size.
        return { expand: true, size: input.finalError ? requested : orAllocated };
      default:
        return { expand: true, size: requested };
    }
  } else {
    // OBSERVATION: the PV already has the requested size (or more).
    switch (status) {
      case RESIZE_STATUS.nodeInProgress:
      case RESIZE_STATUS.nodePending:
        return { expand: false, why: "controller expansion done, the node is expanding" };
      case RESIZE_STATUS.nodeInfeasible:
        // Reset the claim so that the kubelet may retry.
        return { expand: true, size: input.controlPlane ? orAllocated : requested };
      case RESIZE_STATUS.controllerInProgress:
      case RESIZE_STATUS.controllerInfeasible:
        // Expanded but not recorded, or the user lowered the request after expanding.
        return { expand: true, size: orAllocated };
      default:
        if (status === "" && allocated !== undefined) return { expand: true, size: allocated };
        if (input.fsResizePending) return { expand: false, why: "FileSystemResizePending is set" };
        return { expand: true, size: requested };
    }
  }
}
