import assert from "node:assert/strict";
import { test } from "node:test";
import type { PersistentVolume, PersistentVolumeClaim, Pod, VolumeAttachment } from "../api/index.ts";
import { journey, nextHistory, type JourneyInput } from "./journey.ts";

const claim: PersistentVolumeClaim = {
  metadata: { name: "c", namespace: "ns", uid: "u1" },
  spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Mi" } }, volumeName: "pv1" },
  status: { phase: "Bound", capacity: { storage: "1Mi" } },
};
const pv: PersistentVolume = { metadata: { name: "pv1" }, spec: { csi: { driver: "d", volumeHandle: "h" } } };
const pod: Pod = {
  metadata: { name: "p", namespace: "ns" },
  spec: {
    nodeName: "n1",
    containers: [{ name: "a", image: "i" }],
    volumes: [{ name: "v", persistentVolumeClaim: { claimName: "c" } }],
  },
  status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
};
const va = (status: VolumeAttachment["status"]): VolumeAttachment => ({
  metadata: { name: "va" },
  spec: { attacher: "d", nodeName: "n1", source: { persistentVolumeName: "pv1" } },
  ...(status ? { status } : {}),
});
const base: JourneyInput = {
  claim,
  pv,
  attachments: [],
  pods: [],
  events: [],
  snapshots: [],
  attachRequired: true,
  history: {},
};
const state = (input: JourneyInput, step: string) => journey(input).steps.find((s) => s.step === step);

test("a published claim: provision to publish done, nothing waiting", () => {
  const row = journey({ ...base, pods: [pod], attachments: [va({ attached: true })] });
  for (const step of ["provision", "bind", "schedule", "attach", "publish"])
    assert.equal(row.steps.find((s) => s.step === step)?.state, "done", step);
  assert.equal(row.current, "");
  assert.equal(row.failed, false);
});

test("an attach error is the failed step, with its message", () => {
  const row = journey({
    ...base,
    pods: [{ ...pod, status: { phase: "Pending" } }],
    attachments: [va({ attached: false, attachError: { message: "boom" } })],
  });
  assert.equal(row.current, "attach");
  assert.equal(row.failed, true);
  assert.deepEqual(
    state({ ...base, attachments: [va({ attached: false, attachError: { message: "boom" } })] }, "attach"),
    {
      step: "attach",
      state: "failed",
      message: "boom",
    },
  );
});

test("no attach step for a driver without attachRequired; a growing claim waits in expand", () => {
  assert.equal(state({ ...base, attachRequired: false }, "attach")?.state, "skipped");
  const growing = { ...claim, spec: { ...claim.spec, resources: { requests: { storage: "2Mi" } } } };
  const row = journey({ ...base, claim: growing, pods: [pod], attachments: [va({ attached: true })] });
  assert.equal(row.current, "expand");
  assert.equal(nextHistory({}, row).expanded, true);
});

test("a pending claim without a volume waits in provision; a warning event fails it", () => {
  const { volumeName: _unused, ...spec } = claim.spec!;
  const pending: PersistentVolumeClaim = { ...claim, spec, status: { phase: "Pending" } };
  assert.equal(journey({ ...base, claim: pending, pv: undefined }).current, "provision");
  const failed = journey({
    ...base,
    claim: pending,
    pv: undefined,
    events: [
      {
        involvedObject: {},
        reason: "ProvisioningFailed",
        message: "no space",
        type: "Warning",
        source: { component: "x" },
        firstTimestamp: "",
        lastTimestamp: "",
        count: 1,
        reportingComponent: "",
        reportingInstance: "",
      },
    ],
  });
  assert.deepEqual(failed.steps[0], { step: "provision", state: "failed", message: "no space" });
});
