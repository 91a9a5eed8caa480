// RBAC proves the manifests: every controller-side component runs as `csikit up` runs it (its
// own process, `up`'s command line from src/cluster/components.ts, its identity, the Roles of
// deploy/rbac/) while a scenario suite drives its API paths: provisioning (immediate and
// WaitForFirstConsumer, the scheduler's pick), clone, restore from a VolumeSnapshot, resize,
// VolumeAttributesClass modify, attach and an attach error, detach, delete, a StatefulSet and a
// generic ephemeral volume (their claims created by the controllers), leader election
// (on, as deploy/ runs the sidecars), capacity tracking (on, as a deployment may run it) and
// events; and a snapshot and a group snapshot cut and deleted by the snapshotter (their contents
// written as the snapshot-controller writes them; a classless one fails with an Event). The
// API server's audit events say what each identity asked for:
//   1. no request of any component is answered 403 (a missing permission fails here, not on a
//      user's cluster);
//   2. least privilege: every (verb, group, resource) a component's Roles grant is used by it
//      during the suite, or listed in UNEXERCISED with the reason it is granted anyway.
// Not run here: the node agents (they need a mount namespace; their RBAC is the Node
// authorizer's, tested with it), node-deployment and migration (a second provisioner setup
// each); this test plays the node agents' part (Node, CSINode) as the admin.

import assert from "node:assert/strict";
import { mkdir, readFile } from "node:fs/promises";
import { test } from "node:test";
import {
  GVR,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type VolumeAttachment,
} from "../../src/api/index.ts";
import { CsiClient } from "../../src/csi/index.ts";
import {
  ClusterLayout,
  RBAC_DIR,
  nodeSpecs,
  planComponents,
  readManifests,
  type Manifest,
} from "../../src/cluster/index.ts";
import type { KubeClient, KubeObject } from "../../src/kube/index.ts";
import {
  describeEvent,
  forbidden,
  spawnComponent,
  startRbacCluster,
  usernameOf,
  type ComponentIdentity,
  type RunningComponent,
} from "../harness/rbac.ts";
import { freePort } from "../../src/cluster/ports.ts";
import { installSnapshotCrds, writeReadySnapshot } from "../harness/snapshots.ts";
import { persistentVolume, pod as nodePod } from "../harness/node.ts";
import { scrape } from "../harness/https-get.ts";
import { until } from "../harness/until.ts";

const DRIVER = "hostpath.csi.k8s.io";
const TOPOLOGY_KEY = "topology.hostpath.csi/node";
const NS = "default";
const STEP = { timeoutMs: 90_000 };
/**
 * Paths `up` does not turn on yet, on as a deployment may run them: capacity tracking (owned by
 * no pod here: ownerref level -1). A flag `up` already passes is not given twice.
 */
const EXTRA_ARGS: Readonly<Record<string, readonly string[]>> = {
  provisioner: ["--enable-capacity", "--capacity-ownerref-level=-1", "--capacity-poll-interval=2s"],
};
/** Components the suite runs (drivers and node-level components aside). */

const RUN = new Set(["controllers", "provisioner", "attacher", "resizer", "snapshotter"]);

/**
 * Rules granted but not exercised by the suite, each with why it stays. A rule listed here that
 * the suite does exercise is fine; a granted rule neither exercised nor listed fails the test.
 */
const LEASES_UPSTREAM =
  "upstream's leader-election Role (client-go's lease lock); csikit's elector only gets, creates and updates";
const INFORMER_GET = "upstream's rule (its listers may fall back to a get); csikit reads it from an informer";
const EVENT_REPEAT =
  "event recorder: patches the count of a repeated event (whether one repeats here depends on timing: a retry under load repeats one)";
const EVENT_UPSTREAM =
  "upstream's events rule, kept so its image runs under the same Role; csikit's recorder creates and patches";
const CAPACITY =
  "capacity tracking (on here through EXTRA_ARGS): the verbs a short run does not reach (an object patched, updated or deleted when capacity, a class or a segment changes)";
