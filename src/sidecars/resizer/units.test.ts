// Pure parts of the resizer, table-tested: the expansion plan (expandAndRecover's decision),
// error classification, condition merging, the flag list against upstream v1.13.2's, the
// slow-retry set; and createMergePatch (src/kube), which the resizer's status writes use.

import assert from "node:assert/strict";
import { test } from "node:test";
import { FakeClock } from "../../base/index.ts";
import { CsiError, GrpcStatus } from "../../csi/index.ts";
import { createMergePatch } from "../../kube/index.ts";
import { mergeResizeConditions } from "./conditions.ts";
import { isFinalError, isInUseError, isInfeasibleError } from "./errors.ts";
import { planExpansion, type PlanInput } from "./expand-plan.ts";
import { resizerFlags } from "../../../test/harness/resizer.ts";
import { RESIZER_FLAGS, resizerOptionsFromFlags } from "./index.ts";
import { SlowSet } from "./slow-set.ts";

const base: PlanInput = {
  requested: "10Gi",
  volume: "1Gi",
  allocated: undefined,
  status: "",
  finalError: false,
  controlPlane: true,
  fsResizePending: false,
};

test("planExpansion follows expandAndRecover, case by case", () => {
  const cases: [string, Partial<PlanInput>, string | false][] = [
    ["fresh request", {}, "10Gi"],
    [
      "PV small, NodeResizeInfeasible: the allocated size",
      { status: "NodeResizeInfeasible", allocated: "5Gi" },
      "5Gi",
    ],
    [
      "PV small, NodeResizePending at the PV size: wait for the node",
      { status: "NodeResizePending", allocated: "1Gi" },
      false,
    ],
    [
      "PV small, NodeResizeInProgress below allocated: allocated",
      { status: "NodeResizeInProgress", allocated: "5Gi" },
      "5Gi",
    ],
    [
      "PV small, ControllerResizeInProgress, uncertain: allocated",
      { status: "ControllerResizeInProgress", allocated: "20Gi" },
      "20Gi",
    ],
    [
      "PV small, ControllerResizeInProgress after a final error: the request",
      { status: "ControllerResizeInProgress", allocated: "20Gi", finalError: true },
      "10Gi",
    ],
    [
      "PV small, ControllerResizeInfeasible: the (lowered) request",
      { status: "ControllerResizeInfeasible", allocated: "20Gi" },
      "10Gi",
    ],
    ["PV grown, node pending: spurious update", { volume: "10Gi", status: "NodeResizePending" }, false],
    [
      "PV grown, node in progress: spurious update",
      { volume: "10Gi", status: "NodeResizeInProgress" },
      false,
    ],
    [
      "PV grown, node infeasible, controller driver: allocated",
      { volume: "10Gi", status: "NodeResizeInfeasible", allocated: "8Gi" },
      "8Gi",
    ],
    [
      "PV grown, node infeasible, node-only driver: request",
      { volume: "10Gi", status: "NodeResizeInfeasible", allocated: "8Gi", controlPlane: false },
      "10Gi",
    ],
    [
      "PV grown, expanded but not recorded: allocated",
      { volume: "10Gi", status: "ControllerResizeInProgress", allocated: "10Gi" },
      "10Gi",
    ],
    ["PV grown, no status but allocated", { volume: "10Gi", allocated: "10Gi" }, "10Gi"],
    [
      "PV grown, old API server with FileSystemResizePending",
      { volume: "10Gi", fsResizePending: true },
      false,
    ],
    ["PV grown, old API server", { volume: "10Gi" }, "10Gi"],
  ];
  for (const [name, input, expected] of cases) {
    const plan = planExpansion({ ...base, ...input });
    if (expected === false) assert.equal(plan.expand, false, name);
    else assert.deepEqual(plan, { expand: true, size: expected }, name);
  }
});

test("error classes: final, infeasible, in use", () => {
  const table: [number | undefined, boolean, boolean, boolean][] = [
    [GrpcStatus.INVALID_ARGUMENT, true, true, false],
    [GrpcStatus.OUT_OF_RANGE, true, true, false],
    [GrpcStatus.NOT_FOUND, true, true, false],
    [GrpcStatus.INTERNAL, true, false, false],
    [GrpcStatus.FAILED_PRECONDITION, true, false, true],
    [GrpcStatus.UNAVAILABLE, false, false, false],
    [GrpcStatus.DEADLINE_EXCEEDED, false, false, false],
    [GrpcStatus.CANCELLED, false, false, false],
    [GrpcStatus.ABORTED, false, false, false],
    [GrpcStatus.RESOURCE_EXHAUSTED, false, false, false],
    [undefined, false, false, false],
  ];
  for (const [code, final, infeasible, inUse] of table) {
    const error = code === undefined ? new Error("not gRPC") : new CsiError(code, "x");
    assert.equal(isFinalError(error), final, `final ${code}`);
    assert.equal(isInfeasibleError(error), infeasible, `infeasible ${code}`);
    assert.equal(isInUseError(error), inUse, `in use ${code}`);
  }
});

