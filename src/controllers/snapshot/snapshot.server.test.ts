// The snapshot controller against the real embedded API server, under its own ServiceAccount
// (kube-system/snapshot-controller) and the RBAC of deploy/rbac/snapshot-controller.yaml, with a
// stand-in of the upstream-behaving csi-snapshotter sidecar (test/harness/snapshotter-stand-in.ts)
// writing content status as upstream's does. Each case asserts the end state upstream reaches:
// names, finalizers, annotations, labels, status and Events — and that nothing stays behind.

import { test } from "node:test";
import assert from "node:assert/strict";
import { FINALIZERS, GVR, type PersistentVolumeClaim } from "../../api/index.ts";
import { isNotFound } from "../../kube/index.ts";
import { forbidden, spawnComponent, usernameOf } from "../../../test/harness/rbac.ts";
import { until } from "../../../test/harness/until.ts";
import { scrape } from "../../../test/harness/https-get.ts";
import { FAST_ELECTION, leaseHolder } from "../../../test/harness/election.ts";
import {
  DRIVER,
  FAST,
  IDENTITY,
  boundClaim,
  createClass,
  createSnapshot,
  eventReasons,
  getContent,
  getSnapshot,
  gone,
  runController,
  setup,
  untilReady,
} from "../../../test/harness/snapshot-controller.ts";
import type { KubeObject } from "../../kube/index.ts";

test("dynamic snapshot, Delete: snapcontent-<uid>, finalizers, status copied, then everything removed", async (t) => {
  const f = await setup(t);
  await createClass(f.admin, "csi-snapclass", { deletionPolicy: "Delete" });
  await boundClaim(f.admin, "data");
  runController(t, f);
  const created = await createSnapshot(f.admin, "snap", { claim: "data" }, "csi-snapclass");
  const ready = await untilReady(f.admin, "snap");
  const contentName = `snapcontent-${created.metadata.uid!}`;
  assert.equal(ready.status?.boundVolumeSnapshotContentName, contentName);
  assert.equal(ready.status?.restoreSize, "1Mi");
  assert.match(ready.status?.creationTime ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  const content = await getContent(f.admin, contentName);
  assert.equal(content.spec.source.volumeHandle, "vol-data");
  assert.equal(content.spec.deletionPolicy, "Delete");
  assert.equal(content.spec.volumeSnapshotClassName, "csi-snapclass");
  assert.equal(content.spec.volumeSnapshotRef.uid, created.metadata.uid);
  assert.equal(content.spec.sourceVolumeMode, "Filesystem"); // --prevent-volume-mode-conversion defaults to true
  assert.deepEqual(content.metadata?.finalizers, [FINALIZERS.volumeSnapshotContentBound.key]);
  await until(async () => {
    const s = await getSnapshot(f.admin, "snap");
    return (
      s.metadata?.finalizers?.includes(FINALIZERS.volumeSnapshotAsSource.key) &&
      s.metadata.finalizers.includes(FINALIZERS.volumeSnapshotBound.key)
    );
  }, "as-source and bound finalizers");
  // Ready: the claim is no longer needed as a source.
  await until(async () => {
    const claim = await f.admin.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "data", {
      namespace: "default",
    });
    return !(claim.metadata?.finalizers ?? []).includes(FINALIZERS.pvcAsSource.key);
  }, "pvc-as-source-protection removed once ready");
  const reasons = await until(async () => {
    const r = await eventReasons(f.admin, "snap");
    return r.includes("SnapshotReady") ? r : undefined;
  }, "events");
  for (const reason of ["CreatingSnapshot", "SnapshotCreated", "SnapshotReady"])
    assert.ok(reasons.includes(reason), reason);

  await f.admin.delete(GVR.volumeSnapshots, "snap", { namespace: "default" });
  await until(() => gone(() => getSnapshot(f.admin, "snap")), "snapshot gone");
  await until(() => gone(() => getContent(f.admin, contentName)), "content gone");
  assert.equal(f.sidecar.backend.size, 0, "the backend snapshot was deleted");
  assert.deepEqual(
    forbidden(f.cluster.audit, usernameOf(IDENTITY)).length,
    0,
    "no 403 under the controller's Role",
  );
});

