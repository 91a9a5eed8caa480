// `csikit why`: explains where a volume's chain (claim → class → PV → scheduling → attachment →
// driver registration → stage/publish → pod, or a snapshot's) stands, and for the first link not
// done, why. collect.ts reads (GET/LIST only), diagnose.ts judges (pure), render.ts prints.
import type { KubeClient } from "../kube/index.ts";
import { claimsOfPod, collect } from "./collect.ts";
import { diagnose } from "./diagnose.ts";
import type { Diagnosis, Target } from "./model.ts";

export { collect, claimsOfPod } from "./collect.ts";
export { diagnose } from "./diagnose.ts";
export { renderJson, renderText } from "./render.ts";
export * from "./model.ts";

/**
 * Reads and diagnoses `target`. A pod with several claims is the chain of the first claim not
 * done (each claim is a chain of its own; the pod waits for all of them).
 */
export async function explain(client: KubeClient, target: Target): Promise<Diagnosis> {
  const view = await collect(client, target);
  const first = diagnose(view);
  if (target.kind !== "pod" || !first.done) return first;
  const claims = view.pod?.object ? claimsOfPod(view.pod.object) : [];
  for (const claim of claims.slice(1)) {
    const next = diagnose(await collect(client, target, claim));
    if (!next.done) return next;
  }
  return first;
}
