// RBAC proves the manifests: every controller-side component runs as `csikit up` runs it (its
// own process, `up`'s command line from src/cluster/components.ts, its identity, the Roles of
// deploy/rbac/) while a scenario suite drives its API paths: provisioning (immediate and
// WaitForFirstConsumer, the scheduler's pick), clone, restore from a VolumeSnapshot, resize,
// VolumeAttributesClass modify, attach and an attach error, detach, delete, a StatefulSet and a
// generic ephemeral volume (their claims created by the controllers), leader election
// (on, as deploy/ runs the sidecars and the snapshot-controller), capacity tracking (on, as a
// deployment may run it) and events; snapshots through the snapshot-controller and the
// snapshotter (dynamic with the default class, pre-provisioned, a group snapshot, a snapshot
// of a missing class, a content of a missing class, all deleted) and a changed-block listing
// through the snapshot-metadata sidecar (`csikit snapshot-metadata list` as the backup client's
// account: TokenReview, SubjectAccessReview, the snapshot and content looked up). The
// API server's audit events say what each identity asked for:
//   1. no request of any component is answered 403 (a missing permission fails here, not on a
//      user's cluster);
//   2. least privilege: every (verb, group, resource) a component's Roles grant is used by it
//      during the suite, or listed in UNEXERCISED with the reason it is granted anyway.
// Not run here: the node agents (they need a mount namespace; their RBAC is the Node
// authorizer's, tested with it), node-deployment and migration (a second provisioner setup
// each); this test plays the node agents' part (Node, CSINode) as the admin.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, readFile } from "node:fs/promises";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
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
import {
  SNAPSHOT_METADATA,
  SNAPSHOT_METADATA_GRPC,
  advertiseSnapshotMetadata,
} from "../../src/cluster/snapshot-metadata.ts";
import { installSnapshotCrds } from "../harness/snapshots.ts";
import { persistentVolume, pod as nodePod } from "../harness/node.ts";
import { scrape } from "../harness/https-get.ts";
import { until } from "../harness/until.ts";

const DRIVER = "hostpath.csi.k8s.io";
const TOPOLOGY_KEY = "topology.hostpath.csi/node";
const NS = "default";
const STEP = { timeoutMs: 90_000 };
const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));
const execFileText = promisify(execFile);
/** The claims the group snapshot selects. */
const GROUP_LABELS = { "csikit.test/group": "coverage" };
/**
 * Paths `up` does not turn on yet, on as a deployment may run them: capacity tracking (owned by
 * no pod here: ownerref level -1). A flag `up` already passes is not given twice.
 */
const EXTRA_ARGS: Readonly<Record<string, readonly string[]>> = {
  provisioner: ["--enable-capacity", "--capacity-ownerref-level=-1", "--capacity-poll-interval=2s"],
};
/** Components the suite runs (drivers and node-level components aside). */

const RUN = new Set([
  "controllers",
  "provisioner",
  "attacher",
  "resizer",
  "snapshotter",
  "snapshot-controller",
  SNAPSHOT_METADATA,
]);

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
const DISTRIBUTED_SNAPSHOTS =
  "upstream's rule for --enable-distributed-snapshotting (the node a content's managed-by label names); up turns it on with --distributed only";
const SNAPSHOT_UPDATES =
  "upstream's rule; csikit writes these with update (a resourceVersion-guarded write of the object it decided on)";
