// Group snapshots (groupsnapshot.storage.k8s.io/v1) through the snapshot controller, under its
// Role, with the stand-in of the upstream-behaving sidecar cutting the group: the claims a label
// selector picks → one VolumeGroupSnapshotContent → one VolumeSnapshot + content per member,
// named, owned, labelled and finalized as upstream; deleting the group removes everything.
// Needs the group snapshot CRDs that installSnapshotCrds installs from deploy/crds (skipped, with
// the reason, on a checkout without them).

import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  FINALIZERS,
  GVR,
  type VolumeGroupSnapshot,
  type VolumeGroupSnapshotContent,
  type VolumeSnapshot,
} from "../../api/index.ts";
import type { KubeObject } from "../../kube/index.ts";
import { until } from "../../../test/harness/until.ts";
import {
  DRIVER,
  boundClaim,
  getContent,
  gone,
  runController,
  setup,
  type Fixture,
} from "../../../test/harness/snapshot-controller.ts";

async function groupFixture(t: TestContext): Promise<Fixture | undefined> {
  const f = await setup(t, { groups: true });
  try {
    await f.admin.list(GVR.volumeGroupSnapshots, { namespace: "default" });
    return f;
  } catch {
    t.skip("the group snapshot CRDs are not installed by installSnapshotCrds on this checkout (deploy/crds)");
    return undefined;
  }
}

const sha = (text: string): string => createHash("sha256").update(text).digest("hex");
const getGroup = (f: Fixture, name: string) =>
  f.admin.get<VolumeGroupSnapshot>(GVR.volumeGroupSnapshots, name, { namespace: "default" });

test("group snapshot: selector → group content → one snapshot and content per member; delete removes all", async (t) => {
  const f = await groupFixture(t);
  if (f === undefined) return;
  await f.admin.create(GVR.volumeGroupSnapshotClasses, {
    apiVersion: "groupsnapshot.storage.k8s.io/v1",
    kind: "VolumeGroupSnapshotClass",
    metadata: {
      name: "group-class",
      annotations: { "groupsnapshot.storage.kubernetes.io/is-default-class": "true" },
    },
    driver: DRIVER,
    deletionPolicy: "Delete",
  } as KubeObject);
  await boundClaim(f.admin, "db-a", { labels: { app: "db" } });
  await boundClaim(f.admin, "db-b", { labels: { app: "db" } });
  await boundClaim(f.admin, "web", { labels: { app: "web" } });
  runController(t, f);
  const created = await f.admin.create<VolumeGroupSnapshot>(GVR.volumeGroupSnapshots, {
    apiVersion: "groupsnapshot.storage.k8s.io/v1",
    kind: "VolumeGroupSnapshot",
    metadata: { name: "group", namespace: "default" },
    spec: { source: { selector: { matchLabels: { app: "db" } } } },
  });
  const uid = created.metadata.uid!;
  const ready = await until(async () => {
    const group = await getGroup(f, "group");
    return group.status?.readyToUse === true ? group : undefined;
  }, "group snapshot ready");
  assert.equal(ready.spec.volumeGroupSnapshotClassName, "group-class", "the default group class");
  assert.equal(ready.status?.boundVolumeGroupSnapshotContentName, `groupsnapcontent-${uid}`);
  assert.ok(ready.metadata?.finalizers?.includes(FINALIZERS.volumeGroupSnapshotBound.key));
  const content = await f.admin.get<VolumeGroupSnapshotContent>(
    GVR.volumeGroupSnapshotContents,
    `groupsnapcontent-${uid}`,
  );
  assert.deepEqual([...(content.spec.source.volumeHandles ?? [])].sort(), ["vol-db-a", "vol-db-b"]);
  assert.ok(content.metadata?.finalizers?.includes(FINALIZERS.volumeGroupSnapshotContentBound.key));

  for (const handle of ["vol-db-a", "vol-db-b"]) {
    const name = `snapshot-${sha(uid + handle)}`;
    const member: VolumeSnapshot = await until(async (): Promise<VolumeSnapshot | undefined> => {
      const s = await f.admin.get<VolumeSnapshot>(GVR.volumeSnapshots, name, { namespace: "default" });
      return s.status?.readyToUse === true ? s : undefined;
    }, `member ${name} ready`);
    assert.equal(member.metadata?.ownerReferences?.[0]?.kind, "VolumeGroupSnapshot");
    assert.equal(member.metadata?.ownerReferences?.[0]?.apiVersion, "groupsnapshot.storage.k8s.io/v1");
    assert.equal(member.metadata?.ownerReferences?.[0]?.uid, uid);
    assert.ok(member.metadata?.finalizers?.includes(FINALIZERS.volumeSnapshotInGroup.key));
    assert.equal(member.status?.volumeGroupSnapshotName, "group");
    assert.equal(member.status?.boundVolumeSnapshotContentName, `snapcontent-${sha(uid + handle)}`);
    assert.equal(member.spec.source.persistentVolumeClaimName, handle.replace(/^vol-/, ""));
    const memberContent = await getContent(f.admin, `snapcontent-${sha(uid + handle)}`);
    assert.equal(memberContent.spec.volumeSnapshotRef.uid, member.metadata?.uid);
    assert.equal(
      memberContent.metadata?.annotations?.["groupsnapshot.storage.k8s.io/volumeGroupSnapshotHandle"],
      `groupsnap-${content.metadata?.uid ?? ""}`,
    );
  }

  await f.admin.delete(GVR.volumeGroupSnapshots, "group", { namespace: "default" });
  await until(() => gone(() => getGroup(f, "group")), "group snapshot gone", { timeoutMs: 30_000 });
  await until(
    () => gone(() => f.admin.get(GVR.volumeGroupSnapshotContents, `groupsnapcontent-${uid}`)),
    "group content gone",
  );
  await until(
    async () => (await f.admin.list(GVR.volumeSnapshots, { namespace: "default" })).items.length === 0,
    "members gone",
    {
      timeoutMs: 30_000,
    },
  );
  await until(
    async () => (await f.admin.list(GVR.volumeSnapshotContents)).items.length === 0,
    "member contents gone",
  );
  assert.equal(f.sidecar.backend.size, 0, "no backend snapshot left");
});
