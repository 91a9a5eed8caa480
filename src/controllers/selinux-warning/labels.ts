// SELinux labels as kube-controller-manager's selinux-warning-controller sees them (no I/O): a
// label is the pod's seLinuxOptions joined as "user:role:type:level" with nothing defaulted —
// the controller cannot read a node's /etc/selinux, so a missing part stays empty and is
// treated as matching anything ("" never conflicts). Which options apply to a volume: those of
// every container (init, app, ephemeral) that mounts it or uses it as a block device, a
// container's own seLinuxOptions replacing the pod's wholesale.

import type { Container, Pod } from "../../api/index.ts";

export interface SELinuxOptions {
  user?: string;
  role?: string;
  type?: string;
  level?: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function seLinuxOptionsOf(securityContext: unknown): SELinuxOptions | undefined {
  if (!isRecord(securityContext) || !isRecord(securityContext.seLinuxOptions)) return undefined;
  return securityContext.seLinuxOptions;
}

/** The file label for options, "" for none (all four parts empty counts as none). */
export function fileLabel(options: SELinuxOptions | undefined): string {
  if (options === undefined) return "";
  const label = [options.user ?? "", options.role ?? "", options.type ?? "", options.level ?? ""].join(":");
  return label === ":::" ? "" : label;
}

/**
 * Whether two labels conflict: some part differs while set in both. The level may itself hold
 * colons ("s0:c1,c2"), so a label splits into at most four parts.
 */
export function labelsConflict(a: string, b: string): boolean {
  const split = (label: string): string[] => {
    const parts = label.split(":");
    return parts.length > 4 ? [...parts.slice(0, 3), parts.slice(3).join(":")] : parts;
  };
  const partsA = split(a);
  const partsB = split(b);
  const length = Math.max(partsA.length, partsB.length);
  for (let i = 0; i < length; i++) {
    const x = partsA[i] ?? "";
    const y = partsB[i] ?? "";
    if (x !== "" && y !== "" && x !== y) return true;
  }
  return false;
}

/** The pod's seLinuxChangePolicy ("MountOption" when unset, as upstream defaults it). */
export function podChangePolicy(pod: Pod): string {
  const policy = isRecord(pod.spec?.securityContext)
    ? pod.spec.securityContext.seLinuxChangePolicy
    : undefined;
  return typeof policy === "string" && policy !== "" ? policy : "MountOption";
}

/**
 * The volumes any container uses (by name), each with the distinct labels its containers give
 * it (the effective seLinuxOptions of each container, as file labels).
 */
export function podVolumeLabels(pod: Pod): Map<string, Set<string>> {
  const podOptions = seLinuxOptionsOf(pod.spec?.securityContext);
  const containers: Container[] = [
    ...(pod.spec?.initContainers ?? []),
    ...(pod.spec?.containers ?? []),
    ...((pod.spec?.ephemeralContainers as Container[] | undefined) ?? []),
  ];
  const volumes = new Map<string, Set<string>>();
  for (const container of containers) {
    const label = fileLabel(seLinuxOptionsOf(container.securityContext) ?? podOptions);
    const names = [
      ...(container.volumeMounts ?? []).map((mount) => mount.name),
      ...(container.volumeDevices ?? []).map((device) => device.name),
    ];
    for (const name of names) {
      const labels = volumes.get(name) ?? new Set<string>();
      labels.add(label);
      volumes.set(name, labels);
    }
  }
  return volumes;
}
