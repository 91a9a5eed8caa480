// `csikit why` against stuck states built for real on the embedded API server: the real
// controller loops (PV binder, scheduler, attach/detach), the real provisioner, attacher and
// resizer with hostpath or a scripted driver that fails where the state needs it; objects are
// written by hand only where they are what a kubelet or the snapshot sidecars leave. Each test
// checks that the first link not done is the right one and that its explanation names the real
// cause (the component, the missing object, the driver's error).

import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import {
  GVR,
  type CSIDriver,
  type Node,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type VolumeAttachment,
  type VolumeAttributesClass,
  type VolumeSnapshot,
  type VolumeSnapshotContent,
} from "../api/index.ts";
import type { KubeClient, KubeObject } from "../kube/index.ts";
import { explain, renderText, type Diagnosis, type Link, type Target } from "./index.ts";
import {
  markPodReady,
  pv,
  pvc,
  runLoops,
  startTestServer,
  waitClaimBound,
} from "../../test/harness/controllers.ts";
import {
  CsiError,
  GrpcStatus,
  HOSTPATH,
  STUB,
  createClass,
  runProvisioner,
  startCluster,
  startHostpath,
  startStub,
  type Cluster,
} from "../../test/harness/provisioner.ts";
import { SCRIPTED, createCsiNode, runAttacher, startScripted } from "../../test/harness/attacher.ts";
import {
  STUB as RESIZE_STUB,
  boundClaim,
  runResizer,
  setRequest,
  startResizeStub,
} from "../../test/harness/resizer.ts";
import { installSnapshotCrds } from "../../test/harness/snapshots.ts";
import {
  boundClaim as snapshotSourceClaim,
  createClass as createSnapshotClass,
  createSnapshot,
  runController as runSnapshotController,
  setup as setupSnapshots,
  untilReady,
} from "../../test/harness/snapshot-controller.ts";
import { defer } from "../../test/harness/cleanup.ts";
import { until } from "../../test/harness/until.ts";

const NS = "default";

/** Short leases, so a stopped sidecar's lease expires within a test's wait. */
const FAST_LEASE = [
  "--leader-election",
  "--leader-election-namespace=default",
  "--leader-election-lease-duration=2s",
  "--leader-election-renew-deadline=1s",
  "--leader-election-retry-period=500ms",
];

/** The PV binder, the scheduler and the attach/detach controller, as kube-controller-manager runs them. */
function loops(t: TestContext, cluster: Cluster, controllers = ["*", "-garbage-collector-controller"]): void {
  const running = runLoops(cluster.client, { controllers });
  defer(t, () => running.stop());
}

function blocker(diagnosis: Diagnosis): Link {
  const link = diagnosis.links.find((l) => l.state !== "done");
  assert.ok(link, `expected a link not done:\n${renderText(diagnosis)}`);
  return link;
}