test("diagnostics: /healthz, and the operation histogram and work queues on --metrics-path", async (t) => {
  const f = await setup(t);
  await createClass(f.admin, "csi-snapclass");
  await boundClaim(f.admin, "data");
  let url = "";
  runController(t, f, ["--http-endpoint=127.0.0.1:0", "--metrics-path=/m"], {
    onHttpEndpoint: (u) => (url = u),
  });
  await until(() => url !== "", "endpoint listening");
  assert.equal((await scrape(`${url}/healthz`)).status, 200);
  await createSnapshot(f.admin, "snap", { claim: "data" }, "csi-snapclass");
  await untilReady(f.admin, "snap");
  const body = await until(async () => {
    const text = (await scrape(`${url}/m`)).body;
    return text.includes('operation_name="CreateSnapshotAndReady"') ? text : undefined;
  }, "CreateSnapshotAndReady observed");
  assert.match(
    body,
    /snapshot_controller_operation_total_seconds_count\{driver_name="hostpath.csi.k8s.io",operation_name="CreateSnapshot",snapshot_type="dynamic",operation_status="success"\} 1/,
  );
  assert.match(body, /workqueue_adds_total\{name="snapshot-controller-snapshot"\}/);
  assert.match(body, /workqueue_depth\{name="snapshot-controller-content"\}/);
  await f.admin.delete(GVR.volumeSnapshots, "snap", { namespace: "default" });
  await until(
    async () => (await scrape(`${url}/m`)).body.includes('operation_name="DeleteSnapshot"'),
    "DeleteSnapshot observed",
  );
});

test("a snapshot being restored from waits for the restore (SnapshotDeletePending), then goes", async (t) => {
  const f = await setup(t);
  await createClass(f.admin, "csi-snapclass");
  await boundClaim(f.admin, "data");
  runController(t, f);
  await createSnapshot(f.admin, "snap", { claim: "data" }, "csi-snapclass");
  await untilReady(f.admin, "snap");
  await f.admin.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name: "restored", namespace: "default" },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Mi" } },
      storageClassName: "",
      dataSource: { apiGroup: "snapshot.storage.k8s.io", kind: "VolumeSnapshot", name: "snap" },
    },
  });
  // The controller's claim cache has the restoring claim once it has handled a later claim event
  // (one watch stream, in order): a marker carrying pvc-as-source-protection, which no snapshot
  // needs, loses it.
  await f.admin.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name: "marker", namespace: "default", finalizers: [FINALIZERS.pvcAsSource.key] },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Mi" } },
      storageClassName: "",
    },
  });
  await until(async () => {
    const marker = await f.admin.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "marker", {
      namespace: "default",
    });
    return !(marker.metadata?.finalizers ?? []).includes(FINALIZERS.pvcAsSource.key);
  }, "the controller saw the marker claim");
  await f.admin.delete(GVR.volumeSnapshots, "snap", { namespace: "default" });
  await until(
    async () => (await eventReasons(f.admin, "snap")).includes("SnapshotDeletePending"),
    "deletion pending",
  );
  assert.equal(await gone(() => getSnapshot(f.admin, "snap")), false, "kept while the claim is Pending");
  const content = await getContent(
    f.admin,
    (await getSnapshot(f.admin, "snap")).status!.boundVolumeSnapshotContentName!,
  );
  assert.equal(content.metadata?.deletionTimestamp, undefined, "its content not deleted either");
  // The restore completes: the claim's own update resyncs the snapshot (no 15-minute resync needed).
  const latest = await f.admin.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "restored", {
    namespace: "default",
  });
  await f.admin.updateStatus(GVR.persistentVolumeClaims, { ...latest, status: { phase: "Bound" } });
  await until(() => gone(() => getSnapshot(f.admin, "snap")), "snapshot gone once the restore is done");
});

test("Retain: the snapshot goes, the content and backend snapshot stay, marked being-deleted", async (t) => {
  const f = await setup(t);
  await createClass(f.admin, "retain", { deletionPolicy: "Retain" });
  await boundClaim(f.admin, "data");
  runController(t, f);
  const created = await createSnapshot(f.admin, "snap", { claim: "data" }, "retain");
  await untilReady(f.admin, "snap");
  const s = await getSnapshot(f.admin, "snap");
  assert.ok(
    !s.metadata?.finalizers?.includes(FINALIZERS.volumeSnapshotBound.key),
    "no bound finalizer for Retain",
  );
  await f.admin.delete(GVR.volumeSnapshots, "snap", { namespace: "default" });
  await until(() => gone(() => getSnapshot(f.admin, "snap")), "snapshot gone");
  const content = await getContent(f.admin, `snapcontent-${created.metadata.uid!}`);
  assert.equal(
    content.metadata?.annotations?.["snapshot.storage.kubernetes.io/volumesnapshot-being-deleted"],
    "yes",
  );
  assert.equal(content.metadata?.deletionTimestamp, undefined);
  assert.equal(f.sidecar.backend.size, 1);
});

