// Data sources end to end: clone with `csikit hostpath` (and, with a scripted driver, the
// cloning-protection finalizer held on the source while the clone is in flight), restore from a
// VolumeSnapshot once the upstream snapshot CRDs are installed (the test plays the snapshot
// controller: snapshot made in the driver, VolumeSnapshot/VolumeSnapshotContent written ready),
// --prevent-volume-mode-conversion, the cross-namespace gate, and clone-rule errors.

import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { GVR, type PersistentVolumeClaim } from "../../api/index.ts";
import { CsiClient } from "../../csi/index.ts";
import type { KubeObject } from "../../kube/index.ts";
import {
  HOSTPATH,
  STUB,
  bind,
  createClaim,
  createClass,
  events,
  getClaim,
  runProvisioner,
  startCluster,
  startHostpath,
  startStub,
  untilCancelled,
  waitForVolume,
  type Cluster,
} from "../../../test/harness/provisioner.ts";
import { until } from "../../../test/harness/until.ts";
import { installSnapshotCrds, writeReadySnapshot } from "../../../test/harness/snapshots.ts";

const CLONING = "provisioner.storage.kubernetes.io/cloning-protection";
const SNAPSHOT_SOURCE = "provisioner.storage.kubernetes.io/volumesnapshot-as-source-protection";

async function provisionAndBind(
  cluster: Cluster,
  name: string,
  driver: string,
  spec = {},
): Promise<PersistentVolumeClaim> {
  const claim = await createClaim(cluster, name, driver, spec);
  const pv = await waitForVolume(cluster, claim);
  await bind(cluster, claim, pv);
  return (await getClaim(cluster, name))!;
}

async function failure(cluster: Cluster, claim: string): Promise<string> {
  const event = await until(
    async () =>
      (await events(cluster)).find(
        (e) => e.reason === "ProvisioningFailed" && e.involvedObject.name === claim,
      ),
    `ProvisioningFailed for ${claim}`,
  );
  return event.message ?? "";
}

test("clone with hostpath: the new volume is made from the source's volume", async (t) => {
  const cluster = await startCluster(t);
  const driver = await startHostpath(t, cluster.dir);
  await createClass(cluster, "sc", HOSTPATH);
  await createClass(cluster, "other", HOSTPATH);
  runProvisioner(t, cluster, driver.path, ["--feature-gates=Topology=false"]);
  const source = await provisionAndBind(cluster, "src", HOSTPATH, {
    resources: { requests: { storage: "2Mi" } },
  });
  const clone = await createClaim(cluster, "copy", HOSTPATH, {
    resources: { requests: { storage: "2Mi" } },
    dataSource: { kind: "PersistentVolumeClaim", name: "src" },
  });
  const pv = await waitForVolume(cluster, clone);
  assert.notEqual(pv.spec?.csi?.volumeHandle, undefined);
  assert.notEqual(pv.spec?.csi?.volumeHandle, source.spec?.volumeName);
  await until(
    async () => !(await getClaim(cluster, "src"))?.metadata?.finalizers?.includes(CLONING),
    "cloning protection released",
  );
  // Clone rules: smaller request, another class.
  await createClaim(cluster, "small", HOSTPATH, {
    dataSource: { kind: "PersistentVolumeClaim", name: "src" },
  });
  assert.match(await failure(cluster, "small"), /must be greater than or equal in size/);
  await createClaim(cluster, "elsewhere", HOSTPATH, {
    storageClassName: "other",
    resources: { requests: { storage: "2Mi" } },
    dataSource: { kind: "PersistentVolumeClaim", name: "src" },
  });
  assert.match(await failure(cluster, "elsewhere"), /same storage class/);
});

test("cloning protection holds the source while the clone is in flight", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await createClass(cluster, "sc", STUB);
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  stub.onCreate = async (request, context) => {
    if (request.volumeContentSource) await Promise.race([released, untilCancelled(context)]);
  };
  runProvisioner(t, cluster, stub.server.path, ["--timeout=60s"]);
  await provisionAndBind(cluster, "src", STUB);
  const clone = await createClaim(cluster, "copy", STUB, {
    dataSource: { kind: "PersistentVolumeClaim", name: "src" },
  });
  await until(() => stub.creates.some((c) => c.volumeContentSource), "clone CreateVolume in flight");
  assert.ok((await getClaim(cluster, "src"))?.metadata?.finalizers?.includes(CLONING));
  assert.equal(
    stub.creates.at(-1)?.volumeContentSource?.volume?.volumeId,
    `stub-pvc-${(await getClaim(cluster, "src"))?.metadata?.uid}`,
  );
  release();
  await waitForVolume(cluster, clone);
  await until(
    async () => !(await getClaim(cluster, "src"))?.metadata?.finalizers?.includes(CLONING),
    "finalizer removed",
  );
});

/** Takes a snapshot of `volumeId` in the driver, then writes its API objects. */
async function readySnapshot(
  t: TestContext,
  cluster: Cluster,
  socket: string,
  volumeId: string,
  options: { name: string; sourceVolumeMode?: "Filesystem" | "Block"; allowModeChange?: boolean },
): Promise<void> {
  const csi = CsiClient.connect(socket);
  t.after(() => csi.close());
  const { snapshot } = await csi.controller.createSnapshot({
    sourceVolumeId: volumeId,
    name: `snapshot-${options.name}`,
  });
  await writeReadySnapshot(cluster.client, {
    ...options,
    driver: HOSTPATH,
    handle: snapshot!.snapshotId,
    sizeBytes: Number(snapshot!.sizeBytes),
  });
}