/** Waits until the first link not done is `step` in `state` and its text matches every pattern. */
async function stuckAt(
  client: KubeClient,
  target: Target,
  step: Link["step"],
  patterns: RegExp[],
  state?: Link["state"],
): Promise<{ diagnosis: Diagnosis; link: Link }> {
  let last = "";
  try {
    return await until(
      async () => {
        const diagnosis = await explain(client, target);
        last = renderText(diagnosis);
        const link = diagnosis.links.find((l) => l.state !== "done");
        if (!link || link.step !== step || (state && link.state !== state)) return undefined;
        const text = JSON.stringify(link);
        return patterns.every((pattern) => pattern.test(text)) ? { diagnosis, link } : undefined;
      },
      `why ${target.kind} ${target.name} stuck at ${step} matching ${patterns.join(", ")}`,
      { timeoutMs: 30_000, intervalMs: 100 },
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}\nlast diagnosis:\n${last}`, { cause: error });
  }
}

function claim(
  name: string,
  className: string,
  extra: Partial<NonNullable<PersistentVolumeClaim["spec"]>> = {},
) {
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name, namespace: NS },
    spec: {
      accessModes: ["ReadWriteOnce" as const],
      resources: { requests: { storage: "1Mi" } },
      storageClassName: className,
      ...extra,
    },
  } satisfies PersistentVolumeClaim;
}

function podOf(name: string, claimName: string, nodeName?: string): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: NS },
    spec: {
      containers: [{ name: "c", image: "busybox" }],
      volumes: [{ name: "data", persistentVolumeClaim: { claimName } }],
      ...(nodeName ? { nodeName } : {}),
    },
  };
}

async function createNode(
  client: KubeClient,
  name: string,
  labels: Record<string, string> = {},
): Promise<Node> {
  const node = await client.create<Node>(GVR.nodes, {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      labels: { "kubernetes.io/hostname": name, ...labels },
      // As a kubelet with --enable-controller-attach-detach (the default) marks its node.
      annotations: { "volumes.kubernetes.io/controller-managed-attach-detach": "true" },
    },
  });
  // Ready, as a kubelet reports it.
  return client.updateStatus<Node>(GVR.nodes, {
    ...node,
    status: {
      conditions: [
        { type: "Ready", status: "True", reason: "KubeletReady", message: "kubelet is posting ready status" },
      ],
    },
  });
}

/** A static PV for `driver`, bound to nothing yet (the binder binds it). */
async function staticVolume(
  client: KubeClient,
  name: string,
  driver: string,
  extra: Partial<NonNullable<PersistentVolume["spec"]>> = {},
): Promise<PersistentVolume> {
  return client.create<PersistentVolume>(GVR.persistentVolumes, {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name },
    spec: {
      capacity: { storage: "1Mi" },
      accessModes: ["ReadWriteOnce"],
      persistentVolumeReclaimPolicy: "Retain",
      storageClassName: "static",
      csi: { driver, volumeHandle: `${name}-handle` },
      ...extra,
    },
  });
}

test("class missing: the class link fails naming the StorageClass the claim asks for", async (t) => {
  const cluster = await startCluster(t);
  loops(t, cluster, ["persistentvolume-binder-controller"]);
  await cluster.client.create(GVR.persistentVolumeClaims, claim("data", "gold"));
  const { link } = await stuckAt(cluster.client, { kind: "pvc", name: "data", namespace: NS }, "class", [
    /storageclass\.storage\.k8s\.io \\"gold\\" not found/,
    /ProvisioningFailed/,
  ]);
  assert.equal(link.state, "failed");
  assert.equal(link.object, "StorageClass/gold");
});

test("WaitForFirstConsumer without a pod: provision waits for a pod, naming the binding mode and selected-node", async (t) => {
  const cluster = await startCluster(t);
  loops(t, cluster, ["persistentvolume-binder-controller"]);
  await createClass(cluster, "wffc", HOSTPATH, { volumeBindingMode: "WaitForFirstConsumer" });
  await cluster.client.create(GVR.persistentVolumeClaims, claim("data", "wffc"));
  const { link } = await stuckAt(cluster.client, { kind: "pvc", name: "data", namespace: NS }, "provision", [
    /WaitForFirstConsumer/,
    /no pod uses this claim/,
  ]);
  assert.equal(link.state, "waiting");
  assert.equal(link.responsible?.annotation, "volume.kubernetes.io/selected-node");
  assert.ok(
    link.events.some((e) => e.reason === "WaitForFirstConsumer"),
    JSON.stringify(link.events),
  );
});

test("driver down (no provisioner running): provision fails naming the external-provisioner of the driver", async (t) => {
  const cluster = await startCluster(t);
  loops(t, cluster, ["persistentvolume-binder-controller"]);
  await createClass(cluster, "sc", HOSTPATH);
  await cluster.client.create(GVR.persistentVolumeClaims, claim("data", "sc"));
  const { link } = await stuckAt(cluster.client, { kind: "pvc", name: "data", namespace: NS }, "provision", [
    /no event from the external-provisioner for hostpath\.csi\.k8s\.io/,
    /ExternalProvisioning/,
  ]);
  assert.equal(link.responsible?.annotation, "volume.kubernetes.io/storage-provisioner");
  assert.ok(
    link.details.some((d) => /CSIDriver hostpath\.csi\.k8s\.io does not exist/.test(d)),
    link.details.join("\n"),
  );
});

test("driver down (the provisioner stopped): its leader Lease is no longer renewed", async (t) => {
  const cluster = await startCluster(t);
  loops(t, cluster, ["persistentvolume-binder-controller"]);
  const driver = await startHostpath(t, cluster.dir);
  await createClass(cluster, "sc", HOSTPATH);
  const provisioner = runProvisioner(t, cluster, driver.path, FAST_LEASE);
  // It works while it runs…
  await cluster.client.create(GVR.persistentVolumeClaims, claim("first", "sc"));
  await until(
    async () => (await explain(cluster.client, { kind: "pvc", name: "first", namespace: NS })).done,
    "first claim done",
  );
  // …then it goes away, and the next claim waits for it.
  await provisioner.stop();
  await cluster.client.create(GVR.persistentVolumeClaims, claim("second", "sc"));
  const { link } = await stuckAt(
    cluster.client,
    { kind: "pvc", name: "second", namespace: NS },
    "provision",
    [
      /Lease default\/hostpath-csi-k8s-io (has no holder|held by \S+ expired .*: the provisioner is not running)/,
    ],
  );
  assert.equal(link.state, "failed");
});

test("secret missing: provision fails naming the secret and the class parameter", async (t) => {
  const cluster = await startCluster(t);
  loops(t, cluster, ["persistentvolume-binder-controller"]);
  const driver = await startHostpath(t, cluster.dir);
  await createClass(cluster, "secured", HOSTPATH, {
    parameters: {
      "csi.storage.k8s.io/provisioner-secret-name": "backend-credentials",
      "csi.storage.k8s.io/provisioner-secret-namespace": "default",
    },
  });
  runProvisioner(t, cluster, driver.path);
  await cluster.client.create(GVR.persistentVolumeClaims, claim("data", "secured"));
  const { link } = await stuckAt(cluster.client, { kind: "pvc", name: "data", namespace: NS }, "provision", [
    /secret default\/backend-credentials \(StorageClass parameter csi\.storage\.k8s\.io\/provisioner-secret-name\) does not exist/,
    /ProvisioningFailed/,
  ]);
  assert.equal(link.state, "failed");
});

test("size refused: provision fails with the driver's own error from ProvisioningFailed", async (t) => {
  const cluster = await startCluster(t);
  loops(t, cluster, ["persistentvolume-binder-controller"]);
  const stub = await startStub(t, cluster.dir);
  stub.onCreate = async (request) => {
    if (Number(request.capacityRange?.requiredBytes ?? 0) > 1024 * 1024)
      throw new CsiError(GrpcStatus.OUT_OF_RANGE, "requested size exceeds the pool's 1MiB quota");
  };
  await createClass(cluster, "small", STUB);
  runProvisioner(t, cluster, stub.server.path);
  await cluster.client.create(
    GVR.persistentVolumeClaims,
    claim("big", "small", { resources: { requests: { storage: "1Gi" } } }),
  );
  const { link } = await stuckAt(cluster.client, { kind: "pvc", name: "big", namespace: NS }, "provision", [
    /the provisioner reports: .*requested size exceeds the pool's 1MiB quota/,
  ]);
  assert.equal(link.state, "failed");
  assert.equal(link.responsible?.component, `external-provisioner for ${STUB}`);
});

test("topology unsatisfiable: the scheduler's FailedScheduling and the count of nodes the volume fits", async (t) => {
  const cluster = await startCluster(t);
  loops(t, cluster);
  await createNode(cluster.client, "node-a", { "topology.kubernetes.io/zone": "zone-a" });
  await staticVolume(cluster.client, "pv-zone-b", SCRIPTED, {
    nodeAffinity: {
      required: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: "topology.kubernetes.io/zone", operator: "In", values: ["zone-b"] }] },
        ],
      },
    },
  });
  await cluster.client.create(
    GVR.persistentVolumeClaims,
    claim("data", "static", { volumeName: "pv-zone-b" }),
  );
  await cluster.client.create(GVR.pods, podOf("app", "data"));
  const { link } = await stuckAt(cluster.client, { kind: "pod", name: "app", namespace: NS }, "schedule", [
    /FailedScheduling/,
    /node affinity/,
    /0\/1 node\(s\) match/,
  ]);
  assert.equal(link.state, "failed");
});

test("attach error: the VolumeAttachment's attachError (message and gRPC code) from the real attacher", async (t) => {
  const cluster = await startCluster(t);
  loops(t, cluster);
  const driver = await startScripted(t, cluster.dir);
  driver.onPublish = async () => {
    throw new CsiError(
      GrpcStatus.RESOURCE_EXHAUSTED,
      "node node-1 has reached its limit of 2 attached volumes",
    );
  };
  runAttacher(t, cluster, driver.path);
  await createNode(cluster.client, "node-1");
  await createCsiNode(cluster.client, "node-1", { [SCRIPTED]: "node-1" });
  await staticVolume(cluster.client, "pv-1", SCRIPTED);
  await cluster.client.create(GVR.persistentVolumeClaims, claim("data", "static", { volumeName: "pv-1" }));
  await cluster.client.create(GVR.pods, podOf("app", "data", "node-1"));
  const { link } = await stuckAt(cluster.client, { kind: "pod", name: "app", namespace: NS }, "attach", [
    /ControllerPublishVolume failed \(gRPC code 8 ResourceExhausted/,
    /reached its limit of 2 attached volumes/,
  ]);
  assert.equal(link.state, "failed");
  assert.equal(link.responsible?.finalizer, "external-attacher/scripted-attacher-csikit-io");
  // The same explanation from the attachment's side.
  const va = link.object!.replace("VolumeAttachment/", "");
  const fromVa = blocker(await explain(cluster.client, { kind: "volumeattachment", name: va }));
  assert.equal(fromVa.step, "attach");
  assert.match(fromVa.cause ?? "", /reached its limit/);
});

test("no driver registered on the node: CSINode lacks the driver", async (t) => {
  const cluster = await startCluster(t);
  loops(t, cluster, ["persistentvolume-binder-controller"]);
  await createNode(cluster.client, "node-1");
  // The kubelet's CSINode of a node where only another driver's registrar runs.
  await createCsiNode(cluster.client, "node-1", { "other.csi.example.com": "node-1" });
  await staticVolume(cluster.client, "pv-1", HOSTPATH);
  await cluster.client.create(GVR.persistentVolumeClaims, claim("data", "static", { volumeName: "pv-1" }));
  await cluster.client.create(GVR.pods, podOf("app", "data", "node-1"));
  const { link } = await stuckAt(
    cluster.client,
    { kind: "pod", name: "app", namespace: NS },
    "driver-registration",
    [
      /driver hostpath\.csi\.k8s\.io is not registered on node node-1/,
      /CSINode node-1 lists other\.csi\.example\.com/,
    ],
  );
  assert.equal(link.state, "failed");
  assert.match(link.responsible?.component ?? "", /node-driver-registrar/);
});

test("node gone: the pod is bound to a node that does not exist", async (t) => {
  const cluster = await startCluster(t);
  loops(t, cluster, ["persistentvolume-binder-controller"]);
  await staticVolume(cluster.client, "pv-1", HOSTPATH);
  await cluster.client.create(GVR.persistentVolumeClaims, claim("data", "static", { volumeName: "pv-1" }));
  await cluster.client.create(GVR.pods, podOf("app", "data", "node-gone"));
  const { link } = await stuckAt(cluster.client, { kind: "pod", name: "app", namespace: NS }, "node", [
    /node node-gone does not exist/,
  ]);
  assert.equal(link.state, "failed");
});

test("finalizer held by a dead controller: a deleted VolumeAttachment keeps external-attacher's finalizer, its Lease is no longer renewed", async (t) => {
  const cluster = await startCluster(t);
  const driver = await startScripted(t, cluster.dir);
  const attacher = runAttacher(t, cluster, driver.path, FAST_LEASE);
  await createCsiNode(cluster.client, "node-1", { [SCRIPTED]: "node-1" });
  await staticVolume(cluster.client, "pv-1", SCRIPTED);
  await cluster.client.create<VolumeAttachment>(GVR.volumeAttachments, {
    apiVersion: "storage.k8s.io/v1",
    kind: "VolumeAttachment",
    metadata: { name: "va-1" },
    spec: { attacher: SCRIPTED, nodeName: "node-1", source: { persistentVolumeName: "pv-1" } },
  });
  await until(async () => {
    const va = await cluster.client.get<VolumeAttachment>(GVR.volumeAttachments, "va-1");
    return va.status?.attached === true;
  }, "va-1 attached");
  await attacher.close();
  await cluster.client.delete(GVR.volumeAttachments, "va-1");
  const { link } = await stuckAt(cluster.client, { kind: "volumeattachment", name: "va-1" }, "deletion", [
    /external-attacher\/scripted-attacher-csikit-io/,
    /ControllerUnpublish has not completed/,
    /Lease default\/external-attacher-leader-scripted-attacher-csikit-io (has no holder|held by \S+ expired .*: the attacher is not running)/,
  ]);
  assert.equal(link.responsible?.finalizer, "external-attacher/scripted-attacher-csikit-io");
});

test("deletion held by pvc-protection: the claim is kept while a scheduled pod uses it, and the pod is named", async (t) => {
  // The API server with its admission plugins (pvc-protection adds the finalizer) and the loops.
  const server = await startTestServer();
  defer(t, () => server.stop());
  const client = server.client();
  defer(t, () => client.close());
  const running = runLoops(client, { controllers: ["*", "-garbage-collector-controller"] });
  defer(t, () => running.stop());
  await client.create(GVR.persistentVolumes, pv("v-held", { storageClassName: "held" }));
  await client.create(GVR.persistentVolumeClaims, pvc("held", { storageClassName: "held" }));
  await waitClaimBound(client, "held");
  await client.create(GVR.pods, podOf("user", "held", "node-1"));
  await client.delete(GVR.persistentVolumeClaims, "held", { namespace: NS });
  const { link } = await stuckAt(client, { kind: "pvc", name: "held", namespace: NS }, "deletion", [
    /kubernetes\.io\/pvc-protection/,
    /still used by pod\(s\) user/,
  ]);
  assert.equal(link.responsible?.finalizer, "kubernetes.io/pvc-protection");
  assert.deepEqual(link.next.slice(0, 1), ["kubectl delete pod -n default user"]);
});

test("resize infeasible: the resizer's ControllerResizeInfeasible and the driver's message", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  stub.onExpand = async () => {
    throw new CsiError(GrpcStatus.OUT_OF_RANGE, "volume cannot grow beyond 8Mi");
  };
  await createClass(cluster, "sc", RESIZE_STUB, { allowVolumeExpansion: true });
  await boundClaim(cluster, { name: "data", driver: RESIZE_STUB, handle: "vol-1" });
  runResizer(t, cluster, stub.server.path);
  await setRequest(cluster, "data", "100Mi");
  const { link } = await stuckAt(cluster.client, { kind: "pvc", name: "data", namespace: NS }, "resize", [
    /infeasible/,
    /volume cannot grow beyond 8Mi/,
  ]);
  assert.equal(link.state, "failed");
  assert.ok(link.next[0]?.includes('"storage":"1Mi"'), link.next.join("\n"));
});

test("resize refused by the class: allowVolumeExpansion is not set", async (t) => {
  // The state a class edited after the claim grew leaves (kube-apiserver's admission refuses a
  // new edit of a claim whose class does not allow expansion; the embedded server does not).
  const cluster = await startCluster(t);
  await createClass(cluster, "sc", RESIZE_STUB);
  await boundClaim(cluster, { name: "data", driver: RESIZE_STUB, handle: "vol-1" });
  await setRequest(cluster, "data", "2Mi");
  const link = blocker(await explain(cluster.client, { kind: "pvc", name: "data", namespace: NS }));
  assert.equal(link.step, "resize");
  assert.equal(link.state, "failed");
  assert.match(link.cause ?? "", /allowVolumeExpansion is not true/);
});

test("VolumeAttributesClass change infeasible: the resizer's Infeasible status and the driver's message", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  stub.onModify = async () => {
    throw new CsiError(GrpcStatus.INVALID_ARGUMENT, "iops 999999 is above the volume type's maximum");
  };
  await cluster.client.create<VolumeAttributesClass>(GVR.volumeAttributesClasses, {
    apiVersion: "storage.k8s.io/v1beta1",
    kind: "VolumeAttributesClass",
    metadata: { name: "absurd" },
    driverName: RESIZE_STUB,
    parameters: { iops: "999999" },
  });
  await boundClaim(cluster, { name: "data", driver: RESIZE_STUB, handle: "vol-1" });
  runResizer(t, cluster, stub.server.path, ["--feature-gates=VolumeAttributesClass=true"]);
  await cluster.client.patch(
    GVR.persistentVolumeClaims,
    "data",
    { spec: { volumeAttributesClassName: "absurd" } },
    { namespace: NS },
  );
  const { link } = await stuckAt(cluster.client, { kind: "pvc", name: "data", namespace: NS }, "modify", [
    /Infeasible/,
    /iops 999999 is above the volume type's maximum/,
  ]);
  assert.equal(link.state, "failed");
  assert.match(link.responsible?.component ?? "", /external-resizer/);
});

test("snapshot not ready: the content's error from the snapshotter", async (t) => {
  const cluster = await startCluster(t);
  await installSnapshotCrds(cluster.client);
  await boundClaim(cluster, { name: "data", driver: HOSTPATH, handle: "vol-1" });
  await cluster.client.create<KubeObject>(GVR.volumeSnapshotClasses, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshotClass",
    metadata: { name: "snap" },
    driver: HOSTPATH,
    deletionPolicy: "Delete",
  } as KubeObject);
  const snapshot = await cluster.client.create<VolumeSnapshot>(GVR.volumeSnapshots, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshot",
    metadata: { name: "snap-1", namespace: NS },
    spec: { source: { persistentVolumeClaimName: "data" }, volumeSnapshotClassName: "snap" },
  });
  const contentName = `snapcontent-${snapshot.metadata.uid}`;
  // As the snapshot-controller and csi-snapshotter leave them when CreateSnapshot failed.
  const content = await cluster.client.create<VolumeSnapshotContent>(GVR.volumeSnapshotContents, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshotContent",
    metadata: { name: contentName },
    spec: {
      volumeSnapshotRef: {
        kind: "VolumeSnapshot",
        namespace: NS,
        name: "snap-1",
        uid: snapshot.metadata.uid!,
      },
      deletionPolicy: "Delete",
      driver: HOSTPATH,
      volumeSnapshotClassName: "snap",
      source: { volumeHandle: "vol-1" },
    },
  });
  await cluster.client.updateStatus(GVR.volumeSnapshotContents, {
    ...content,
    status: {
      readyToUse: false,
      error: {
        time: new Date().toISOString(),
        message:
          "Failed to check and update snapshot content: rpc error: code = Internal desc = snapshot store full",
      },
    },
  });
  await cluster.client.updateStatus(GVR.volumeSnapshots, {
    ...snapshot,
    status: { boundVolumeSnapshotContentName: contentName, readyToUse: false },
  });
  const { link } = await stuckAt(
    cluster.client,
    { kind: "volumesnapshot", name: "snap-1", namespace: NS },
    "snapshot-ready",
    [/the content reports: .*snapshot store full/],
  );
  assert.equal(link.state, "failed");
  assert.match(link.responsible?.component ?? "", /external-snapshotter/);
});

test("snapshot not ready: the real snapshot-controller binds a content no csi-snapshotter serves", async (t) => {
  const f = await setupSnapshots(t, { standIn: false });
  runSnapshotController(t, f);
  await createSnapshotClass(f.admin, "snap");
  await snapshotSourceClaim(f.admin, "src");
  await createSnapshot(f.admin, "s1", { claim: "src" }, "snap");
  const { link } = await stuckAt(
    f.admin,
    { kind: "volumesnapshot", name: "s1", namespace: NS },
    "snapshot-ready",
    [/external-snapshotter \(csi-snapshotter\) for hostpath\.csi\.k8s\.io has not reported on the content/],
  );
  assert.equal(link.state, "failed");
  assert.match(link.object ?? "", /^VolumeSnapshotContent\/snapcontent-/);
});

test("snapshot ready: the real snapshot-controller and a snapshotter — every link done", async (t) => {
  const f = await setupSnapshots(t);
  runSnapshotController(t, f);
  await createSnapshotClass(f.admin, "snap", { isDefault: true });
  await snapshotSourceClaim(f.admin, "src");
  await createSnapshot(f.admin, "s1", { claim: "src" });
  await untilReady(f.admin, "s1");
  const diagnosis = await until(async () => {
    const d = await explain(f.admin, { kind: "volumesnapshot", name: "s1", namespace: NS });
    return d.done ? d : undefined;
  }, "snapshot chain done");
  assert.deepEqual(
    diagnosis.links.map((l) => l.step),
    ["snapshot-class", "snapshot-source", "snapshot-content", "snapshot-ready"],
  );
});

test("happy path: provisioned, bound, scheduled, attached and running — every link done", async (t) => {
  const cluster = await startCluster(t);
  loops(t, cluster);
  const driver = await startHostpath(t, cluster.dir, { nodeId: "node-1" });
  await cluster.client.create<CSIDriver>(GVR.csiDrivers, {
    apiVersion: "storage.k8s.io/v1",
    kind: "CSIDriver",
    metadata: { name: HOSTPATH },
    spec: { attachRequired: true },
  });
  await createClass(cluster, "sc", HOSTPATH, { volumeBindingMode: "WaitForFirstConsumer" });
  await createNode(cluster.client, "node-1", { "topology.hostpath.csi/node": "node-1" });
  await cluster.client.create(GVR.csiNodes, {
    apiVersion: "storage.k8s.io/v1",
    kind: "CSINode",
    metadata: { name: "node-1" },
    spec: { drivers: [{ name: HOSTPATH, nodeID: "node-1", topologyKeys: ["topology.hostpath.csi/node"] }] },
  } as KubeObject);
  runProvisioner(t, cluster, driver.path, ["--feature-gates=Topology=true"]);
  runAttacher(t, cluster, driver.path);
  await cluster.client.create(GVR.persistentVolumeClaims, claim("data", "sc"));
  await cluster.client.create(GVR.pods, podOf("app", "data"));
  // The node agent's part: once the volume is attached, the pod runs.
  await until(
    async () => {
      const vas = await cluster.client.list<VolumeAttachment>(GVR.volumeAttachments);
      return vas.items.some((va) => va.status?.attached);
    },
    "volume attached",
    { timeoutMs: 30_000 },
  );
  await markPodReady(cluster.client, "app");
  const diagnosis = await explain(cluster.client, { kind: "pod", name: "app", namespace: NS });
  assert.ok(diagnosis.done, renderText(diagnosis));
  assert.deepEqual(
    diagnosis.links.map((l) => l.step),
    [
      "claim",
      "class",
      "provision",
      "bind",
      "schedule",
      "node",
      "driver-registration",
      "attach",
      "mount",
      "pod",
    ],
  );
  const fromClaim = await explain(cluster.client, { kind: "pvc", name: "data", namespace: NS });
  assert.ok(fromClaim.done, renderText(fromClaim));
  const pvName = (
    await cluster.client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "data", { namespace: NS })
  ).spec?.volumeName;
  const fromVolume = await explain(cluster.client, { kind: "pv", name: pvName! });
  assert.ok(fromVolume.done, renderText(fromVolume));
});
