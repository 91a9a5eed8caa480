// What the resizer runs for the driver's capabilities (external-resizer v2.1.0, #545): a driver
// with MODIFY_VOLUME but no expansion at all still gets the modify controller — and a claim's
// larger request is left to no one, as upstream, which runs no resize controller then; a driver
// with neither is refused at start-up.

import assert from "node:assert/strict";
import { test } from "node:test";
import { GVR, type VolumeAttributesClass } from "../../api/index.ts";
import {
  STUB,
  boundClaim,
  claimStatus,
  events,
  runResizer,
  setRequest,
  startCluster,
  startResizeStub,
} from "../../../test/harness/resizer.ts";
import { until } from "../../../test/harness/until.ts";

test("MODIFY_VOLUME without EXPAND_VOLUME: the resizer starts, modifies, and leaves expansion alone", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir, { noExpansion: true });
  await cluster.client.create<VolumeAttributesClass>(GVR.volumeAttributesClasses, {
    apiVersion: "storage.k8s.io/v1beta1",
    kind: "VolumeAttributesClass",
    metadata: { name: "gold" },
    driverName: STUB,
    parameters: { iops: "3000" },
  });
  await boundClaim(cluster, { name: "mo", driver: STUB, handle: "vol-mo" });
  // No --feature-gates: VolumeAttributesClass is GA and on by default in v2.
  const resizer = runResizer(t, cluster, stub.server.path);
  await setRequest(cluster, "mo", "2Mi");
  await cluster.client.patch(
    GVR.persistentVolumeClaims,
    "mo",
    { spec: { volumeAttributesClassName: "gold" } },
    { namespace: "default" },
  );
  await until(
    async () => (await claimStatus(cluster, "mo")).currentVolumeAttributesClassName === "gold",
    "class applied",
  );
  assert.deepEqual(stub.modifies[0]?.mutableParameters, { iops: "3000" });
  // The modification's completion comes after the request was raised: had a resize controller
  // run, it would have acted on the claim by now (the claim went through the informer).
  const status = await claimStatus(cluster, "mo");
  assert.equal(status.capacity?.storage, "1Mi");
  assert.equal(status.allocatedResources, undefined);
  assert.equal(status.allocatedResourceStatuses, undefined);
  assert.equal(stub.expands.length, 0);
  assert.ok(!(await events(cluster)).some((e) => e.reason === "Resizing"));
  assert.ok(resizer.logs.some((line) => /no resize controller/.test(line)));
});

test("a driver with neither expansion nor MODIFY_VOLUME is refused at start-up", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir, { noExpansion: true, noModify: true });
  const resizer = runResizer(t, cluster, stub.server.path);
  await assert.rejects(resizer.done, /neither supports controller resize nor node resize nor modify volume/);
});
