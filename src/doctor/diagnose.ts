// All checks over one set of inputs: pure, so the same inputs always give the same findings,
// in a fixed order (backend, attachments, finalizers, node roots — the order fixes are applied:
// leaks first, then what blocks deletions, mounts before the loop devices under them).

import { checkAttachments } from "./check-attachments.ts";
import { checkBackend } from "./check-backend.ts";
import { checkFinalizers } from "./check-finalizers.ts";
import { checkNodeRoot } from "./check-node-root.ts";
import type { DoctorInputs, Finding } from "./types.ts";

export function diagnose(inputs: DoctorInputs): Finding[] {
  return [
    ...(inputs.backend ? checkBackend(inputs.cluster, inputs.backend) : []),
    ...checkAttachments(inputs.cluster),
    ...checkFinalizers(inputs),
    ...inputs.nodeRoots.flatMap((state) => checkNodeRoot(state, inputs.cluster)),
  ];
}
