// Leader-election Lease names as the upstream sidecars derive them (FACTS.md "Names"): a
// per-component prefix plus the driver name, sanitized as csi-lib-utils' leaderelection does —
// every character outside [a-zA-Z0-9-] becomes "-", and an "X" is appended when the result
// would end in "-" (a Lease name must end alphanumeric). Two replicas of the same sidecar must
// compute the same name, and an upstream replica must too, or both would lead at once.

export type LeaseComponent =
  "provisioner" | "attacher" | "resizer" | "snapshotter" | "snapshot-controller" | "health-monitor";

/** csi-lib-utils' name sanitizer. */
export function sanitizeLeaseName(name: string): string {
  const sanitized = name.replace(/[^a-zA-Z0-9-]/g, "-");
  return sanitized.endsWith("-") ? sanitized + "X" : sanitized;
}

/** The Lease a component's replicas compete for. */
export function leaseName(component: LeaseComponent, driverName: string): string {
  switch (component) {
    case "provisioner":
      return sanitizeLeaseName(driverName);
    case "attacher":
      return sanitizeLeaseName(`external-attacher-leader-${driverName}`);
    case "resizer":
      return sanitizeLeaseName(`external-resizer-${driverName}`);
    case "snapshotter":
      return sanitizeLeaseName(`external-snapshotter-leader-${driverName}`);
    case "snapshot-controller":
      return "snapshot-controller-leader";
    case "health-monitor":
      return sanitizeLeaseName(`external-health-monitor-leader-${driverName}`);
  }
}
