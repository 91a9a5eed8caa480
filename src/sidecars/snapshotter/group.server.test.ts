// Group snapshots through the CSI GroupController against a scripted driver (real gRPC) and the
// upstream-behaving stand-in snapshot-controller: the CSI name (--groupsnapshot-name-prefix /
// --groupsnapshot-name-uuid-length), the class's parameters with the group --extra-create-metadata
// keys, the group secret; the status with volumeSnapshotInfoList; the leak guard — a group
// deleted while CreateVolumeGroupSnapshot answers UNAVAILABLE (the driver may still be cutting)
// keeps its content until a retry learns the group, which is then deleted in the backend.

import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import {
  GVR,
  type Secret,
  type VolumeGroupSnapshot,
  type VolumeGroupSnapshotContent,
} from "../../api/index.ts";
import { serveCsi, type CreateVolumeGroupSnapshotRequest } from "../../csi/index.ts";
import { defer } from "../../../test/harness/cleanup.ts";
import {
  CsiError,
  GrpcStatus,
  NS,
  SCRIPTED,
  createBoundClaim,
  createGroupSnapshotClass,
  getOrUndefined,
  runSnapshotter,
  startCluster,
  startSnapshotControllerStandIn,
} from "../../../test/harness/snapshotter.ts";
import { installSnapshotCrds } from "../../../test/harness/snapshots.ts";
import { until } from "../../../test/harness/until.ts";

const GUARD = "groupsnapshot.storage.kubernetes.io/volumegroupsnapshot-being-created";
const STEP = { timeoutMs: 30_000 };

