// Names the provisioner derives (FACTS.md "Names"): the PV name, which is also the CSI
// CreateVolume name and so what makes CreateVolume idempotent across retries and restarts, and
// the provisioner identity stamped into every PV's volumeAttributes.

import { randomInt } from "node:crypto";

/** `<prefix>-<claim UID>`; a positive length truncates the UID with its dashes removed. */
export function volumeName(prefix: string, claimUid: string, uuidLength: number): string {
  if (uuidLength <= 0) return `${prefix}-${claimUid}`;
  return `${prefix}-${claimUid.replace(/-/g, "").slice(0, uuidLength)}`;
}

/** `<unix-ms>-<rand 0..9999>-<driver>[-<node>]`, computed once per process as upstream. */
export function provisionerIdentity(driverName: string, nodeName = "", now = Date.now()): string {
  const base = `${now}-${randomInt(0, 10000)}-${driverName}`;
  return nodeName === "" ? base : `${base}-${nodeName}`;
}
