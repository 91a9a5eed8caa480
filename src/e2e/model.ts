// What a running e2e test is given besides its namespace: the bounds of its waits (upstream's
// framework timeouts, as the test driver file sets them, scaled by --timeout-scale), the size of
// its volumes (the intersection of the driver's SupportedSizeRange and the suite's, as upstream's
// CreateVolumeResource takes), and the error a test throws to skip itself once it sees the cluster
// cannot run it (upstream's e2eskipper at run time: too few nodes, no way to restart a kubelet).

import { CsikitError } from "../base/index.ts";
import { parseQuantity, quantityValue } from "../api/index.ts";
import { effectiveTimeouts, type DriverDefinition, type TimeoutKey } from "./catalogue/index.ts";

/** Upstream's TimeoutContext (ms), plus the bound of one exec in a pod. */
export type E2eTimeouts = Record<TimeoutKey, number> & { Exec: number };

const EXEC_MS = 60_000;

export function e2eTimeouts(driver: DriverDefinition, scale: number): E2eTimeouts {
  const base = effectiveTimeouts(driver);
  const scaled = Object.fromEntries(
    Object.entries(base).map(([key, ms]) => [key, Math.round(ms * scale)]),
  ) as Record<TimeoutKey, number>;
  return { ...scaled, Exec: Math.round(EXEC_MS * scale) };
}

/** A test that sees at run time that it cannot run here; its message is the skip reason. */
export class E2eSkip extends CsikitError {
  constructor(reason: string) {
    super("CSIKIT_ERR_E2E_SKIP", reason);
  }
}

/** A failed check of a test (not a setup error): its message is the test's failure. */
export class E2eCheckError extends CsikitError {
  constructor(message: string) {
    super("CSIKIT_ERR_E2E_CHECK", message);
  }
}

/**
 * The size a test's claims ask for: the larger of the driver's SupportedSizeRange.Min and the
 * suite's minimum (upstream takes the smallest size both ranges allow); an empty bound is none.
 */
export function claimSize(driver: DriverDefinition, suiteMin: string): string {
  const driverMin = driver.DriverInfo.SupportedSizeRange.Min;
  if (driverMin === "") return suiteMin === "" ? "1Mi" : suiteMin;
  if (suiteMin === "") return driverMin;
  return bytesOf(driverMin) >= bytesOf(suiteMin) ? driverMin : suiteMin;
}

/** Bytes of a quantity string ("1Gi" → 1073741824). */
export function bytesOf(quantity: string): bigint {
  return quantityValue(parseQuantity(quantity));
}
