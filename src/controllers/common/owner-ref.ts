// The owner reference a controller puts on what it creates (upstream's metav1.NewControllerRef):
// controller and blockOwnerDeletion true, so the garbage collector deletes the object with its
// owner and a foreground deletion of the owner waits for it.

import type { OwnerReference } from "../../api/index.ts";

export function controllerRef(
  owner: { metadata: { name?: string; uid?: string } },
  kind: string,
  apiVersion: string,
): OwnerReference {
  return {
    apiVersion,
    kind,
    name: owner.metadata.name ?? "",
    uid: owner.metadata.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
}