test("pre-provisioned: the content gets the snapshot's UID and class, the snapshot its status", async (t) => {
  const f = await setup(t);
  await createClass(f.admin, "csi-snapclass");
  runController(t, f);
  await f.admin.create(GVR.volumeSnapshotContents, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshotContent",
    metadata: { name: "imported" },
    spec: {
      deletionPolicy: "Delete",
      driver: DRIVER,
      source: { snapshotHandle: "backend-123" },
      volumeSnapshotRef: { name: "static", namespace: "default" },
    },
  } as KubeObject);
  f.sidecar.backend.set("backend-123", "");
  const snapshot = await createSnapshot(f.admin, "static", { content: "imported" }, "csi-snapclass");
  const ready = await untilReady(f.admin, "static");
  assert.equal(ready.status?.boundVolumeSnapshotContentName, "imported");
  const content = await getContent(f.admin, "imported");
  assert.equal(content.spec.volumeSnapshotRef.uid, snapshot.metadata.uid);
  assert.equal(content.spec.volumeSnapshotClassName, "csi-snapclass");
  await f.admin.delete(GVR.volumeSnapshots, "static", { namespace: "default" });
  await until(() => gone(() => getContent(f.admin, "imported")), "content gone");
  await until(() => gone(() => getSnapshot(f.admin, "static")), "snapshot gone");
  assert.equal(f.sidecar.backend.has("backend-123"), false);
});

test("default class: none → error, one → chosen by the source's driver, two → upstream's error", async (t) => {
  const f = await setup(t);
  await boundClaim(f.admin, "data");
  await createClass(f.admin, "other-driver-default", { isDefault: true, driver: "other.csi.k8s.io" });
  runController(t, f);
  await createSnapshot(f.admin, "none", { claim: "data" });
  await until(async () => (await getSnapshot(f.admin, "none")).status?.error?.message, "error status").then(
    (m) =>
      assert.equal(m, "Failed to set default snapshot class with error cannot find default snapshot class"),
  );
  assert.ok((await eventReasons(f.admin, "none")).includes("SetDefaultSnapshotClassFailed"));

  await createClass(f.admin, "default-a", { isDefault: true });
  await createSnapshot(f.admin, "one", { claim: "data" });
  const one = await untilReady(f.admin, "one");
  assert.equal(one.spec.volumeSnapshotClassName, "default-a");

  await createClass(f.admin, "default-b", { isDefault: true });
  // Once a snapshot naming default-b got through, the controller's class cache (one watch stream,
  // in order) holds both defaults.
  await createSnapshot(f.admin, "probe", { claim: "data" }, "default-b");
  await untilReady(f.admin, "probe");
  await createSnapshot(f.admin, "two", { claim: "data" });
  await until(async () => (await getSnapshot(f.admin, "two")).status?.error?.message, "error status").then(
    (m) =>
      assert.equal(
        m,
        "Failed to set default snapshot class with error 2 default snapshot classes were found",
      ),
  );
  assert.equal((await getSnapshot(f.admin, "two")).spec.volumeSnapshotClassName, undefined);
});

test("deletion secret annotations from the class's snapshotter-secret templates", async (t) => {
  const f = await setup(t);
  await createClass(f.admin, "with-secret", {
    parameters: {
      "csi.storage.k8s.io/snapshotter-secret-name": "snap-${volumesnapshot.name}",
      "csi.storage.k8s.io/snapshotter-secret-namespace": "${volumesnapshot.namespace}",
    },
  });
  await createClass(f.admin, "bad-secret", {
    parameters: { "csi.storage.k8s.io/snapshotter-secret-name": "only-a-name" },
  });
  await boundClaim(f.admin, "data");
  runController(t, f);
  const good = await createSnapshot(f.admin, "s1", { claim: "data" }, "with-secret");
  await untilReady(f.admin, "s1");
  const content = await getContent(f.admin, `snapcontent-${good.metadata.uid!}`);
  assert.equal(
    content.metadata?.annotations?.["snapshot.storage.kubernetes.io/deletion-secret-name"],
    "snap-s1",
  );
  assert.equal(
    content.metadata?.annotations?.["snapshot.storage.kubernetes.io/deletion-secret-namespace"],
    "default",
  );
  await createSnapshot(f.admin, "s2", { claim: "data" }, "bad-secret");
  const message = await until(async () => (await getSnapshot(f.admin, "s2")).status?.error?.message, "error");
  assert.match(
    message,
    /either name and namespace for Snapshotter secrets specified, Both must be specified/,
  );
});

