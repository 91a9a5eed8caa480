// Upstream's slowStartBatch as the replicaset and job loops use it for pod creates: batches of
// 1, 2, 4, … so a create that fails (quota, admission) fails once, not a thousand times. The
// first batch with a failure ends it; the creates that failed or were never tried are marked
// observed, since no watch event will ever show them, and the first failure is thrown.

import type { ControllerExpectations } from "./expectations.ts";

export async function createInSlowStartBatches(
  count: number,
  create: () => Promise<void>,
  expectations: { expectations: ControllerExpectations; key: string },
): Promise<void> {
  let remaining = count;
  for (let batch = 1; remaining > 0; batch *= 2) {
    const size = Math.min(batch, remaining);
    const results = await Promise.allSettled(Array.from({ length: size }, create));
    remaining -= size;
    const failures = results.filter((result) => result.status === "rejected");
    if (failures.length > 0) {
      for (let i = 0; i < failures.length + remaining; i++)
        expectations.expectations.creationObserved(expectations.key);
      throw failures[0]!.reason;
    }
  }
}
