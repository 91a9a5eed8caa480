// KEP-3857 recursive read-only mounts as the kubelet resolves them for a container: a
// volumeMount's recursiveReadOnly (Disabled by default, IfPossible, Enabled) decides whether
// the mount and every mount below it are read-only in the container, or only the top one
// (plain readOnly, as runc's "ro" bind). Enabled and IfPossible need readOnly and a
// mountPropagation of None — a propagated submount arriving later could not be made read-only;
// Enabled on a runtime without support fails the container (CreateContainerConfigError).
// csikit's runtime supports it: bubblewrap's --ro-bind remounts each submount read-only, and
// with propagation None no submount arrives after. The status reports it per mount.

import type { VolumeMount } from "../../api/index.ts";

/** A container status' volumeMounts entry (core/v1 VolumeMountStatus). */
export interface VolumeMountStatus {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  recursiveReadOnly?: "Disabled" | "Enabled";
}

/**
 * Whether `mount` is to be recursively read-only, given whether the runtime can do it; throws
 * (naming the volume) when the mount asks for something that cannot be honoured.
 */
export function resolveRecursiveReadOnly(mount: VolumeMount, runtimeSupports: boolean): boolean {
  const mode = mount.recursiveReadOnly ?? "Disabled";
  if (mode === "Disabled") return false;
  if (mount.readOnly !== true)
    throw new Error(`volume "${mount.name}" requested recursive read-only mode, but it is not read-only`);
  const propagation = mount.mountPropagation ?? "None";
  if (propagation !== "None")
    throw new Error(
      `volume "${mount.name}" requested recursive read-only mode, but it is not compatible with propagation "${propagation}"`,
    );
  if (mode === "IfPossible") return runtimeSupports;
  if (mode === "Enabled") {
    if (!runtimeSupports)
      throw new Error(
        `volume "${mount.name}" requested recursive read-only mode, but it is not supported by the runtime`,
      );
    return true;
  }
  throw new Error(`volume "${mount.name}" has an unknown recursive read-only mode "${mode}"`);
}

/**
 * The container status' volumeMounts: each mount with its readOnly, and for a read-only one
 * whether it is recursively so. Undefined while the RecursiveReadOnlyMounts gate is off.
 */
export function volumeMountStatuses(
  mounts: readonly VolumeMount[] | undefined,
  gate: boolean,
): VolumeMountStatus[] | undefined {
  if (!gate || mounts === undefined || mounts.length === 0) return undefined;
  return mounts.map((mount) => {
    const status: VolumeMountStatus = { name: mount.name, mountPath: mount.mountPath };
    if (mount.readOnly === true) status.readOnly = true;
    if (mount.readOnly === true) {
      let recursive = false;
      try {
        recursive = resolveRecursiveReadOnly(mount, true);
      } catch {
        recursive = false;
      }
      status.recursiveReadOnly = recursive ? "Enabled" : "Disabled";
    }
    return status;
  });
}
