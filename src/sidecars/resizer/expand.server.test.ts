// The resize controller on the real API server with a scripted driver (failures injected) and
// with `csikit hostpath`: controller-only and node-required expansion, node-only drivers,
// infeasible sizes and recovery by lowering the request, final errors, secrets, in-use volumes.

import assert from "node:assert/strict";
import { test } from "node:test";
import { GVR } from "../../api/index.ts";
import {
  CsiError,
  GrpcStatus,
  MI,
  STUB,
  boundClaim,
  claimStatus,
  events,
  getClaim,
  getVolume,
  podUsing,
  runResizer,
  setRequest,
  startCluster,
  startResizeStub,
} from "../../../test/harness/resizer.ts";
import { until } from "../../../test/harness/until.ts";

const RESIZE_STATUS = (status: { allocatedResourceStatuses?: Record<string, string> }) =>
  status.allocatedResourceStatuses?.storage;

test("controller-only expansion: PV grown, claim capacity updated, conditions cleared, node step marked not required", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  stub.nodeExpansionRequired = false;
  await boundClaim(cluster, { name: "c1", driver: STUB, handle: "vol-1" });
  runResizer(t, cluster, stub.server.path);
  await setRequest(cluster, "c1", "3Mi");
  const status = await until(async () => {
    const s = await claimStatus(cluster, "c1");
    return s.capacity?.storage === "3Mi" ? s : undefined;
  }, "claim capacity 3Mi");
  assert.equal(RESIZE_STATUS(status), undefined);
  assert.deepEqual(status.allocatedResources, { storage: "3Mi" });
  assert.equal((status.conditions ?? []).length, 0);
  assert.equal((await getVolume(cluster, "pv-c1"))?.spec?.capacity?.storage, "3Mi");
  const claim = await getClaim(cluster, "c1");
  assert.equal(claim?.metadata.annotations?.["volume.kubernetes.io/node-expansion-not-required"], "true");
  assert.equal(stub.sizes.get("vol-1"), 3 * MI);
  const request = stub.expands[0]!;
  assert.equal(request.capacityRange?.requiredBytes, String(3 * MI));
  assert.equal(request.volumeCapability?.mount?.fsType, "ext4");
  assert.equal(request.volumeCapability?.accessMode?.mode, "SINGLE_NODE_WRITER");
  const reasons = await until(async () => {
    const list = (await events(cluster)).map((e) => e.reason);
    return list.includes("VolumeResizeSuccessful") ? list : undefined;
  }, "events");
  assert.ok(reasons.includes("Resizing"), reasons.join(","));
});

test("node expansion required: FileSystemResizePending and NodeResizePending, capacity left to the kubelet", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  await boundClaim(cluster, { name: "c2", driver: STUB, handle: "vol-2" });
  runResizer(t, cluster, stub.server.path);
  await setRequest(cluster, "c2", "2Mi");
  const status = await until(async () => {
    const s = await claimStatus(cluster, "c2");
    return RESIZE_STATUS(s) === "NodeResizePending" ? s : undefined;
  }, "NodeResizePending");
  assert.equal(status.capacity?.storage, "1Mi", "the kubelet updates capacity after NodeExpandVolume");
  // Resizing stays beside it (upstream merges with keepOldResizeConditions); the kubelet clears both.
  assert.deepEqual((status.conditions ?? []).map((c) => c.type).sort(), [
    "FileSystemResizePending",
    "Resizing",
  ]);
  assert.equal((await getVolume(cluster, "pv-c2"))?.spec?.capacity?.storage, "2Mi");
  await until(
    async () => (await events(cluster)).some((e) => e.reason === "FileSystemResizeRequired"),
    "FileSystemResizeRequired event",
  );
  assert.equal(stub.expands.length, 1, "a pending node step is not expanded again");
});

test("node-only driver: no ControllerExpandVolume, the PV takes the size and the node is asked", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir, { nodeOnly: true });
  await boundClaim(cluster, { name: "c3", driver: STUB, handle: "vol-3" });
  runResizer(t, cluster, stub.server.path);
  await setRequest(cluster, "c3", "4Mi");
  await until(
    async () => RESIZE_STATUS(await claimStatus(cluster, "c3")) === "NodeResizePending",
    "NodeResizePending",
  );
  assert.equal((await getVolume(cluster, "pv-c3"))?.spec?.capacity?.storage, "4Mi");
  assert.equal(stub.expands.length, 0);
});

test("claims of other drivers and unbound claims are left alone", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  await boundClaim(cluster, { name: "other", driver: "other.csi.example.com", handle: "x" });
  await boundClaim(cluster, { name: "mine", driver: STUB, handle: "vol-m" });
  runResizer(t, cluster, stub.server.path);
  await setRequest(cluster, "other", "2Mi");
  await setRequest(cluster, "mine", "2Mi");
  await until(
    async () => RESIZE_STATUS(await claimStatus(cluster, "mine")) === "NodeResizePending",
    "mine expanded",
  );
  assert.deepEqual(
    stub.expands.map((r) => r.volumeId),
    ["vol-m"],
  );
  assert.equal(RESIZE_STATUS(await claimStatus(cluster, "other")), undefined);
});