const REVIEWS_UPSTREAM = "upstream's rule; a review is only ever created";
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
    "list /pods":
      "--handle-volume-inuse-error: the claim's namespace is listed only while a claim waits after FAILED_PRECONDITION (an offline-only driver); hostpath expands online",
    "watch /pods":
      "upstream's cluster-wide pod informer for --handle-volume-inuse-error; csikit keeps no pod cache (src/sidecars/resizer/in-use.ts)",
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
  "snapshot-controller": {
    "get /nodes": DISTRIBUTED_SNAPSHOTS,
    "list /nodes": DISTRIBUTED_SNAPSHOTS,
    "watch /nodes": DISTRIBUTED_SNAPSHOTS,
    "get /persistentvolumeclaims": INFORMER_GET,
    "get /persistentvolumes": INFORMER_GET,
    "get snapshot.storage.k8s.io/volumesnapshotclasses": INFORMER_GET,
    "get snapshot.storage.k8s.io/volumesnapshotcontents": INFORMER_GET,
    "get snapshot.storage.k8s.io/volumesnapshots": INFORMER_GET,
    "get groupsnapshot.storage.k8s.io/volumegroupsnapshotclasses": INFORMER_GET,
    "get groupsnapshot.storage.k8s.io/volumegroupsnapshotcontents": INFORMER_GET,
    "get groupsnapshot.storage.k8s.io/volumegroupsnapshots": INFORMER_GET,
    "patch snapshot.storage.k8s.io/volumesnapshots": SNAPSHOT_UPDATES,
    "patch snapshot.storage.k8s.io/volumesnapshots/status": SNAPSHOT_UPDATES,
    "patch snapshot.storage.k8s.io/volumesnapshotcontents/status": SNAPSHOT_UPDATES,
    "patch groupsnapshot.storage.k8s.io/volumegroupsnapshots": SNAPSHOT_UPDATES,
    "patch groupsnapshot.storage.k8s.io/volumegroupsnapshots/status": SNAPSHOT_UPDATES,
    "patch groupsnapshot.storage.k8s.io/volumegroupsnapshotcontents/status": SNAPSHOT_UPDATES,
    "update groupsnapshot.storage.k8s.io/volumegroupsnapshotcontents":
      "upstream's rule; csikit patches group contents (their finalizer, their being-deleted annotation)",
    "list /events": EVENT_UPSTREAM,
    "watch /events": EVENT_UPSTREAM,
    "update /events": EVENT_UPSTREAM,
    "patch /events": EVENT_REPEAT,
    "list coordination.k8s.io/leases": LEASES_UPSTREAM,
    "watch coordination.k8s.io/leases": LEASES_UPSTREAM,
    "delete coordination.k8s.io/leases": LEASES_UPSTREAM,
  },
  [SNAPSHOT_METADATA]: {
    ...Object.fromEntries(
      ["create", "delete", "list", "patch", "update", "watch"].map((verb) => [
        `${verb} cbt.storage.k8s.io/snapshotmetadataservices`,
        "upstream grants every verb on the driver's SnapshotMetadataService; the sidecar only gets it (its audience)",
      ]),
    ),
    "get authentication.k8s.io/tokenreviews": REVIEWS_UPSTREAM,
    "get authorization.k8s.io/subjectaccessreviews": REVIEWS_UPSTREAM,
    "list snapshot.storage.k8s.io/volumesnapshots":
      "upstream's rule; the sidecar gets the one snapshot a call names",
    "list snapshot.storage.k8s.io/volumesnapshotcontents":
      "upstream's rule; the sidecar gets the one content a snapshot is bound to",
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
  const snapshotMetadataPort = await freePort();
  const plan = (layout: ClusterLayout) =>
    planComponents({
      layout,
      nodes,
      driverName: DRIVER,
      commands: new Set([
        "attacher",
        "resizer",
        "snapshotter",
        "snapshot-controller",
        "snapshot-metadata",
        "registrar",
        "livenessprobe",
      ]),
      verbosity: 2,
      featureGates: "",
      // The controllers' secure port is scraped below: its delegated auth is part of what they call.
      // The snapshot-metadata port is the one its SnapshotMetadataService advertises.
      ports: new Map([
        ["controllers", controllersPort],
        [SNAPSHOT_METADATA_GRPC, snapshotMetadataPort],
      ]),
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
  // What up does before the snapshot-metadata sidecar starts: its key pair and the
  // SnapshotMetadataService advertising its port.
  await advertiseSnapshotMetadata(
    admin,
    { layout, driverName: DRIVER, port: snapshotMetadataPort },
    new AbortController().signal,
  );
  for (const instance of instances.filter((i) => RUN.has(i.name))) {
    identities.set(instance.name, instance.identity!);
    await rbac.componentKubeconfig(instance.name, instance.identity!);
    const args =
      instance.name === "controllers"
        ? instance.args.map((a) => (a === "--leader-elect=false" ? "--leader-elect=true" : a))
        : instance.name === "snapshot-controller"
          ? [
              ...instance.args.filter((a) => a !== "--leader-election=false"),
              // Its Lease lives in its own namespace, as upstream's Deployment in kube-system.
              "--leader-election=true",
              "--leader-election-namespace=kube-system",
              "--leader-election-retry-period=1s",
            ]
          : instance.name === SNAPSHOT_METADATA
            ? instance.args // one replica upstream too: no leader election
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
  const claim = (
    name: string,
    extra: Record<string, unknown> = {},
    labels?: Record<string, string>,
  ): Spec => ({
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name, namespace: NS, ...(labels ? { labels } : {}) },
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

  // Provision (immediate), clone; a Block claim for changed-block tracking.
  await admin.create(GVR.persistentVolumeClaims, claim("source", {}, GROUP_LABELS));
  const source = await bound("source");
  await admin.create(
    GVR.persistentVolumeClaims,
    claim("clone", { dataSource: { kind: "PersistentVolumeClaim", name: "source" } }, GROUP_LABELS),
  );
  await bound("clone");
  await admin.create(GVR.persistentVolumeClaims, claim("blocks", { volumeMode: "Block" }));
  const blocksPv = await admin.get<PersistentVolume>(
    GVR.persistentVolumes,
    (await bound("blocks")).spec!.volumeName!,
  );

  // Snapshots through the snapshot-controller and the snapshotter, as up runs them: the default
  // class (the controller fills the snapshot's class in), a group class.
  await admin.create(GVR.volumeSnapshotClasses, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshotClass",
    metadata: {
      name: "snapclass",
      annotations: { "snapshot.storage.kubernetes.io/is-default-class": "true" },
    },
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
  type Snap = KubeObject & {
    status?: { readyToUse?: boolean; error?: unknown; boundVolumeSnapshotContentName?: string };
  };
  const volumeSnapshot = (name: string, spec: Record<string, unknown>): Snap & { spec: unknown } => ({
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshot",
    metadata: { name, namespace: NS },
    spec,
  });
  const snapshotReady = (name: string) =>
    step(`snapshot ${name} ready`, async () => {
      const s = await admin.get<Snap>(GVR.volumeSnapshots, name, { namespace: NS });
      return s.status?.readyToUse === true ? s : undefined;
    });
  // Dynamic (default class), restored into a new claim.
  await admin.create(
    GVR.volumeSnapshots,
    volumeSnapshot("snap", { source: { persistentVolumeClaimName: "source" } }),
  );
  await snapshotReady("snap");
  await admin.create(
    GVR.persistentVolumeClaims,
    claim("restored", {
      dataSource: { apiGroup: "snapshot.storage.k8s.io", kind: "VolumeSnapshot", name: "snap" },
    }),
  );
  await bound("restored");
  // Pre-provisioned: a backend snapshot of the block volume cut outside Kubernetes, its content
  // written by the admin (no class: the metadata sidecar looks the driver's default one up).
  const sourcePv = await admin.get<PersistentVolume>(GVR.persistentVolumes, source.spec!.volumeName!);
  const csi = CsiClient.connect(layout.controllerSocket);
  const { snapshot: backendSnapshot } = await csi.controller.createSnapshot({
    sourceVolumeId: blocksPv.spec!.csi!.volumeHandle,
    name: "snapshot-pre",
  });
  csi.close();
  await admin.create(GVR.volumeSnapshotContents, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshotContent",
    metadata: { name: "pre-content" },
    spec: {
      driver: DRIVER,
      deletionPolicy: "Delete",
      source: { snapshotHandle: backendSnapshot!.snapshotId },
      volumeSnapshotRef: { name: "pre", namespace: NS },
    },
  } as KubeObject);
  await admin.create(
    GVR.volumeSnapshots,
    volumeSnapshot("pre", { source: { volumeSnapshotContentName: "pre-content" } }),
  );
  await snapshotReady("pre");
  // A group snapshot of the two labelled claims: a group content, a snapshot and content per member.
  await admin.create(GVR.volumeGroupSnapshots, {
    apiVersion: "groupsnapshot.storage.k8s.io/v1",
    kind: "VolumeGroupSnapshot",
    metadata: { name: "group", namespace: NS },
    spec: { source: { selector: { matchLabels: GROUP_LABELS } }, volumeGroupSnapshotClassName: "groupclass" },
  } as KubeObject);
  await step("group snapshot ready", async () => {
    const g = await admin.get<Snap>(GVR.volumeGroupSnapshots, "group", { namespace: NS });
    return g.status?.readyToUse === true || undefined;
  });
  // A snapshot naming a class that does not exist: the controller's error status and Event.
  await admin.create(
    GVR.volumeSnapshots,
    volumeSnapshot("noclass", {
      source: { persistentVolumeClaimName: "source" },
      volumeSnapshotClassName: "missing",
    }),
  );
  await step("the classless snapshot's error recorded", async () => {
    const s = await admin.get<Snap>(GVR.volumeSnapshots, "noclass", { namespace: NS });
    return s.status?.error !== undefined || undefined;
  });
  // A content whose class is missing, written directly (no snapshot): the sidecar's
  // status.error and SnapshotCreationFailed Event.
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
      volumeSnapshotRef: { name: "gone", namespace: NS, uid: "8b9c0d1e-2f3a-4b4c-9d5e-6f7a8b9c0d1e" },
    },
  } as KubeObject);
  await step("the classless content's error recorded", async () => {
    const failed = await admin.get<Snap>(GVR.volumeSnapshotContents, "snapcontent-noclass");
    return failed.status?.error !== undefined || undefined;
  });

  // Changed-block tracking: the block claim's dynamic snapshot (its class set by the controller)
  // and the pre-provisioned one (no class), listed by the backup client's account through the
  // sidecar (TokenReview, SubjectAccessReview, the snapshot, its content and class read).
  await admin.create(
    GVR.volumeSnapshots,
    volumeSnapshot("blocks-snap", { source: { persistentVolumeClaimName: "blocks" } }),
  );
  await snapshotReady("blocks-snap");
  const listerKubeconfig = await rbac.serviceAccountKubeconfig(NS, "snapshot-metadata-lister");
  for (const snapshotName of ["blocks-snap", "pre"]) {
    const listed = await execFileText(
      process.execPath,
      [
        MAIN,
        "snapshot-metadata",
        "list",
        `--kubeconfig=${listerKubeconfig}`,
        "--service-account=snapshot-metadata-lister",
        `--snapshot=${NS}/${snapshotName}`,
        "-o",
        "json",
      ],
      { timeout: STEP.timeoutMs },
    ).catch((error: unknown) => {
      throw new Error(`snapshot-metadata list ${snapshotName} failed: ${String(error)}\n${logs()}`);
    });
    assert.ok(Array.isArray(JSON.parse(listed.stdout)), `the lister's JSON: ${listed.stdout}`);
  }

  // Everything deleted: contents and backend snapshots through the sidecar, nothing left.
  await admin.patch(
    GVR.volumeSnapshotContents,
    "snapcontent-noclass",
    { metadata: { annotations: { "snapshot.storage.kubernetes.io/volumesnapshot-being-deleted": "yes" } } },
    { type: "merge" },
  );
  await admin.delete(GVR.volumeSnapshotContents, "snapcontent-noclass");
  await admin.delete(GVR.volumeGroupSnapshots, "group", { namespace: NS });
  for (const name of ["snap", "pre", "noclass", "blocks-snap"])
    await admin.delete(GVR.volumeSnapshots, name, { namespace: NS });
  await step(
    "every snapshot, content and group snapshot deleted",
    async () =>
      (await admin.list(GVR.volumeSnapshots, { namespace: NS })).items.length === 0 &&
      (await admin.list(GVR.volumeSnapshotContents)).items.length === 0 &&
      (await admin.list(GVR.volumeGroupSnapshots, { namespace: NS })).items.length === 0 &&
      (await admin.list(GVR.volumeGroupSnapshotContents)).items.length === 0,
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
  for (const name of ["restored", "clone", "blocks", "late", "ghost", "source"])
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
    const controller = await admin.get<KubeObject & { spec?: { acquireTime?: string; renewTime?: string } }>(
      GVR.leases,
      "snapshot-controller-leader",
      { namespace: "kube-system" },
    );
    return (renewed.length >= 4 && controller.spec?.renewTime !== controller.spec?.acquireTime) || undefined;
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
