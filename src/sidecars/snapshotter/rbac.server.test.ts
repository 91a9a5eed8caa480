// End to end under RBAC, as `csikit up` runs the snapshot stack: the real snapshot-controller
// under its ServiceAccount (kube-system/snapshot-controller), `csikit snapshotter` under its own
// (default/csi-snapshotter) and the Roles of deploy/rbac/, csikit's hostpath driver over gRPC.
// A snapshot and a group snapshot of two claims are cut, ready, then deleted with nothing left
// in the backend; no request of the sidecar is refused (403).

import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import {
  GVR,
  type VolumeGroupSnapshot,
  type VolumeGroupSnapshotContent,
  type VolumeSnapshotContent,
} from "../../api/index.ts";
import { connect } from "../../../test/harness/csi.ts";
import { forbidden, usernameOf } from "../../../test/harness/rbac.ts";
import {
  FAST,
  IDENTITY as CONTROLLER_IDENTITY,
  createClass,
  createSnapshot,
  gone,
  untilReady,
} from "../../../test/harness/snapshot-controller.ts";
import { startRbacCluster } from "../../../test/harness/rbac.ts";
import { installSnapshotCrds } from "../../../test/harness/snapshots.ts";
import {
  HOSTPATH,
  NS,
  createBoundClaim,
  createGroupSnapshotClass,
  runSnapshotter,
  startHostpath,
} from "../../../test/harness/snapshotter.ts";
import { until } from "../../../test/harness/until.ts";
import { defer } from "../../../test/harness/cleanup.ts";
import { Flags, LOGGING_FLAGS, parseFlags } from "../../base/index.ts";
import {
  SNAPSHOT_CONTROLLER_FLAGS,
  snapshotControllerOptionsFromFlags,
  startSnapshotController,
} from "../../controllers/index.ts";

const IDENTITY = { kind: "serviceAccount", namespace: "default", name: "csi-snapshotter" } as const;
const STEP = { timeoutMs: 60_000 };
const MiB = 1024 * 1024;

/** The real snapshot-controller in-process from its flags, under its own kubeconfig. */
function runSnapshotController(t: TestContext, kubeconfig: string): void {
  const flags = new Flags(
    parseFlags({ ...LOGGING_FLAGS, ...SNAPSHOT_CONTROLLER_FLAGS }, [`--kubeconfig=${kubeconfig}`, ...FAST]),
  );
  const controller = new AbortController();
  const done = startSnapshotController(snapshotControllerOptionsFromFlags(flags), controller.signal);
  defer(t, async () => {
    controller.abort();
    await done;
  });
}

test("under its own Role with the real snapshot-controller: snapshot and group snapshot cut, ready, deleted, nothing leaked", async (t) => {
  const cluster = await startRbacCluster(t);
  const admin = cluster.admin;
  await installSnapshotCrds(admin);
  const hostpath = await startHostpath(t, cluster.dir);
  const csi = connect(t, hostpath.path);
  // Two volumes in the backend, their PVs and bound claims (the PV controller's part).
  for (const name of ["db", "logs"]) {
    await csi.controller.createVolume({
      name: `vol-${name}`,
      capacityRange: { requiredBytes: String(MiB) },
      volumeCapabilities: [{ mount: {}, accessMode: { mode: "SINGLE_NODE_WRITER" } }],
    });
  }
  const [dbHandle, logsHandle] = (await csi.controller.listVolumes({})).entries.map(
    (e) => e.volume!.volumeId,
  );
  await createBoundClaim(admin, "db", { driver: HOSTPATH, volumeHandle: dbHandle!, labels: { app: "shop" } });
  await createBoundClaim(admin, "logs", {
    driver: HOSTPATH,
    volumeHandle: logsHandle!,
    labels: { app: "shop" },
  });
  await createClass(admin, "hostpath-snap");
  await createGroupSnapshotClass(admin, "hostpath-group", { driver: HOSTPATH });
  runSnapshotController(t, await cluster.componentKubeconfig("snapshot-controller", CONTROLLER_IDENTITY));
  const sidecarConfig = await cluster.componentKubeconfig("snapshotter", IDENTITY);
  const sidecar = runSnapshotter(t, { kubeconfig: sidecarConfig }, hostpath.path, [
    "--leader-election",
    "--leader-election-namespace=default",
  ]);

  // A single snapshot.
  await createSnapshot(admin, "snap-db", { claim: "db" }, "hostpath-snap");
  const ready = await untilReady(admin, "snap-db").catch((error: unknown) => {
    t.diagnostic(sidecar.logs.slice(-20).join("\n"));
    throw error;
  });
  const content = await admin.get<VolumeSnapshotContent>(
    GVR.volumeSnapshotContents,
    ready.status!.boundVolumeSnapshotContentName!,
  );
  const handle = content.status!.snapshotHandle!;
  assert.equal((await csi.controller.listSnapshots({ snapshotId: handle })).entries.length, 1);

  // A group snapshot of both claims.
  await admin.create<VolumeGroupSnapshot>(GVR.volumeGroupSnapshots, {
    apiVersion: "groupsnapshot.storage.k8s.io/v1",
    kind: "VolumeGroupSnapshot",
    metadata: { name: "shop", namespace: NS },
    spec: {
      source: { selector: { matchLabels: { app: "shop" } } },
      volumeGroupSnapshotClassName: "hostpath-group",
    },
  });
  const group = await until(
    async () => {
      const found = await admin.get<VolumeGroupSnapshot>(GVR.volumeGroupSnapshots, "shop", { namespace: NS });
      return found.status?.readyToUse ? found : undefined;
    },
    "group snapshot ready",
    STEP,
  );
  const groupContent = await admin.get<VolumeGroupSnapshotContent>(
    GVR.volumeGroupSnapshotContents,
    group.status!.boundVolumeGroupSnapshotContentName!,
  );
  const members = groupContent.status?.volumeSnapshotInfoList ?? [];
  assert.deepEqual(members.map((m) => m.volumeHandle).sort(), [dbHandle, logsHandle].sort());
  for (const member of members) {
    assert.equal(member.readyToUse, true);
    assert.equal(member.restoreSize, MiB);
  }
  assert.match(groupContent.status?.volumeGroupSnapshotHandle ?? "", /^group-[0-9a-f]{32}$/);
  assert.equal(
    (await csi.controller.listSnapshots({})).entries.length,
    3,
    "one single and two group members",
  );

  // Delete everything: no content and no backend snapshot left.
  await admin.delete(GVR.volumeSnapshots, "snap-db", { namespace: NS });
  await admin.delete(GVR.volumeGroupSnapshots, "shop", { namespace: NS });
  await until(
    async () =>
      (await admin.list(GVR.volumeSnapshotContents)).items.length === 0 &&
      (await admin.list(GVR.volumeGroupSnapshotContents)).items.length === 0 &&
      (await gone(() => admin.get(GVR.volumeGroupSnapshots, "shop", { namespace: NS }))),
    "every content deleted",
    STEP,
  );
  assert.equal((await csi.controller.listSnapshots({})).entries.length, 0, "no backend snapshot left");
  assert.deepEqual(
    forbidden(cluster.audit, usernameOf(IDENTITY)).map(
      (e) => `${e.verb} ${e.objectRef?.resource ?? e.requestURI}`,
    ),
    [],
  );
});
