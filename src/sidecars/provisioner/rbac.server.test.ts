// The provisioner under its own ServiceAccount and the Roles of deploy/rbac/, as `csikit up` and
// a real cluster run it: restore from a VolumeSnapshot holds the snapshot with the provisioner's
// finalizer (patch on volumesnapshots is granted); with upstream's older Role, which grants no
// write on snapshots, the restore still provisions (upstream v6.2 made that RBAC optional); and a
// call the Role forbids leaves a ProvisioningFailed event on the claim that names the call. The
// orphan sweep (v6.3, --snapshot-orphan-sweep-interval) runs at start and every interval under
// the same Role, and not at all with 0.

import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { GVR } from "../../api/index.ts";
import type { KubeObject } from "../../kube/index.ts";
import { RBAC_DIR, readManifests, type Manifest } from "../../cluster/index.ts";
import {
  STUB,
  createClaim,
  createClass,
  events,
  runProvisioner,
  startStub,
  untilCancelled,
  waitForVolume,
  type Cluster,
} from "../../../test/harness/provisioner.ts";
import { describeEvent, forbidden, startRbacCluster, type RbacCluster } from "../../../test/harness/rbac.ts";
import { installSnapshotCrds, writeReadySnapshot } from "../../../test/harness/snapshots.ts";
import { until } from "../../../test/harness/until.ts";

const SNAPSHOT_SOURCE = "provisioner.storage.kubernetes.io/volumesnapshot-as-source-protection";
const PROVISIONER_USER = "system:serviceaccount:default:csi-provisioner";

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
}

/** deploy/rbac/ with `edit` applied to every rule of every role (rules it returns undefined for are dropped). */
async function editedRbac(edit: (rule: Rule) => Rule | undefined): Promise<Manifest[]> {
  return (await readManifests(RBAC_DIR)).map((manifest) => {
    if (manifest.kind !== "ClusterRole" && manifest.kind !== "Role") return manifest;
    const rules = (manifest.rules as Rule[]).map(edit).filter((rule) => rule !== undefined);
    return { ...manifest, rules };
  });
}

/** The provisioner's cluster: RBAC on, the provisioner as csi-provisioner, a scripted driver. */
async function provisionerUnderRole(
  t: TestContext,
  manifests?: Manifest[],
): Promise<{ rbac: RbacCluster; cluster: Cluster; stub: Awaited<ReturnType<typeof startStub>> }> {
  const rbac = await startRbacCluster(t, { admission: [], ...(manifests ? { manifests } : {}) });
  const cluster: Cluster = {
    server: rbac.server,
    faults: rbac.faults,
    kubeconfig: await rbac.serviceAccountKubeconfig("default", "csi-provisioner"),
    client: rbac.admin,
    dir: rbac.dir,
  };
  const stub = await startStub(t, rbac.dir);
  await installSnapshotCrds(rbac.admin);
  await createClass(cluster, "sc", STUB);
  await writeReadySnapshot(rbac.admin, { name: "snap", driver: STUB, handle: "h-snap", sizeBytes: 1 << 20 });
  return { rbac, cluster, stub };
}

async function snapshotFinalizers(cluster: Cluster): Promise<string[]> {
  const snapshot = await cluster.client.get<KubeObject>(GVR.volumeSnapshots, "snap", {
    namespace: "default",
  });
  return snapshot.metadata?.finalizers ?? [];
}

const FROM_SNAPSHOT = {
  dataSource: { apiGroup: "snapshot.storage.k8s.io", kind: "VolumeSnapshot", name: "snap" },
};

test("restore under deploy/rbac: the snapshot is held by the provisioner's finalizer, nothing is forbidden", async (t) => {
  const { rbac, cluster, stub } = await provisionerUnderRole(t);
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  stub.onCreate = async (_request, context) => {
    await Promise.race([released, untilCancelled(context)]);
  };
  runProvisioner(t, cluster, stub.server.path, ["--timeout=60s"]);
  const claim = await createClaim(cluster, "restored", STUB, FROM_SNAPSHOT);
  await until(() => stub.creates.length > 0, "restore CreateVolume in flight");
  assert.ok(
    (await snapshotFinalizers(cluster)).includes(SNAPSHOT_SOURCE),
    "finalizer held during CreateVolume",
  );
  release();
  await waitForVolume(cluster, claim);
  await until(
    async () => !(await snapshotFinalizers(cluster)).includes(SNAPSHOT_SOURCE),
    "finalizer released",
  );
  assert.deepEqual(forbidden(rbac.audit, PROVISIONER_USER).map(describeEvent), []);
});