test("volume mode and distributed snapshotting: sourceVolumeMode off with the flag off; managed-by names the node", async (t) => {
  const f = await setup(t);
  await createClass(f.admin, "csi-snapclass");
  await f.admin.create(GVR.nodes, {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: "node-1", labels: { "kubernetes.io/hostname": "node-1" } },
  });
  await boundClaim(f.admin, "block", { volumeMode: "Block", node: "node-1" });
  runController(t, f, ["--prevent-volume-mode-conversion=false", "--enable-distributed-snapshotting"]);
  const snapshot = await createSnapshot(f.admin, "snap", { claim: "block" }, "csi-snapclass");
  await untilReady(f.admin, "snap");
  const content = await getContent(f.admin, `snapcontent-${snapshot.metadata.uid!}`);
  assert.equal(content.spec.sourceVolumeMode, undefined);
  assert.equal(content.metadata?.labels?.["snapshot.storage.kubernetes.io/managed-by"], "node-1");
});

test("a snapshot that can never proceed does not keep a deleted claim (external-snapshotter#1305)", async (t) => {
  const f = await setup(t);
  await createClass(f.admin, "csi-snapclass");
  await boundClaim(f.admin, "data");
  f.sidecar.ready = false; // the good snapshot is cut but stays unready for now
  runController(t, f);
  await createSnapshot(f.admin, "good", { claim: "data" }, "csi-snapclass");
  await createSnapshot(f.admin, "broken", { claim: "data" }, "no-such-class");
  await until(async () => {
    const claim = await f.admin.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "data", {
      namespace: "default",
    });
    return claim.metadata?.finalizers?.includes(FINALIZERS.pvcAsSource.key);
  }, "claim protected while the snapshot is cut");
  f.sidecar.ready = true;
  await untilReady(f.admin, "good");
  await f.admin.delete(GVR.persistentVolumeClaims, "data", { namespace: "default" });
  await until(async () => {
    const claim = await f.admin
      .get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "data", { namespace: "default" })
      .catch((e: unknown) => {
        if (isNotFound(e)) return undefined;
        throw e;
      });
    return claim === undefined || !(claim.metadata?.finalizers ?? []).includes(FINALIZERS.pvcAsSource.key);
  }, "the broken snapshot does not hold the deleted claim");
});

test("kill -9 between any two writes converges: ready, then deleted with no finalizer left", async (t) => {
  const f = await setup(t);
  await createClass(f.admin, "csi-snapclass");
  await boundClaim(f.admin, "data");
  const user = usernameOf(IDENTITY);
  const isWrite = (verb: string): boolean => ["create", "update", "patch", "delete"].includes(verb);
  const writesSoFar = (): number =>
    f.cluster.audit.filter(
      (e) => e.user.username === user && isWrite(e.verb) && e.objectRef?.resource !== "events",
    ).length;
  const start = () =>
    spawnComponent(t, {
      name: "snapshot-controller",
      subcommand: "snapshot-controller",
      args: [`--kubeconfig=${f.kubeconfig}`, ...FAST],
    });
  const claimReleased = async (): Promise<boolean> => {
    const claim = await f.admin.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "data", {
      namespace: "default",
    });
    return !(claim.metadata?.finalizers ?? []).includes(FINALIZERS.pvcAsSource.key);
  };
  /** Runs a controller, SIGKILLs it right after its next write, again and again, until `goal`. */
  const crashAfterEachWrite = async (goal: () => Promise<boolean>, what: string): Promise<number> => {
    let crashes = 0;
    while (!(await goal())) {
      assert.ok(crashes < 20, `${what}: not reached after ${crashes} crashes`);
      const target = writesSoFar() + 1;
      const child = start();
      await until(async () => writesSoFar() >= target || (await goal()), `${what}: one more write`, {
        timeoutMs: 60_000,
      });
      child.child.kill("SIGKILL");
      await child.stop();
      crashes++;
    }
    return crashes;
  };
  const created = await createSnapshot(f.admin, "snap", { claim: "data" }, "csi-snapclass");
  const contentName = `snapcontent-${created.metadata.uid!}`;
  const createCrashes = await crashAfterEachWrite(async () => {
    const s = await getSnapshot(f.admin, "snap");
    return (
      s.status?.readyToUse === true &&
      (s.metadata?.finalizers ?? []).includes(FINALIZERS.volumeSnapshotBound.key) &&
      (await claimReleased())
    );
  }, "ready, bound-protected, claim released");
  await f.admin.delete(GVR.volumeSnapshots, "snap", { namespace: "default" });
  const deleteCrashes = await crashAfterEachWrite(
    async () =>
      (await gone(() => getSnapshot(f.admin, "snap"))) &&
      (await gone(() => getContent(f.admin, contentName))) &&
      (await claimReleased()),
    "snapshot and content gone, claim released",
  );
  t.diagnostic(
    `killed after each write: ${createCrashes} times while creating, ${deleteCrashes} while deleting`,
  );
  // How many writes each run gets in before its SIGKILL lands varies; at least one crash each way
  // is certain (neither goal holds at the start), and every crash leaves a different state.
  assert.ok(createCrashes >= 1 && deleteCrashes >= 1);
  assert.equal(f.sidecar.backend.size, 0, "no backend snapshot leaked");
});