test("group snapshot: name, parameters, secret, volumeSnapshotInfoList; deleted during an UNAVAILABLE create, nothing leaks", async (t) => {
  const cluster = await startCluster(t);
  const { client } = cluster;
  await installSnapshotCrds(client);
  const groups = new Map<string, { name: string; members: string[] }>();
  const creates: CreateVolumeGroupSnapshotRequest[] = [];
  const deletes: { groupSnapshotId: string; snapshotIds: string[]; secrets: Record<string, string> }[] = [];
  let unavailable = false;
  const server = await serveCsi({
    endpoint: join(cluster.dir, "group.sock"),
    shutdownGraceMs: 100,
    identity: {
      probe: async () => ({ ready: { value: true } }),
      getPluginInfo: async () => ({ name: SCRIPTED, vendorVersion: "1" }),
      getPluginCapabilities: async () => ({
        capabilities: [
          { service: { type: "CONTROLLER_SERVICE" } },
          { service: { type: "GROUP_CONTROLLER_SERVICE" } },
        ],
      }),
    },
    controller: {
      controllerGetCapabilities: async () => ({
        capabilities: [{ rpc: { type: "CREATE_DELETE_SNAPSHOT" } }],
      }),
    },
    groupController: {
      groupControllerGetCapabilities: async () => ({
        capabilities: [{ rpc: { type: "CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT" } }],
      }),
      createVolumeGroupSnapshot: async (request) => {
        creates.push(request);
        const id = `group-${request.name}`;
        const members = request.sourceVolumeIds.map((volume) => `${id}-${volume}`);
        // The backend cuts the group whatever it answers: UNAVAILABLE may hide a success.
        groups.set(id, { name: request.name, members });
        if (unavailable) throw new CsiError(GrpcStatus.UNAVAILABLE, "connection lost");
        return {
          groupSnapshot: {
            groupSnapshotId: id,
            creationTime: { seconds: 1_700_000_000, nanos: 0 },
            readyToUse: true,
            snapshots: request.sourceVolumeIds.map((volume) => ({
              snapshotId: `${id}-${volume}`,
              sourceVolumeId: volume,
              sizeBytes: 2097152,
              readyToUse: true,
              groupSnapshotId: id,
              creationTime: { seconds: 1_700_000_000, nanos: 0 },
            })),
          },
        };
      },
      deleteVolumeGroupSnapshot: async (request) => {
        deletes.push({
          groupSnapshotId: request.groupSnapshotId,
          snapshotIds: request.snapshotIds,
          secrets: request.secrets,
        });
        groups.delete(request.groupSnapshotId);
        return {};
      },
    },
  });
  defer(t, () => server.close());
  await client.create<Secret>(GVR.secrets, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "group-creds", namespace: NS },
    stringData: { token: "group-secret" },
  });
  await createGroupSnapshotClass(client, "group", {
    driver: SCRIPTED,
    parameters: {
      consistency: "crash",
      "csi.storage.k8s.io/group-snapshotter-secret-name": "group-creds",
      "csi.storage.k8s.io/group-snapshotter-secret-namespace": "${volumegroupsnapshot.namespace}",
    },
  });
  await createBoundClaim(client, "db", { driver: SCRIPTED, volumeHandle: "vol-db", labels: { app: "db" } });
  await createBoundClaim(client, "wal", { driver: SCRIPTED, volumeHandle: "vol-wal", labels: { app: "db" } });
  startSnapshotControllerStandIn(t, client, { groups: true });
  runSnapshotter(t, cluster, server.path, [
    "--groupsnapshot-name-prefix=cg",
    "--groupsnapshot-name-uuid-length=10",
    "--extra-create-metadata",
  ]);
  const createGroup = (name: string) =>
    client.create<VolumeGroupSnapshot>(GVR.volumeGroupSnapshots, {
      apiVersion: "groupsnapshot.storage.k8s.io/v1",
      kind: "VolumeGroupSnapshot",
      metadata: { name, namespace: NS },
      spec: { source: { selector: { matchLabels: { app: "db" } } }, volumeGroupSnapshotClassName: "group" },
    });
  const contentName = (vgs: VolumeGroupSnapshot) => `groupsnapcontent-${vgs.metadata.uid}`;
  const content = (name: string) =>
    getOrUndefined(() => client.get<VolumeGroupSnapshotContent>(GVR.volumeGroupSnapshotContents, name));

  const first = await createGroup("backup-1");
  const ready = await until(
    async () => {
      const found = await content(contentName(first));
      return found?.status?.readyToUse && found.metadata.annotations?.[GUARD] === undefined
        ? found
        : undefined;
    },
    "backup-1's group content ready",
    STEP,
  );
  const request = creates[0]!;
  assert.equal(request.name, `cg-${first.metadata.uid!.replaceAll("-", "").slice(0, 10)}`);
  assert.deepEqual([...request.sourceVolumeIds].sort(), ["vol-db", "vol-wal"]);
  assert.deepEqual(request.parameters, {
    consistency: "crash",
    "csi.storage.k8s.io/volumegroupsnapshot/name": "backup-1",
    "csi.storage.k8s.io/volumegroupsnapshot/namespace": NS,
    "csi.storage.k8s.io/volumegroupsnapshotcontent/name": contentName(first),
  });
  assert.deepEqual(request.secrets, { token: "group-secret" });
  const status = ready.status!;
  assert.equal(status.volumeGroupSnapshotHandle, `group-${request.name}`);
  assert.equal(status.creationTime, "2023-11-14T22:13:20Z");
  assert.deepEqual(
    [...(status.volumeSnapshotInfoList ?? [])].sort((a, b) => (a.volumeHandle! < b.volumeHandle! ? -1 : 1)),
    ["vol-db", "vol-wal"].map((volume) => ({
      volumeHandle: volume,
      snapshotHandle: `group-${request.name}-${volume}`,
      readyToUse: true,
      restoreSize: 2097152,
      creationTime: 1_700_000_000_000_000_000,
    })),
  );

  // Deleted: DeleteVolumeGroupSnapshot with the member IDs and the group secret.
  await client.delete(GVR.volumeGroupSnapshots, "backup-1", { namespace: NS });
  await until(async () => !(await content(contentName(first))), "backup-1's content gone", STEP);
  assert.deepEqual(deletes[0]?.groupSnapshotId, `group-${request.name}`);
  assert.deepEqual(
    [...deletes[0].snapshotIds].sort(),
    status.volumeSnapshotInfoList!.map((i) => i.snapshotHandle).sort(),
  );
  assert.deepEqual(deletes[0].secrets, { token: "group-secret" });
  assert.equal(groups.size, 0);

  // The leak guard: the create answers UNAVAILABLE (the backend did cut it) and the group is
  // deleted meanwhile; the content waits for a retry that learns the group, then deletes it.
  unavailable = true;
  const second = await createGroup("backup-2");
  const failing = await until(
    async () => {
      const found = await content(contentName(second));
      return found?.status?.error ? found : undefined;
    },
    "backup-2's create failed",
    STEP,
  );
  assert.equal(failing.metadata.annotations?.[GUARD], "yes", "UNAVAILABLE: the guard stays");
  await client.delete(GVR.volumeGroupSnapshots, "backup-2", { namespace: NS });
  await until(
    async () => (await content(contentName(second)))?.metadata.deletionTimestamp,
    "deletion asked",
    STEP,
  );
  assert.equal(groups.size, 1, "the backend holds the group the failed call cut");
  const creates2 = creates.length;
  await until(() => creates.length > creates2, "retried while being deleted", STEP);
  assert.ok(await content(contentName(second)), "the guard keeps the content");
  unavailable = false;
  await until(async () => !(await content(contentName(second))), "backup-2's content gone", STEP);
  assert.equal(groups.size, 0, "the group cut by the failed call was deleted: nothing leaks");
});
