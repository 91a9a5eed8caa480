// KEP-1710 on the node: the SELinux label a CSI volume is mounted with (`-o context=`), so the
// container runtime need not relabel every file. The kubelet adds `context="<label>"` to the
// mount flags of NodeStageVolume and NodePublishVolume when all of these hold:
//   - the host has SELinux (the kubelet asks libselinux; csikit looks for selinuxfs, or is told);
//   - SELinuxMountReadWriteOncePod is on, and the volume is ReadWriteOncePod — or SELinuxMount is
//     on too, and then any access mode;
//   - the CSIDriver says spec.seLinuxMount: true;
//   - the pod's seLinuxChangePolicy is not Recursive (SELinuxChangePolicy on; unset = MountOption);
//   - the containers that mount the volume have SELinux options (the container's, else the
//     pod's), and they all come to the same file label; differing labels are an error.
// The file label is built as the kubelet's translator builds it with the container-selinux
// defaults: <user, default system_u>:object_r:container_file_t:<level>. Without a level the
// runtime would pick a random MCS level the node cannot know, so csikit then passes no label
// (the runtime relabels, as for any volume without the option).

import { existsSync } from "node:fs";
import type { CSIDriver, PersistentVolumeAccessMode, Pod } from "../api/index.ts";
import { CsikitError } from "../base/index.ts";
import type { FeatureGates } from "../migration/index.ts";
import { gateOn, NODE_GATES } from "./feature-gates.ts";

/** Where libselinux finds selinuxfs: present only on a host with SELinux enabled. */
const SELINUXFS_ENFORCE = "/sys/fs/selinux/enforce";

/** Whether the host has SELinux enabled (selinuxfs mounted), as libselinux's is_selinux_enabled. */
export function hostSELinuxEnabled(): boolean {
  return existsSync(SELINUXFS_ENFORCE);
}

interface SELinuxOptions {
  user?: string;
  role?: string;
  type?: string;
  level?: string;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function seLinuxOptionsOf(securityContext: unknown): SELinuxOptions | undefined {
  const options = record(record(securityContext)?.seLinuxOptions);
  if (options === undefined) return undefined;
  const text = (key: string): string | undefined =>
    typeof options[key] === "string" && options[key] !== "" ? options[key] : undefined;
  const out: SELinuxOptions = {};
  for (const key of ["user", "role", "type", "level"] as const) {
    const value = text(key);
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** The file label for a container's SELinux options; "" when none can be known. */
export function fileLabel(options: SELinuxOptions | undefined): string {
  if (options?.level === undefined) return "";
  return `${options.user ?? "system_u"}:object_r:container_file_t:${options.level}`;
}

/** The labels of the containers (init, regular, ephemeral) that mount `volumeName`. */
function containerLabels(pod: Pod, volumeName: string): Set<string> {
  const podOptions = seLinuxOptionsOf(pod.spec?.securityContext);
  const labels = new Set<string>();
  const spec = record(pod.spec) ?? {};
  for (const field of ["initContainers", "containers", "ephemeralContainers"]) {
    const list = Array.isArray(spec[field]) ? (spec[field] as unknown[]) : [];
    for (const item of list) {
      const container = record(item) ?? {};
      const mounts = [container.volumeMounts, container.volumeDevices].flatMap((m) =>
        Array.isArray(m) ? (m as unknown[]) : [],
      );
      if (!mounts.some((m) => record(m)?.name === volumeName)) continue;
      labels.add(fileLabel(seLinuxOptionsOf(container.securityContext) ?? podOptions));
    }
  }
  return labels;
}

export interface SELinuxMountContext {
  gates: FeatureGates;
  /** The host has SELinux. */
  hostEnabled: boolean;
}

/**
 * The label to mount `volumeName` of `pod` with, or "" for none; throws when the containers
 * that use the volume disagree on it.
 */
export function seLinuxMountLabel(
  pod: Pod,
  volumeName: string,
  accessModes: readonly PersistentVolumeAccessMode[],
  csiDriver: CSIDriver | undefined,
  context: SELinuxMountContext,
): string {
  const { gates } = context;
  if (!context.hostEnabled || !gateOn(gates, NODE_GATES.seLinuxMountReadWriteOncePod)) return "";
  const rwop = accessModes.length === 1 && accessModes[0] === "ReadWriteOncePod";
  if (!rwop && !gateOn(gates, NODE_GATES.seLinuxMount)) return "";
  if (csiDriver?.spec.seLinuxMount !== true) return "";
  const policy = record(pod.spec?.securityContext)?.seLinuxChangePolicy;
  if (gateOn(gates, NODE_GATES.seLinuxChangePolicy) && policy === "Recursive") return "";
  const labels = containerLabels(pod, volumeName);
  if (labels.size > 1) {
    throw new CsikitError(
      "CSIKIT_ERR_SELINUX",
      `multiple SELinux labels found: ${[...labels].sort().join(",")}: containers that share volume "${volumeName}" must use one SELinux label`,
    );
  }
  return [...labels][0] ?? "";
}

/** Mount flags with the kubelet's SELinux option appended (as libselinux's FormatMountLabel quotes it). */
export function withSELinuxMountOption(flags: readonly string[], label: string): string[] {
  return label === "" ? [...flags] : [...flags, `context=${JSON.stringify(label)}`];
}
