// The vocabulary of the storage e2e tests, as Kubernetes' external storage suites name them: test
// patterns ("Dynamic PV (default fs)"), full test names, the timeouts, skip reasons naming a
// missing capability. The driver is described by `E2eDriver`, a minimal
// local stand-in for the upstream test-driver definition: the catalogue (src/e2e/catalogue/,
// another branch) is to replace it with the full DriverInfo, keeping these fields.

/** What the runner needs to know of the driver under test (a subset of upstream's DriverInfo). */
export interface E2eDriver {
  /** DriverInfo.Name: the CSI driver name, the StorageClass provisioner. */
  name: string;
  /** DriverInfo.Capabilities: persistence, exec, block, … (absent = false). */
  capabilities: Readonly<Record<string, boolean>>;
  /** DriverInfo.SupportedMountOption: options the provisioning suite puts on its class. */
  supportedMountOptions: readonly string[];
  /** Size of each claim (DriverInfo.SupportedSizeRange.Min when given). */
  claimSize: string;
  /** StorageClass.FromExistingClassName: copy this class instead of one naming the driver. */
  existingClassName?: string;
  /** StorageClass parameters (StorageClass.FromFile's), none by default. */
  classParameters?: Readonly<Record<string, string>>;
}

/** Upstream's test pattern: how the volume is obtained (only dynamic PVs so far). */
export interface TestPattern {
  /** The name in brackets: `[Testpattern: Dynamic PV (default fs)]`. */
  name: string;
  volType: "DynamicPV";
  /** Empty: the driver's default filesystem. */
  fsType: string;
}

export const DYNAMIC_PV_DEFAULT_FS: TestPattern = {
  name: "Dynamic PV (default fs)",
  volType: "DynamicPV",
  fsType: "",
};

/** Bounds of each wait (upstream's framework Timeouts), already scaled by --timeout-scale. */
export interface E2eTimeouts {
  /** A claim bound (upstream ClaimProvision, 5 min). */
  claimProvisionMs: number;
  /** A pod Running (upstream PodStart, 5 min). */
  podStartMs: number;
  /** A pod, claim or namespace gone (upstream PodDelete / NamespaceDelete). */
  deleteMs: number;
  /** One exec in a pod. */
  execMs: number;
}

export const DEFAULT_TIMEOUTS: E2eTimeouts = {
  claimProvisionMs: 300_000,
  podStartMs: 300_000,
  deleteMs: 300_000,
  execMs: 60_000,
};

export function scaleTimeouts(timeouts: E2eTimeouts, scale: number): E2eTimeouts {
  return {
    claimProvisionMs: timeouts.claimProvisionMs * scale,
    podStartMs: timeouts.podStartMs * scale,
    deleteMs: timeouts.deleteMs * scale,
    execMs: timeouts.execMs * scale,
  };
}

/** A skip reason when the driver lacks `capability` (upstream's Capabilities key). */
export function requireCapability(capability: string): (driver: E2eDriver) => string | undefined {
  return (driver) =>
    driver.capabilities[capability] === true
      ? undefined
      : `Driver ${driver.name} does not support capability ${capability}`;
}

/** The upstream-style full name focus and skip match: `External Storage [Driver: X] [Testpattern: P] suite test`. */
export function fullTestName(driverName: string, pattern: TestPattern, suite: string, test: string): string {
  return `External Storage [Driver: ${driverName}] [Testpattern: ${pattern.name}] ${suite} ${test}`;
}