const VAC_GATE =
  "VolumeAttributesClass: read for a claim that names a class at creation (provisioner) or by name when a class change names one (resizer); none such here";
const KCM_PARITY =
  "csikit-controllers.yaml is shaped like kube-controller-manager's and kube-scheduler's bootstrap roles; no csikit path in this suite uses it";
const WORKLOAD_LOOPS =
  "the deployment loop creates ReplicaSets; this storage suite runs a StatefulSet and an ephemeral volume, no Deployment (src/controllers/deployment/*.server.test.ts runs it under this identity)";
const UNEXERCISED: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  provisioner: {
    "update /persistentvolumeclaims":
      "upstream updates claims; csikit patches them (csi-provisioner-csikit.yaml)",
    "update snapshot.storage.k8s.io/volumesnapshots":
      "upstream v6.2 edits the source-protection finalizer with update; csikit patches",
    "watch snapshot.storage.k8s.io/volumesnapshots":
      "upstream v6.2's snapshot informer (orphan sweep); csikit lists",
    "list snapshot.storage.k8s.io/volumesnapshotcontents":
      "upstream's rule; csikit gets the one content a snapshot names",
    "get /nodes": INFORMER_GET,
    "get storage.k8s.io/csinodes": INFORMER_GET,
    "get storage.k8s.io/storageclasses": INFORMER_GET,
    "get storage.k8s.io/volumeattachments": INFORMER_GET,
    "list /events": EVENT_UPSTREAM,
    "watch /events": EVENT_UPSTREAM,
    "update /events": EVENT_UPSTREAM,
    "patch /events": EVENT_REPEAT,
    "list coordination.k8s.io/leases": LEASES_UPSTREAM,
    "watch coordination.k8s.io/leases": LEASES_UPSTREAM,
    "delete coordination.k8s.io/leases": LEASES_UPSTREAM,
    "get storage.k8s.io/volumeattributesclasses": VAC_GATE,
    "list storage.k8s.io/volumeattributesclasses": VAC_GATE,
    "watch storage.k8s.io/volumeattributesclasses": VAC_GATE,
    "get storage.k8s.io/csistoragecapacities": CAPACITY,
    "update storage.k8s.io/csistoragecapacities": CAPACITY,
    "patch storage.k8s.io/csistoragecapacities": CAPACITY,
    "delete storage.k8s.io/csistoragecapacities": CAPACITY,
    "get /pods":
      "capacity tracking's owner walk (--capacity-ownerref-level >= 0: the Pod, then its ReplicaSet); off here (-1)",
    "get apps/replicasets":
      "capacity tracking's owner walk (--capacity-ownerref-level >= 0: the Pod, then its ReplicaSet); off here (-1)",
  },
  attacher: {
    "patch /events": EVENT_REPEAT,
    "get /persistentvolumes": INFORMER_GET,
    "get storage.k8s.io/csinodes": INFORMER_GET,
    "get storage.k8s.io/volumeattachments": INFORMER_GET,
    "list coordination.k8s.io/leases": LEASES_UPSTREAM,
    "watch coordination.k8s.io/leases": LEASES_UPSTREAM,
    "delete coordination.k8s.io/leases": LEASES_UPSTREAM,
  },
  resizer: {
    "list /events": EVENT_UPSTREAM,
    "watch /events": EVENT_UPSTREAM,
    "update /events": EVENT_UPSTREAM,
    "patch /events": EVENT_REPEAT,
    "list coordination.k8s.io/leases": LEASES_UPSTREAM,
    "watch coordination.k8s.io/leases": LEASES_UPSTREAM,
    "delete coordination.k8s.io/leases": LEASES_UPSTREAM,
    "get storage.k8s.io/volumeattributesclasses": VAC_GATE,
  },
  snapshotter: {
    "create snapshot.storage.k8s.io/volumesnapshotcontents":
      "upstream's rule; the sidecar never creates a content (the snapshot-controller does)",
    "update snapshot.storage.k8s.io/volumesnapshotcontents": "upstream's rule; csikit patches contents",
    "update snapshot.storage.k8s.io/volumesnapshotcontents/status":
      "upstream's rule; csikit patches the status",
    "update groupsnapshot.storage.k8s.io/volumegroupsnapshotcontents":
      "upstream's rule; csikit patches group contents",
    "update groupsnapshot.storage.k8s.io/volumegroupsnapshotcontents/status":
      "upstream's rule; csikit patches the status",
    "get snapshot.storage.k8s.io/volumesnapshotclasses": INFORMER_GET,
    "get groupsnapshot.storage.k8s.io/volumegroupsnapshotclasses": INFORMER_GET,
    "list /events": EVENT_UPSTREAM,
    "watch /events": EVENT_UPSTREAM,
    "update /events": EVENT_UPSTREAM,
    "patch /events": EVENT_REPEAT,
    "list coordination.k8s.io/leases": LEASES_UPSTREAM,
    "watch coordination.k8s.io/leases": LEASES_UPSTREAM,
    "delete coordination.k8s.io/leases": LEASES_UPSTREAM,
  },
  controllers: Object.fromEntries(
    [
      "create /bindings",
      "create /persistentvolumes",
      "delete /persistentvolumes",
      "get /nodes",
      "get /persistentvolumes",
      "get storage.k8s.io/csidrivers",
      "get storage.k8s.io/csinodes",
      "get storage.k8s.io/csistoragecapacities",
      "get storage.k8s.io/storageclasses",
      "get storage.k8s.io/volumeattachments",
      "patch /persistentvolumeclaims/status",
      "patch /persistentvolumes/status",
      "update /pods/status",
      "update /nodes/status",
      "update /events",
      "create events.k8s.io/events",
      "patch events.k8s.io/events",
      "update events.k8s.io/events",
      "get */*",
      "list */*",
      "watch */*",
      "patch */*",
      "update */*",
      "delete */*",
    ]
      .map((grant) => [grant, KCM_PARITY])
      .concat([["create apps/replicasets", WORKLOAD_LOOPS]]),
  ),
};

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
}

