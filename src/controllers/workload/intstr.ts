// intstr.GetScaledValueFromIntOrPercent and the Deployment's surge/unavailable resolution
// (deploymentutil.ResolveFenceposts): "25%" of 10 rounds up for surge and down for
// unavailable; both zero becomes unavailable 1 so a rollout can always progress.

import type { IntOrString } from "../../api/index.ts";

export function scaledValue(value: IntOrString | undefined, total: number, roundUp: boolean): number {
  if (value === undefined) return 0;
  if (typeof value === "number") return value;
  const match = /^(\d+)%$/.exec(value);
  if (match === null) {
    if (/^\d+$/.test(value)) return Number(value);
    throw new Error(`invalid value for IntOrString: invalid type: string is not a percentage`);
  }
  const scaled = (Number(match[1]) * total) / 100;
  return roundUp ? Math.ceil(scaled) : Math.floor(scaled);
}

export function resolveFenceposts(
  maxSurge: IntOrString | undefined,
  maxUnavailable: IntOrString | undefined,
  desired: number,
): { surge: number; unavailable: number } {
  const surge = scaledValue(maxSurge ?? 0, desired, true);
  let unavailable = scaledValue(maxUnavailable ?? 0, desired, false);
  if (surge === 0 && unavailable === 0) unavailable = 1;
  return { surge, unavailable };
}