test("mergeResizeConditions keeps other conditions, replaces by type, drops old resize ones unless asked", () => {
  const other = { type: "Custom", status: "True" };
  const resizing = { type: "Resizing", status: "True", message: "old" };
  const pending = { type: "FileSystemResizePending", status: "True" };
  assert.deepEqual(mergeResizeConditions([other, resizing], [pending], false), [other, pending]);
  assert.deepEqual(mergeResizeConditions([other, resizing], [pending], true), [other, resizing, pending]);
  const fresh = { type: "Resizing", status: "True", message: "new" };
  assert.deepEqual(mergeResizeConditions([resizing, other], [fresh], true), [fresh, other]);
  assert.deepEqual(mergeResizeConditions(undefined, [], false), []);
});

test("createMergePatch: removed keys null, nested diffs, arrays replaced, nothing for equal values", () => {
  assert.deepEqual(
    createMergePatch(
      { a: 1, b: { c: 1, d: 2 }, list: [1, 2], same: { x: 1 }, gone: "y" },
      { a: 2, b: { c: 1 }, list: [1], same: { x: 1 }, added: { z: true } },
    ),
    { gone: null, a: 2, b: { d: null }, list: [1], added: { z: true } },
  );
  assert.deepEqual(createMergePatch(undefined, { a: 1 }), { a: 1 });
});

test("the flag list is external-resizer v2.2.1's (v1.13.2's and csi-lib-utils' additions), with its defaults", () => {
  const upstream = [
    "automaxprocs",
    "csi-address",
    "extra-modify-metadata",
    "feature-gates",
    "handle-volume-inuse-error",
    "http-endpoint",
    "kube-api-burst",
    "kube-api-qps",
    "kubeconfig",
    "leader-election",
    "leader-election-labels",
    "leader-election-lease-duration",
    "leader-election-namespace",
    "leader-election-renew-deadline",
    "leader-election-retry-period",
    "log-flush-frequency",
    "log-json-info-buffer-size",
    "log-json-split-stream",
    "log-text-info-buffer-size",
    "log-text-split-stream",
    "logging-format",
    "master",
    "metrics-address",
    "metrics-path",
    "resync-period",
    "retry-interval-max",
    "retry-interval-start",
    "timeout",
    "vmodule",
    "workers",
  ];
  // -v and -version come with every csikit command (LOGGING_FLAGS, --version).
  assert.deepEqual(Object.keys(RESIZER_FLAGS).sort(), upstream.sort());
  const options = resizerOptionsFromFlags(resizerFlags([]));
  assert.equal(options.timeoutMs, 10_000);
  assert.equal(options.workers, 10);
  assert.equal(options.resyncPeriodMs, 600_000);
  assert.equal(options.handleVolumeInUseError, true);
  assert.equal(options.csiAddress, "/run/csi/socket");
  // v2.2.1's gates: VolumeAttributesClass GA (v2.0), RecoverVolumeExpansionFailure GA and
  // AnnotateFsResize beta, on by default (v2.2.0); each may still be turned off.
  assert.deepEqual(options.features, {
    recoverVolumeExpansionFailure: true,
    volumeAttributesClass: true,
    annotateFsResize: true,
  });
  const off = resizerOptionsFromFlags(
    resizerFlags(["--feature-gates=AnnotateFsResize=false,VolumeAttributesClass=false"]),
  );
  assert.deepEqual(off.features, {
    recoverVolumeExpansionFailure: true,
    volumeAttributesClass: false,
    annotateFsResize: false,
  });
  assert.throws(
    () => resizerOptionsFromFlags(resizerFlags(["--feature-gates=Nope=true"])),
    /unrecognized feature gate: Nope/,
  );
  assert.throws(
    () => resizerOptionsFromFlags(resizerFlags(["--workers=0"])),
    /flag -workers must be at least 1/,
  );
  const set = resizerOptionsFromFlags(
    resizerFlags(["--automaxprocs", "--leader-election-labels=app:resizer"]),
  );
  assert.deepEqual(set.leaderElection.labels, { app: "resizer" });
});

test("SlowSet holds a key for the delay, then lets it go", async () => {
  const clock = new FakeClock(0);
  const slow = new SlowSet(clock, 1000);
  slow.add("a");
  assert.equal(slow.contains("a"), true);
  assert.equal(slow.remainingMs("a"), 1000);
  await clock.advance(400);
  slow.add("a");
  assert.equal(slow.remainingMs("a"), 600, "re-adding does not restart the wait");
  await clock.advance(600);
  assert.equal(slow.contains("a"), false);
  assert.equal(slow.remainingMs("a"), 0);
});