/** `verb group/resource` of every rule the identity's bindings grant (resourceNames ignored). */
function grantsOf(manifests: readonly Manifest[], identity: ComponentIdentity): Set<string> {
  const roles = new Map<string, Rule[]>();
  for (const m of manifests)
    if (m.kind === "ClusterRole" || m.kind === "Role")
      roles.set(`${m.kind}/${m.metadata.namespace ?? ""}/${m.metadata.name}`, (m.rules as Rule[]) ?? []);
  const subjectMatches = (subject: Record<string, string>): boolean =>
    identity.kind === "serviceAccount"
      ? subject.kind === "ServiceAccount" &&
        subject.name === identity.name &&
        subject.namespace === identity.namespace
      : (subject.kind === "User" && subject.name === identity.user) ||
        (subject.kind === "Group" && identity.groups.includes(subject.name ?? ""));
  const granted = new Set<string>();
  for (const m of manifests) {
    if (m.kind !== "ClusterRoleBinding" && m.kind !== "RoleBinding") continue;
    const subjects = (m.subjects as Record<string, string>[] | undefined) ?? [];
    if (!subjects.some(subjectMatches)) continue;
    const ref = m.roleRef as { kind: string; name: string };
    const rules = roles.get(
      `${ref.kind}/${ref.kind === "Role" ? (m.metadata.namespace ?? "") : ""}/${ref.name}`,
    );
    for (const rule of rules ?? [])
      for (const group of rule.apiGroups ?? [])
        for (const resource of rule.resources ?? [])
          for (const verb of rule.verbs ?? []) granted.add(`${verb} ${group}/${resource}`);
  }
  return granted;
}

/** Deletes a pod at once, as its kubelet does once the containers and volumes are gone. */
async function deletePodNow(admin: KubeClient, name: string): Promise<void> {
  await admin.request({
    method: "DELETE",
    path: `/api/v1/namespaces/${NS}/pods/${name}`,
    body: { apiVersion: "v1", kind: "DeleteOptions", gracePeriodSeconds: 0 },
  });
}