test("infeasible size: ControllerResizeInfeasible, then the user lowers the request and the lower size is expanded", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  stub.nodeExpansionRequired = false;
  stub.onExpand = async (request) => {
    if (Number(request.capacityRange?.requiredBytes) > 8 * MI)
      throw new CsiError(GrpcStatus.OUT_OF_RANGE, "larger than the pool");
  };
  await boundClaim(cluster, { name: "big", driver: STUB, handle: "vol-big" });
  runResizer(t, cluster, stub.server.path);
  await setRequest(cluster, "big", "100Mi");
  const failed = await until(async () => {
    const s = await claimStatus(cluster, "big");
    return RESIZE_STATUS(s) === "ControllerResizeInfeasible" ? s : undefined;
  }, "ControllerResizeInfeasible");
  assert.deepEqual(failed.allocatedResources, { storage: "100Mi" });
  const error = failed.conditions?.find((c) => c.type === "ControllerResizeError");
  assert.match(error?.message ?? "", /failed to expand pvc with larger than the pool/);
  assert.equal((await getVolume(cluster, "pv-big"))?.spec?.capacity?.storage, "1Mi");
  await until(
    async () =>
      (await events(cluster)).some(
        (e) => e.reason === "VolumeResizeFailed" && /larger than the pool/.test(e.message ?? ""),
      ),
    "VolumeResizeFailed event",
  );
  // Recovery: a smaller request than the failed one (still above status.capacity).
  await setRequest(cluster, "big", "6Mi");
  const done = await until(async () => {
    const s = await claimStatus(cluster, "big");
    return s.capacity?.storage === "6Mi" ? s : undefined;
  }, "capacity 6Mi");
  assert.equal(RESIZE_STATUS(done), undefined);
  assert.deepEqual(done.allocatedResources, { storage: "6Mi" });
  assert.equal(stub.sizes.get("vol-big"), 6 * MI);
});

test("final error (INTERNAL): ControllerResizeError, retried; a lowered request is then tried instead", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  stub.nodeExpansionRequired = false;
  stub.onExpand = async (request) => {
    if (Number(request.capacityRange?.requiredBytes) === 10 * MI)
      throw new CsiError(GrpcStatus.INTERNAL, "backend says no");
  };
  await boundClaim(cluster, { name: "f", driver: STUB, handle: "vol-f" });
  runResizer(t, cluster, stub.server.path);
  await setRequest(cluster, "f", "10Mi");
  const failed = await until(async () => {
    const s = await claimStatus(cluster, "f");
    return s.conditions?.some((c) => c.type === "ControllerResizeError") ? s : undefined;
  }, "ControllerResizeError");
  assert.equal(
    RESIZE_STATUS(failed),
    "ControllerResizeInProgress",
    "a final non-infeasible error keeps InProgress",
  );
  await until(() => stub.expands.length >= 2, "a retry");
  await setRequest(cluster, "f", "5Mi");
  await until(async () => (await claimStatus(cluster, "f")).capacity?.storage === "5Mi", "capacity 5Mi");
  assert.equal(stub.sizes.get("vol-f"), 5 * MI);
});

test("uncertain error (UNAVAILABLE): the allocated size is retried, a lowered request is not tried meanwhile", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  stub.nodeExpansionRequired = false;
  let failures = 3;
  stub.onExpand = async () => {
    if (failures-- > 0) throw new CsiError(GrpcStatus.UNAVAILABLE, "backend busy");
  };
  await boundClaim(cluster, { name: "u", driver: STUB, handle: "vol-u" });
  runResizer(t, cluster, stub.server.path);
  await setRequest(cluster, "u", "10Mi");
  await until(() => stub.expands.length >= 1, "first attempt");
  await setRequest(cluster, "u", "5Mi");
  await until(async () => (await claimStatus(cluster, "u")).capacity?.storage === "10Mi", "capacity");
  assert.ok(
    stub.expands.every((r) => r.capacityRange?.requiredBytes === String(10 * MI)),
    "only the allocated size was asked for while its outcome was uncertain",
  );
});