test("API writes per dynamic snapshot are counted and bounded", async (t) => {
  const f = await setup(t);
  await createClass(f.admin, "csi-snapclass");
  const count = 5;
  for (let i = 0; i < count; i++) await boundClaim(f.admin, `c${i}`);
  runController(t, f);
  const user = usernameOf(IDENTITY);
  const before = f.cluster.audit.length;
  for (let i = 0; i < count; i++) await createSnapshot(f.admin, `s${i}`, { claim: `c${i}` }, "csi-snapclass");
  for (let i = 0; i < count; i++) await untilReady(f.admin, `s${i}`);
  await until(async () => {
    for (let i = 0; i < count; i++) {
      const claim = await f.admin.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, `c${i}`, {
        namespace: "default",
      });
      if ((claim.metadata?.finalizers ?? []).includes(FINALIZERS.pvcAsSource.key)) return false;
    }
    return true;
  }, "claims released");
  const writes = f.cluster.audit
    .slice(before)
    .filter(
      (e) =>
        e.user.username === user &&
        ["create", "update", "patch", "delete"].includes(e.verb) &&
        e.objectRef?.resource !== "events" &&
        e.responseStatus.code < 300,
    );
  const perSnapshot = writes.length / count;
  t.diagnostic(`successful API writes per dynamic snapshot (events excluded): ${perSnapshot}`);
  // as-source finalizer, claim finalizer, content (with its finalizer), bound status, bound
  // finalizer, ready status, claim release: 7 (upstream: 8 plus a GET of the PV and of the
  // snapshot per status write).
  assert.ok(perSnapshot <= 7, `at most 7 writes per snapshot, got ${perSnapshot}`);
});

test("leader election: a standby takes over the Lease snapshot-controller-leader and carries on", async (t) => {
  const f = await setup(t);
  await createClass(f.admin, "csi-snapclass");
  await boundClaim(f.admin, "a");
  await boundClaim(f.admin, "b");
  const args = [
    `--kubeconfig=${f.kubeconfig}`,
    ...FAST,
    ...FAST_ELECTION.map((a) => a.replace("namespace=default", "namespace=kube-system")),
  ];
  const first = spawnComponent(t, { name: "sc-1", subcommand: "snapshot-controller", args });
  const leader = await until(
    () => leaseHolder(f.admin, "snapshot-controller-leader", "kube-system"),
    "a leader",
    {
      timeoutMs: 30_000,
    },
  );
  await createSnapshot(f.admin, "a", { claim: "a" }, "csi-snapclass");
  await untilReady(f.admin, "a");
  spawnComponent(t, { name: "sc-2", subcommand: "snapshot-controller", args });
  first.child.kill("SIGKILL");
  await first.stop();
  await until(
    async () => {
      const now = await leaseHolder(f.admin, "snapshot-controller-leader", "kube-system");
      return now !== undefined && now !== leader ? now : undefined;
    },
    "a new leader",
    { timeoutMs: 30_000 },
  );
  await createSnapshot(f.admin, "b", { claim: "b" }, "csi-snapclass");
  await untilReady(f.admin, "b");
});