async function snapshotFinalizers(cluster: Cluster, name: string): Promise<string[]> {
  const snapshot = await cluster.client.get<KubeObject>(GVR.volumeSnapshots, name, { namespace: "default" });
  return snapshot.metadata?.finalizers ?? [];
}

test("restore from a VolumeSnapshot with hostpath; volume-mode conversion refused unless allowed", async (t) => {
  const cluster = await startCluster(t);
  const driver = await startHostpath(t, cluster.dir);
  await installSnapshotCrds(cluster.client);
  await createClass(cluster, "sc", HOSTPATH);
  runProvisioner(t, cluster, driver.path, ["--feature-gates=Topology=false"]);
  const source = await provisionAndBind(cluster, "src", HOSTPATH);
  const sourcePv = await waitForVolume(cluster, source);
  await readySnapshot(t, cluster, driver.path, sourcePv.spec!.csi!.volumeHandle, { name: "snap" });
  const restored = await createClaim(cluster, "restored", HOSTPATH, {
    dataSource: { apiGroup: "snapshot.storage.k8s.io", kind: "VolumeSnapshot", name: "snap" },
  });
  const pv = await waitForVolume(cluster, restored);
  assert.notEqual(pv.spec?.csi?.volumeHandle, sourcePv.spec?.csi?.volumeHandle);
  // Block from a Filesystem snapshot: refused without the content's annotation.
  await createClaim(cluster, "as-block", HOSTPATH, {
    volumeMode: "Block",
    dataSource: { apiGroup: "snapshot.storage.k8s.io", kind: "VolumeSnapshot", name: "snap" },
  });
  assert.match(
    await failure(cluster, "as-block"),
    /modifies the mode of the source volume but does not have permission/,
  );
  // A snapshot that does not exist.
  await createClaim(cluster, "nosnap", HOSTPATH, {
    dataSource: { apiGroup: "snapshot.storage.k8s.io", kind: "VolumeSnapshot", name: "missing" },
  });
  assert.match(await failure(cluster, "nosnap"), /error getting snapshot missing/);
});

test("cross-namespace data source needs its gate", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await createClass(cluster, "sc", STUB);
  runProvisioner(t, cluster, stub.server.path);
  await createClaim(cluster, "x", STUB, {
    dataSourceRef: { kind: "PersistentVolumeClaim", name: "src", namespace: "elsewhere" },
  });
  assert.match(await failure(cluster, "x"), /CrossNamespaceVolumeDataSource feature gate is not enabled/);
});

test("restore holds the provisioner's finalizer on the snapshot while CreateVolume runs; the sweep clears orphans", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await installSnapshotCrds(cluster.client);
  await createClass(cluster, "sc", STUB);
  await createClass(cluster, "other", "someone-else.example.com");
  const snapshot = { driver: STUB, sizeBytes: 1 << 20 };
  await writeReadySnapshot(cluster.client, { ...snapshot, name: "snap", handle: "h-snap" });
  // Left behind by a crashed provisioner: no claim restores from it any more.
  await writeReadySnapshot(cluster.client, {
    ...snapshot,
    name: "orphan",
    handle: "h-orphan",
    finalizers: [SNAPSHOT_SOURCE],
  });
  // Still the source of a Pending claim (of another provisioner): kept.
  await writeReadySnapshot(cluster.client, {
    ...snapshot,
    name: "held",
    handle: "h-held",
    finalizers: [SNAPSHOT_SOURCE],
  });
  await createClaim(cluster, "waiting", "someone-else.example.com", {
    storageClassName: "other",
    dataSource: { apiGroup: "snapshot.storage.k8s.io", kind: "VolumeSnapshot", name: "held" },
  });
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  stub.onCreate = async (request, context) => {
    if (request.volumeContentSource) await Promise.race([released, untilCancelled(context)]);
  };
  runProvisioner(t, cluster, stub.server.path, ["--timeout=60s", "--snapshot-orphan-sweep-interval=1h"]);
  // The sweep runs once at start: the orphan loses the finalizer in the same pass that keeps "held".
  await until(
    async () => !(await snapshotFinalizers(cluster, "orphan")).includes(SNAPSHOT_SOURCE),
    "orphaned finalizer swept",
  );
  assert.ok((await snapshotFinalizers(cluster, "held")).includes(SNAPSHOT_SOURCE));

  const restored = await createClaim(cluster, "restored", STUB, {
    dataSource: { apiGroup: "snapshot.storage.k8s.io", kind: "VolumeSnapshot", name: "snap" },
  });
  await until(() => stub.creates.some((c) => c.volumeContentSource), "restore CreateVolume in flight");
  assert.equal(stub.creates.at(-1)?.volumeContentSource?.snapshot?.snapshotId, "h-snap");
  assert.ok((await snapshotFinalizers(cluster, "snap")).includes(SNAPSHOT_SOURCE));
  release();
  await waitForVolume(cluster, restored);
  await until(
    async () => !(await snapshotFinalizers(cluster, "snap")).includes(SNAPSHOT_SOURCE),
    "snapshot finalizer released",
  );
});