test("every component's API calls on up are allowed by deploy/rbac, and every grant is used or explained", async (t) => {
  const nodes = nodeSpecs(1);
  const controllersPort = await freePort();
  const plan = (layout: ClusterLayout) =>
    planComponents({
      layout,
      nodes,
      driverName: DRIVER,
      commands: new Set(["attacher", "resizer", "snapshotter", "registrar", "livenessprobe"]),
      verbosity: 2,
      featureGates: "",
      // The controllers' secure port is scraped below: its delegated auth is part of what they call.
      ports: new Map([["controllers", controllersPort]]),
    }).instances;
  const staticIdentities = plan(new ClusterLayout("/unused")).flatMap((i) =>
    i.identity?.kind === "user" && RUN.has(i.name)
      ? [{ component: i.name, user: i.identity.user, groups: i.identity.groups }]
      : [],
  );
  const manifests = await readManifests(RBAC_DIR);
  const rbac = await startRbacCluster(t, { staticIdentities, manifests });
  const { admin, layout } = rbac;
  await layout.create();
  const instances = plan(layout);

  // What `up` applies besides deploy/rbac: the CSIDriver and its default StorageClass.
  await admin.create(GVR.csiDrivers, {
    apiVersion: "storage.k8s.io/v1",
    kind: "CSIDriver",
    metadata: { name: DRIVER },
    spec: {
      attachRequired: true,
      podInfoOnMount: true,
      storageCapacity: true,
      volumeLifecycleModes: ["Persistent", "Ephemeral"],
    },
  });
  for (const [name, mode] of [
    ["csi-hostpath", "WaitForFirstConsumer"],
    ["immediate", "Immediate"],
  ] as const)
    await admin.create(GVR.storageClasses, {
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name },
      provisioner: DRIVER,
      reclaimPolicy: "Delete",
      volumeBindingMode: mode,
      allowVolumeExpansion: true,
    });
  // The node agent's part: a Ready Node and its CSINode with the driver's topology.
  for (const node of nodes) {
    const created = await admin.create<KubeObject & { status?: unknown }>(GVR.nodes, {
      apiVersion: "v1",
      kind: "Node",
      metadata: {
        name: node.name,
        labels: { "kubernetes.io/hostname": node.name, [TOPOLOGY_KEY]: node.name },
        annotations: { "volumes.kubernetes.io/controller-managed-attach-detach": "true" },
      },
    });
    await admin.updateStatus(GVR.nodes, {
      ...created,
      status: {
        conditions: [
          {
            type: "Ready",
            status: "True",
            reason: "KubeletReady",
            lastHeartbeatTime: new Date().toISOString(),
          },
        ],
        allocatable: { cpu: "4", memory: "8Gi", pods: "110" },
        capacity: { cpu: "4", memory: "8Gi", pods: "110" },
      },
    });
    await admin.create(GVR.csiNodes, {
      apiVersion: "storage.k8s.io/v1",
      kind: "CSINode",
      metadata: { name: node.name },
      spec: { drivers: [{ name: DRIVER, nodeID: node.name, topologyKeys: [TOPOLOGY_KEY] }] },
    });
  }
  await installSnapshotCrds(admin);

  // The components, as up runs them; leader election on, as deploy/ runs the sidecars.
  const running: RunningComponent[] = [];
  const identities = new Map<string, ComponentIdentity>();
  const driver = instances.find((i) => i.name === "driver")!;
  await mkdir(layout.socketsDir, { recursive: true, mode: 0o700 });
  await mkdir(layout.nodesDir, { recursive: true });
  running.push(spawnComponent(t, driver));
  for (const instance of instances.filter((i) => RUN.has(i.name))) {
    identities.set(instance.name, instance.identity!);
    await rbac.componentKubeconfig(instance.name, instance.identity!);
    const args =
      instance.name === "controllers"
        ? instance.args.map((a) => (a === "--leader-elect=false" ? "--leader-elect=true" : a))
        : [
            ...instance.args,
            "--leader-election",
            "--leader-election-retry-period=1s",
            ...(EXTRA_ARGS[instance.name] ?? []).filter(
              (extra) => !instance.args.some((arg) => arg.split("=")[0] === extra.split("=")[0]),
            ),
          ];
    // NAMESPACE: where capacity objects go, as upstream's manifests set it (downward API).
    running.push(spawnComponent(t, { ...instance, args }, { NAMESPACE: NS }));
  }
  const logs = (): string => running.map((c) => `--- ${c.name}\n${c.output().slice(-3000)}`).join("\n");
  const step = async <T>(what: string, check: () => Promise<T | undefined | false>): Promise<T> => {
    try {
      return await until(check, what, STEP);
    } catch (error) {
      throw new Error(`${error instanceof Error ? error.message : String(error)}\n${logs()}`);
    }
  };

  type Spec = KubeObject & { spec: Record<string, unknown> };
  const claim = (name: string, extra: Record<string, unknown> = {}): Spec => ({
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name, namespace: NS },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Mi" } },
      storageClassName: "immediate",
      ...extra,
    },
  });
  const bound = (name: string) =>
    step(`claim ${name} bound`, async () => {
      const c = await admin.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, name, { namespace: NS });
      return c.status?.phase === "Bound" ? c : undefined;
    });
  const pod = (name: string, claimName: string): Spec => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: NS },
    spec: {
      containers: [{ name: "app", image: "busybox", volumeMounts: [{ name: "data", mountPath: "/data" }] }],
      volumes: [{ name: "data", persistentVolumeClaim: { claimName } }],
    },
  });

  // Provision (immediate), clone, restore.
  await admin.create(GVR.persistentVolumeClaims, claim("source"));
  const source = await bound("source");
  await admin.create(
    GVR.persistentVolumeClaims,
    claim("clone", { dataSource: { kind: "PersistentVolumeClaim", name: "source" } }),
  );
  await bound("clone");
  const sourcePv = await admin.get<PersistentVolume>(GVR.persistentVolumes, source.spec!.volumeName!);
  const csi = CsiClient.connect(layout.controllerSocket);
  const { snapshot } = await csi.controller.createSnapshot({
    sourceVolumeId: sourcePv.spec!.csi!.volumeHandle,
    name: "snapshot-snap",
  });
  csi.close();
  await writeReadySnapshot(admin, {
    name: "snap",
    driver: DRIVER,
    handle: snapshot!.snapshotId,
    sizeBytes: Number(snapshot!.sizeBytes),
  });
  await admin.create(
    GVR.persistentVolumeClaims,
    claim("restored", {
      dataSource: { apiGroup: "snapshot.storage.k8s.io", kind: "VolumeSnapshot", name: "snap" },
    }),
  );
  await bound("restored");

  // Snapshots through the snapshotter: a content and a group content as the snapshot-controller
  // writes them (it is not part of this suite), cut, ready, then deleted.
  const cloneClaim = await admin.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "clone", {
    namespace: NS,
  });
  const clonePv = await admin.get<PersistentVolume>(GVR.persistentVolumes, cloneClaim.spec!.volumeName!);
  await admin.create(GVR.volumeSnapshotClasses, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshotClass",
    metadata: { name: "snapclass" },
    driver: DRIVER,
    deletionPolicy: "Delete",
  } as KubeObject);
  await admin.create(GVR.volumeGroupSnapshotClasses, {
    apiVersion: "groupsnapshot.storage.k8s.io/v1",
    kind: "VolumeGroupSnapshotClass",
    metadata: { name: "groupclass" },
    driver: DRIVER,
    deletionPolicy: "Delete",
  } as KubeObject);
  await admin.create(GVR.volumeSnapshotContents, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshotContent",
    metadata: {
      name: "snapcontent-coverage",
      finalizers: ["snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"],
    },
    spec: {
      driver: DRIVER,
      deletionPolicy: "Delete",
      volumeSnapshotClassName: "snapclass",
      source: { volumeHandle: sourcePv.spec!.csi!.volumeHandle },
      volumeSnapshotRef: { name: "coverage", namespace: NS, uid: "6f7e1c2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b" },
    },
  } as KubeObject);
  await admin.create(GVR.volumeGroupSnapshotContents, {
    apiVersion: "groupsnapshot.storage.k8s.io/v1",
    kind: "VolumeGroupSnapshotContent",
    metadata: {
      name: "groupsnapcontent-coverage",
      finalizers: ["groupsnapshot.storage.kubernetes.io/volumegroupsnapshotcontent-bound-protection"],
    },
    spec: {
      driver: DRIVER,
      deletionPolicy: "Delete",
      volumeGroupSnapshotClassName: "groupclass",
      source: { volumeHandles: [sourcePv.spec!.csi!.volumeHandle, clonePv.spec!.csi!.volumeHandle] },
      volumeGroupSnapshotRef: {
        name: "coverage",
        namespace: NS,
        uid: "7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d",
      },
    },
  } as KubeObject);
  // A content whose class is missing: status.error and a SnapshotCreationFailed Event.
  await admin.create(GVR.volumeSnapshotContents, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshotContent",
    metadata: {
      name: "snapcontent-noclass",
      finalizers: ["snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"],
    },
    spec: {
      driver: DRIVER,
      deletionPolicy: "Delete",
      volumeSnapshotClassName: "missing",
      source: { volumeHandle: sourcePv.spec!.csi!.volumeHandle },
      volumeSnapshotRef: { name: "noclass", namespace: NS, uid: "8b9c0d1e-2f3a-4b4c-9d5e-6f7a8b9c0d1e" },
    },
  } as KubeObject);
  type WithStatus = KubeObject & { status?: { readyToUse?: boolean; error?: unknown } };
  await step("the classless content's error recorded", async () => {
    const failed = await admin.get<WithStatus>(GVR.volumeSnapshotContents, "snapcontent-noclass");
    return failed.status?.error !== undefined || undefined;
  });
  await step("snapshot and group snapshot cut and ready", async () => {
    const single = await admin.get<WithStatus>(GVR.volumeSnapshotContents, "snapcontent-coverage");
    const group = await admin.get<WithStatus>(GVR.volumeGroupSnapshotContents, "groupsnapcontent-coverage");
    return (single.status?.readyToUse && group.status?.readyToUse) || undefined;
  });
  await admin.patch(
    GVR.volumeSnapshotContents,
    "snapcontent-coverage",
    { metadata: { annotations: { "snapshot.storage.kubernetes.io/volumesnapshot-being-deleted": "yes" } } },
    { type: "merge" },
  );
  await admin.patch(
    GVR.volumeGroupSnapshotContents,
    "groupsnapcontent-coverage",
    {
      metadata: {
        annotations: { "groupsnapshot.storage.kubernetes.io/volumegroupsnapshot-being-deleted": "yes" },
      },
    },
    { type: "merge" },
  );
  await admin.patch(
    GVR.volumeSnapshotContents,
    "snapcontent-noclass",
    { metadata: { annotations: { "snapshot.storage.kubernetes.io/volumesnapshot-being-deleted": "yes" } } },
    { type: "merge" },
  );
  await admin.delete(GVR.volumeSnapshotContents, "snapcontent-noclass");
  await admin.delete(GVR.volumeSnapshotContents, "snapcontent-coverage");
  await admin.delete(GVR.volumeGroupSnapshotContents, "groupsnapcontent-coverage");
  await step(
    "snapshot contents deleted",
    async () =>
      (await admin.list(GVR.volumeSnapshotContents)).items.every(
        (c) => c.metadata?.name !== "snapcontent-coverage",
      ) && (await admin.list(GVR.volumeGroupSnapshotContents)).items.length === 0,
  );

  // Resize.
  await admin.patch(
    GVR.persistentVolumeClaims,
    "source",
    { spec: { resources: { requests: { storage: "2Mi" } } } },
    { namespace: NS, type: "merge" },
  );
  await step("source's volume expanded", async () => {
    const pv = await admin.get<PersistentVolume>(GVR.persistentVolumes, source.spec!.volumeName!);
    return pv.spec?.capacity?.storage === "2Mi";
  });

  // VolumeAttributesClass modify (whatever the resizer's gates do with it on up).
  await admin.create(GVR.volumeAttributesClasses, {
    apiVersion: "storage.k8s.io/v1",
    kind: "VolumeAttributesClass",
    metadata: { name: "gold" },
    driverName: DRIVER,
    parameters: { tier: "gold" },
  });
  await admin.patch(
    GVR.persistentVolumeClaims,
    "clone",
    { spec: { volumeAttributesClassName: "gold" } },
    { namespace: NS, type: "merge" },
  );

  // WaitForFirstConsumer: the scheduler picks the node, then provision, attach.
  await admin.create(GVR.persistentVolumeClaims, claim("late", { storageClassName: "csi-hostpath" }));
  await admin.create(GVR.pods, pod("late-app", "late"));
  await bound("late");
  await step("late's volume attached", async () => {
    const list = await admin.list<VolumeAttachment>(GVR.volumeAttachments);
    return list.items.some((va) => va.status?.attached) || undefined;
  });

  // Capacity tracking: one CSIStorageCapacity per class and topology segment.
  await step("CSIStorageCapacity published", async () => {
    const list = await admin.list(GVR.csiStorageCapacities, { namespace: NS });
    return list.items.length > 0 || undefined;
  });

  // Workloads: a StatefulSet's claim, pod, revision and status (statefulset-controller), and a
  // pod's generic ephemeral claim (ephemeral-volume-controller). Their pods select no node, so
  // the scheduler reports them unschedulable, and the garbage collector deletes them and their
  // claims (no kubelet here to finish a scheduled pod).
  const nowhere = { "csikit.test/nowhere": "true" };
  await admin.create(GVR.statefulSets, {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name: "web", namespace: NS },
    spec: {
      replicas: 1,
      podManagementPolicy: "Parallel",
      persistentVolumeClaimRetentionPolicy: { whenDeleted: "Delete", whenScaled: "Delete" },
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: { nodeSelector: nowhere, containers: [{ name: "app", image: "busybox" }] },
      },
      volumeClaimTemplates: [claim("data")],
    },
  });
  await bound("data-web-0");
  await step("the StatefulSet's pod and status", async () => {
    const set = await admin.get<KubeObject & { status?: { replicas?: number } }>(GVR.statefulSets, "web", {
      namespace: NS,
    });
    return set.status?.replicas === 1 || undefined;
  });
  await admin.create(GVR.pods, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "scratch", namespace: NS },
    spec: {
      nodeSelector: nowhere,
      containers: [{ name: "app", image: "busybox" }],
      volumes: [{ name: "data", ephemeral: { volumeClaimTemplate: { spec: claim("unused").spec } } }],
    },
  });
  await bound("scratch-data");
  await step("scratch reported unschedulable", async () => {
    const pod = await admin.get<
      KubeObject & { status?: { conditions?: { type: string; status: string }[] } }
    >(GVR.pods, "scratch", { namespace: NS });
    return (
      pod.status?.conditions?.some((c) => c.type === "PodScheduled" && c.status === "False") || undefined
    );
  });
  await admin.delete(GVR.statefulSets, "web", { namespace: NS });
  await admin.delete(GVR.pods, "scratch", { namespace: NS });
  await step("the StatefulSet's pod and claim, and the ephemeral claim, collected", async () => {
    const pods = await admin.list(GVR.pods, { namespace: NS });
    const claims = await admin.list(GVR.persistentVolumeClaims, { namespace: NS });
    const names = new Set([...pods.items, ...claims.items].map((o) => o.metadata?.name));
    return (!names.has("web-0") && !names.has("data-web-0") && !names.has("scratch-data")) || undefined;
  });

  // An attach error: a volume the driver does not have.
  await admin.create(
    GVR.persistentVolumes,
    persistentVolume("ghost", { driver: DRIVER, handle: "no-such-volume" }),
  );
  await admin.create(
    GVR.persistentVolumeClaims,
    claim("ghost", { storageClassName: "", volumeName: "ghost" }),
  );
  await admin.create(
    GVR.pods,
    nodePod(NS, "ghost-app", {
      nodeName: nodes[0]!.name,
      volumes: [{ name: "data", persistentVolumeClaim: { claimName: "ghost" } }],
    }),
  );
  await step("attach error on the ghost's VolumeAttachment", async () => {
    const list = await admin.list<VolumeAttachment>(GVR.volumeAttachments);
    return (
      list.items.some((va) => va.spec?.source?.persistentVolumeName === "ghost" && va.status?.attachError) ||
      undefined
    );
  });

  // Tear down: pods (as their kubelet would finish them), detach, claims, DeleteVolume.
  for (const name of ["late-app", "ghost-app"]) await deletePodNow(admin, name);
  await step(
    "every attachment detached",
    async () => (await admin.list(GVR.volumeAttachments)).items.length === 0,
  );
  for (const name of ["restored", "clone", "late", "ghost", "source"])
    await admin.delete(GVR.persistentVolumeClaims, name, { namespace: NS });
  await step("provisioned volumes deleted", async () => {
    const pvs = await admin.list<PersistentVolume>(GVR.persistentVolumes);
    return pvs.items.every((pv) => pv.metadata?.name === "ghost") || undefined;
  });

  // Leader election renews (an update of its Lease) every retry period: wait for one each.
  await step("every sidecar's lease renewed", async () => {
    const leases = await admin.list<KubeObject & { spec?: { acquireTime?: string; renewTime?: string } }>(
      GVR.leases,
      { namespace: NS },
    );
    const renewed = leases.items.filter((l) => l.spec?.renewTime !== l.spec?.acquireTime);
    return renewed.length >= 4 || undefined;
  });

  // The controllers' secure port, scraped as Prometheus would: TokenReview, then SubjectAccessReview.
  const adminToken = /token: (\S+)/.exec(await readFile(rbac.kubeconfig, "utf8"))?.[1] ?? "";
  await step("the controllers' /metrics served to the admin token", async () => {
    const answer = await scrape(`https://127.0.0.1:${controllersPort}/metrics`, adminToken).catch(
      () => undefined,
    );
    return (answer?.status === 200 && answer.body.includes("workqueue_depth")) || undefined;
  });

  // Stopped first: a watch is audited when it ends.
  await Promise.all(running.map((component) => component.stop()));

  // 1. Nothing any component asked for was refused.
  const users = new Map([...identities].map(([component, identity]) => [usernameOf(identity), component]));
  const refused = forbidden(rbac.audit).filter((e) => users.has(e.user.username));
  assert.deepEqual(refused.map(describeEvent), [], "requests deploy/rbac refuses");

  // 2. Least privilege: every grant used, or listed with its reason.
  const problems: string[] = [];
  for (const [component, identity] of identities) {
    const username = usernameOf(identity);
    const used = new Set(
      rbac.audit
        .filter((e) => e.user.username === username && e.objectRef && e.responseStatus.code !== 403)
        .map((e) => {
          const ref = e.objectRef!;
          return `${e.verb} ${ref.apiGroup ?? ""}/${ref.resource}${ref.subresource ? `/${ref.subresource}` : ""}`;
        }),
    );
    const explained = UNEXERCISED[component] ?? {};
    for (const grant of [...grantsOf(manifests, identity)].sort())
      if (!used.has(grant) && !(grant in explained)) problems.push(`${component}: ${grant}`);
    // An explanation for a grant the suite does use is stale: it would hide a future regression.
    // A repeat of an event depends on timing, so its patch may or may not be seen.
    for (const [grant, why] of Object.entries(explained))
      if (used.has(grant) && why !== EVENT_REPEAT)
        problems.push(`${component}: ${grant} is used, yet listed in UNEXERCISED`);
  }
  assert.deepEqual(problems, [], "granted, never used by the suite, and not in UNEXERCISED");
});