test("secrets from controllerExpandSecretRef reach the driver and never an event or the claim", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  stub.nodeExpansionRequired = false;
  const SECRET = "s3cr3t-expand-value";
  await cluster.client.create(GVR.secrets, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "expand-secret", namespace: "default" },
    data: { password: Buffer.from(SECRET).toString("base64") },
  });
  await boundClaim(cluster, {
    name: "sec",
    driver: STUB,
    handle: "vol-sec",
    csi: { controllerExpandSecretRef: { name: "expand-secret", namespace: "default" } },
  });
  await boundClaim(cluster, {
    name: "missing",
    driver: STUB,
    handle: "vol-missing",
    csi: { controllerExpandSecretRef: { name: "nope", namespace: "default" } },
  });
  const resizer = runResizer(t, cluster, stub.server.path);
  await setRequest(cluster, "sec", "2Mi");
  await setRequest(cluster, "missing", "2Mi");
  await until(async () => (await claimStatus(cluster, "sec")).capacity?.storage === "2Mi", "capacity 2Mi");
  assert.deepEqual(stub.expands.find((r) => r.volumeId === "vol-sec")?.secrets, { password: SECRET });
  const failed = await until(
    async () =>
      (await events(cluster)).find((e) => e.reason === "VolumeResizeFailed" && /nope/.test(e.message ?? "")),
    "missing secret reported",
  );
  assert.match(failed.message ?? "", /error getting secret nope in namespace default/);
  assert.equal(
    stub.expands.some((r) => r.volumeId === "vol-missing"),
    false,
  );
  for (const event of await events(cluster)) assert.ok(!(event.message ?? "").includes(SECRET));
  assert.ok(!resizer.logs.some((line) => line.includes(SECRET)), "no log line carries the secret");
  assert.ok(!JSON.stringify(await getClaim(cluster, "sec")).includes(SECRET));
});

test("offline-only driver: after FAILED_PRECONDITION the claim waits while a pod uses it, and expands once the pod is gone", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir, { online: false });
  stub.nodeExpansionRequired = false;
  let published = true;
  stub.onExpand = async () => {
    if (published) throw new CsiError(GrpcStatus.FAILED_PRECONDITION, "volume is published");
  };
  await boundClaim(cluster, { name: "busy", driver: STUB, handle: "vol-busy" });
  await podUsing(cluster, "user", "busy");
  runResizer(t, cluster, stub.server.path);
  await setRequest(cluster, "busy", "2Mi");
  await until(
    async () =>
      (await events(cluster)).some(
        (e) =>
          e.reason === "VolumeResizeFailed" &&
          /only supports offline expansion and volume is currently in-use/.test(e.message ?? ""),
      ),
    "in-use event",
  );
  const calls = stub.expands.length;
  assert.equal(calls, 1, "no second ControllerExpandVolume while the pod runs");
  published = false;
  await cluster.client.delete(GVR.pods, "user", { namespace: "default" });
  await until(async () => (await claimStatus(cluster, "busy")).capacity?.storage === "2Mi", "capacity 2Mi");
  assert.equal(stub.expands.length, 2);
});

test("ControllerExpandVolume past --timeout (DeadlineExceeded) is uncertain: no VolumeResizeSuccessful, same size retried (external-resizer#474)", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  stub.nodeExpansionRequired = false;
  // The driver works longer than the resizer waits, until the test lets it answer in time.
  let slow = true;
  stub.onExpand = async () => {
    if (slow) await new Promise((resolve) => setTimeout(resolve, 600));
  };
  await boundClaim(cluster, { name: "late", driver: STUB, handle: "vol-late" });
  runResizer(t, cluster, stub.server.path, ["--timeout=200ms"]);
  await setRequest(cluster, "late", "4Mi");
  await until(
    async () =>
      (await events(cluster)).filter(
        (e) => e.reason === "VolumeResizeFailed" && /DeadlineExceeded|deadline/i.test(e.message ?? ""),
      ).length >= 1 && stub.expands.length >= 2,
    "timed-out calls retried",
  );
  // While the outcome is unknown: nothing reported done, the intent kept, the PV untouched, and
  // a lowered request is not tried (the driver may still be growing to 4Mi).
  await setRequest(cluster, "late", "3Mi");
  await until(() => stub.expands.length >= 4, "more retries");
  const status = await claimStatus(cluster, "late");
  assert.equal(RESIZE_STATUS(status), "ControllerResizeInProgress");
  assert.deepEqual(status.allocatedResources, { storage: "4Mi" });
  assert.equal(status.capacity?.storage, "1Mi");
  assert.equal((await getVolume(cluster, "pv-late"))?.spec?.capacity?.storage, "1Mi");
  assert.ok(!(await events(cluster)).some((e) => e.reason === "VolumeResizeSuccessful"));
  assert.ok(stub.expands.every((r) => r.capacityRange?.requiredBytes === String(4 * MI)));
  slow = false;
  await until(async () => (await claimStatus(cluster, "late")).capacity?.storage === "4Mi", "capacity 4Mi");
  await until(
    async () => (await events(cluster)).some((e) => e.reason === "VolumeResizeSuccessful"),
    "VolumeResizeSuccessful once the driver answered",
  );
});