test("restore under upstream's Role without snapshot writes: provisioned anyway, unprotected", async (t) => {
  const { rbac, cluster, stub } = await provisionerUnderRole(
    t,
    await editedRbac((rule) =>
      rule.resources?.includes("volumesnapshots") ? { ...rule, verbs: ["get", "list"] } : rule,
    ),
  );
  runProvisioner(t, cluster, stub.server.path);
  const claim = await createClaim(cluster, "restored", STUB, FROM_SNAPSHOT);
  await waitForVolume(cluster, claim);
  assert.equal(stub.creates.at(-1)?.volumeContentSource?.snapshot?.snapshotId, "h-snap");
  assert.deepEqual(await snapshotFinalizers(cluster), []);
  // The one refusal is the optional finalizer's patch.
  const refused = forbidden(rbac.audit, PROVISIONER_USER);
  assert.ok(refused.length > 0);
  assert.ok(refused.every((e) => e.verb === "patch" && e.objectRef?.resource === "volumesnapshots"));
});

test("a call the Role forbids leaves a ProvisioningFailed event naming it", async (t) => {
  // Without csikit's claim-patch grant the in-flight mark (a JSON patch of the claim) is refused.
  const { cluster, stub } = await provisionerUnderRole(
    t,
    (await readManifests(RBAC_DIR)).filter(
      (m) => !m.metadata.name.startsWith("csikit-provisioner-claim-patch"),
    ),
  );
  runProvisioner(t, cluster, stub.server.path);
  await createClaim(cluster, "plain", STUB);
  const event = await until(
    async () =>
      (await events(cluster)).find(
        (e) => e.reason === "ProvisioningFailed" && e.involvedObject.name === "plain",
      ),
    "ProvisioningFailed event",
  );
  assert.equal(event.type, "Warning");
  assert.match(
    event.message ?? "",
    /csi-provisioner.* cannot patch resource "persistentvolumeclaims"/,
    "the event names who was refused which call",
  );
  assert.equal(stub.creates.length, 0, "no CreateVolume without the durable mark");
});

/** The provisioner's finalizer on snapshot `name`, left behind (no claim restores from it). */
async function writeOrphan(rbac: RbacCluster, name: string): Promise<void> {
  await writeReadySnapshot(rbac.admin, {
    name,
    driver: STUB,
    handle: `h-${name}`,
    sizeBytes: 1 << 20,
    finalizers: [SNAPSHOT_SOURCE],
  });
}

async function finalizersOf(cluster: Cluster, name: string): Promise<string[]> {
  const snapshot = await cluster.client.get<KubeObject>(GVR.volumeSnapshots, name, { namespace: "default" });
  return snapshot.metadata?.finalizers ?? [];
}

test("orphan sweep under deploy/rbac: at start and again every --snapshot-orphan-sweep-interval", async (t) => {
  const { rbac, cluster, stub } = await provisionerUnderRole(t);
  await writeOrphan(rbac, "orphan-1");
  runProvisioner(t, cluster, stub.server.path, ["--snapshot-orphan-sweep-interval=1s"]);
  await until(
    async () => !(await finalizersOf(cluster, "orphan-1")).includes(SNAPSHOT_SOURCE),
    "orphan-1 swept at start",
  );
  // Left behind after the first sweep: the next one, an interval later, takes it.
  await writeOrphan(rbac, "orphan-2");
  await until(
    async () => !(await finalizersOf(cluster, "orphan-2")).includes(SNAPSHOT_SOURCE),
    "orphan-2 swept by a later sweep",
  );
  assert.deepEqual(forbidden(rbac.audit, PROVISIONER_USER).map(describeEvent), []);
});

test("--snapshot-orphan-sweep-interval=0: no sweep; the finalizer stays", async (t) => {
  const { rbac, cluster, stub } = await provisionerUnderRole(t);
  await writeOrphan(rbac, "orphan");
  runProvisioner(t, cluster, stub.server.path, ["--snapshot-orphan-sweep-interval=0"]);
  // The provisioner is up and its claim cache synced: a plain claim gets its volume.
  await waitForVolume(cluster, await createClaim(cluster, "plain", STUB));
  assert.deepEqual(await finalizersOf(cluster, "orphan"), [SNAPSHOT_SOURCE]);
  const swept = rbac.audit.filter(
    (e) =>
      e.user.username === PROVISIONER_USER &&
      e.verb === "list" &&
      e.objectRef?.resource === "volumesnapshots",
  );
  assert.deepEqual(swept.map(describeEvent), [], "no sweep lists the snapshots");
});
