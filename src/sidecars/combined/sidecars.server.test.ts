// `csikit sidecars` as a real process against the real API server (RBAC on, deploy/rbac/
// applied) and the real hostpath driver over a Unix socket: all five sidecars in one process
// provision, attach, resize and snapshot a volume; the API server's audit log shows one list
// and one watch per resource, all under the shared-read identity, while every write is made
// under the identity of the sidecar that owns it; and a sidecar given an identity whose Role
// lacks a write is refused that write (its writes really go through its own client).

import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test, type TestContext } from "node:test";
import {
  GVR,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type VolumeAttachment,
  type VolumeSnapshotContent,
} from "../../api/index.ts";
import type { AuditEvent } from "../../apiserver/index.ts";
import { startHostpathProcess } from "../../../test/harness/csikit-process.ts";
import {
  HOSTPATH,
  createClaim,
  createClass,
  getVolume,
  waitForVolume,
  type Cluster,
} from "../../../test/harness/provisioner.ts";
import { createAttachment, createCsiNode } from "../../../test/harness/attacher.ts";
import {
  describeEvent,
  forbidden,
  spawnComponent,
  startRbacCluster,
  type RbacCluster,
} from "../../../test/harness/rbac.ts";
import { installSnapshotCrds } from "../../../test/harness/snapshots.ts";
import { createSnapshotClass } from "../../../test/harness/snapshotter.ts";
import { until } from "../../../test/harness/until.ts";

const READER = "system:serviceaccount:default:csikit-sidecars";
const SIDECAR_ACCOUNTS = {
  provisioner: "csi-provisioner",
  attacher: "csi-attacher",
  resizer: "csi-resizer",
  snapshotter: "csi-snapshotter",
  "health-monitor": "csi-external-health-monitor-controller",
} as const;
const user = (account: string): string => `system:serviceaccount:default:${account}`;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== "object" || address === null) throw new Error("no port");
  return address.port;
}

function clusterOf(rbac: RbacCluster): Cluster {
  return {
    server: rbac.server,
    faults: rbac.faults,
    kubeconfig: rbac.kubeconfig,
    client: rbac.admin,
    dir: rbac.dir,
  };
}

/** `resource` of an audit event, with its group when it has one. */
function resourceOf(event: AuditEvent): string {
  const ref = event.objectRef!;
  return ref.apiGroup ? `${ref.resource}.${ref.apiGroup}` : ref.resource;
}

function countBy(events: readonly AuditEvent[], verb: string, username: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const event of events)
    if (event.verb === verb && event.user.username === username && event.objectRef)
      out.set(resourceOf(event), (out.get(resourceOf(event)) ?? 0) + 1);
  return out;
}

async function sidecarKubeconfigs(rbac: RbacCluster): Promise<string[]> {
  const args: string[] = [];
  for (const [component, account] of Object.entries(SIDECAR_ACCOUNTS))
    args.push(`--${component}.kubeconfig=${await rbac.serviceAccountKubeconfig("default", account)}`);
  return args;
}

test("csikit sidecars: provision, attach, resize, snapshot in one process; one watch per resource; writes under each sidecar's identity", async (t: TestContext) => {
  const rbac = await startRbacCluster(t, { admission: [] });
  const cluster = clusterOf(rbac);
  const { admin } = rbac;
  await installSnapshotCrds(admin);
  const { socket } = await startHostpathProcess(t, rbac.dir, ["--enable-attach"]);
  await createCsiNode(admin, "node-1", { [HOSTPATH]: "csi-node" });
  await createClass(cluster, "sc", HOSTPATH, { allowVolumeExpansion: true, volumeBindingMode: "Immediate" });
  await createSnapshotClass(admin, "snap", { driver: HOSTPATH });
  const port = await freePort();
  const sidecars = spawnComponent(t, {
    name: "sidecars",
    subcommand: "sidecars",
    args: [
      "-v=2",
      `--csi-address=${socket}`,
      `--kubeconfig=${await rbac.serviceAccountKubeconfig("default", "csikit-sidecars")}`,
      ...(await sidecarKubeconfigs(rbac)),
      "--provisioner",
      "--attacher",
      "--resizer",
      "--snapshotter",
      "--health-monitor",
      "--leader-election",
      `--http-endpoint=127.0.0.1:${port}`,
      // Immediate binding without Nodes: no topology to pick from.
      "--provisioner.feature-gates=Topology=false",
      "--kube-api-qps=100",
      "--kube-api-burst=200",
    ],
  });
  const fail = (what: string) => `${what}\n--- csikit sidecars:\n${sidecars.output()}`;

  // Provision.
  const claim = await createClaim(cluster, "c1", HOSTPATH);
  const pv = await waitForVolume(cluster, claim, 30_000).catch((error: unknown) => {
    throw new Error(fail(String(error)));
  });
  // The PV controller's bind, in one status write with the capacity (a claim Bound without
  // one would look like a resize to the resizer); retried while the provisioner still writes.
  await until(async () => {
    const fresh = await admin.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "c1", {
      namespace: "default",
    });
    const updated = await admin.update(GVR.persistentVolumeClaims, {
      ...fresh,
      spec: { ...fresh.spec, volumeName: pv.metadata.name! },
    });
    await admin.updateStatus(GVR.persistentVolumeClaims, {
      ...updated,
      status: { phase: "Bound", accessModes: ["ReadWriteOnce"], capacity: { storage: "1Mi" } },
    });
    return true;
  }, "claim bound");
  await until(async () => {
    const fresh = (await getVolume(cluster, pv.metadata.name!))!;
    await admin.updateStatus(GVR.persistentVolumes, { ...fresh, status: { phase: "Bound" } });
    return true;
  }, "volume bound");

  // Attach.
  await createAttachment(admin, "va-1", { driver: HOSTPATH, nodeName: "node-1", pvName: pv.metadata.name! });
  await until(
    async () => (await admin.get<VolumeAttachment>(GVR.volumeAttachments, "va-1")).status?.attached === true,
    fail("attached"),
    { timeoutMs: 30_000 },
  );

  // Resize (controller expansion: the PV's capacity grows).
  await admin.patch(
    GVR.persistentVolumeClaims,
    "c1",
    { spec: { resources: { requests: { storage: "2Mi" } } } },
    { namespace: "default" },
  );
  await until(
    async () => (await getVolume(cluster, pv.metadata.name!))?.spec?.capacity?.storage === "2Mi",
    fail("PV expanded to 2Mi"),
    { timeoutMs: 30_000 },
  );

  // Snapshot (a dynamic content, as the snapshot-controller creates it).
  await admin.create<VolumeSnapshotContent>(GVR.volumeSnapshotContents, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshotContent",
    metadata: { name: "content-1" },
    spec: {
      driver: HOSTPATH,
      deletionPolicy: "Delete",
      source: { volumeHandle: pv.spec!.csi!.volumeHandle },
      volumeSnapshotClassName: "snap",
      volumeSnapshotRef: { name: "s1", namespace: "default", uid: "6a0f1d3e-2b4c-4d5e-8f90-123456789abc" },
    },
  });
  await until(
    async () =>
      (await admin.get<VolumeSnapshotContent>(GVR.volumeSnapshotContents, "content-1")).status?.readyToUse ===
      true,
    fail("snapshot ready"),
    { timeoutMs: 30_000 },
  );

  // Metrics and health as if separate: one endpoint, every sidecar's check.
  const base = `http://127.0.0.1:${port}`;
  const metrics = await (await fetch(`${base}/metrics`)).text();
  for (const name of [
    "csi_sidecar_operations_seconds",
    "controller_persistentvolumeclaim_provision_total",
    'workqueue_adds_total{name="csi-attacher-va"}',
    'workqueue_adds_total{name="csi-snapshotter-content"}',
  ])
    assert.ok(metrics.includes(name), `/metrics carries ${name}`);
  for (const component of Object.keys(SIDECAR_ACCOUNTS)) {
    const health = await fetch(`${base}/healthz/leader-election-${component}`);
    assert.equal(health.status, 200, `/healthz/leader-election-${component}`);
  }
  // One Lease per sidecar, upstream's names, each held under the sidecar's own identity.
  const leases = await admin.list<{ metadata: { name?: string } }>(GVR.leases, { namespace: "default" });
  const leaseNames = leases.items.map((lease) => lease.metadata.name).sort();
  for (const name of [
    "hostpath-csi-k8s-io",
    "external-attacher-leader-hostpath-csi-k8s-io",
    "external-resizer-hostpath-csi-k8s-io",
    "external-snapshotter-leader-hostpath-csi-k8s-io",
    "external-health-monitor-leader-hostpath-csi-k8s-io",
  ])
    assert.ok(leaseNames.includes(name), `Lease ${name} in ${leaseNames.join(", ")}`);

  // Watches are audited when they close: stop the process, then count.
  await sidecars.stop();
  const audit = rbac.audit;
  const watches = countBy(audit, "watch", READER);
  const lists = countBy(audit, "list", READER);
  for (const resource of [
    "persistentvolumes",
    "persistentvolumeclaims",
    "storageclasses.storage.k8s.io",
    "volumeattachments.storage.k8s.io",
    "csinodes.storage.k8s.io",
    "volumesnapshotcontents.snapshot.storage.k8s.io",
    "volumesnapshotclasses.snapshot.storage.k8s.io",
  ])
    assert.ok(watches.has(resource), `a shared watch on ${resource}: ${[...watches.keys()].join(", ")}`);
  for (const [resource, count] of watches) assert.equal(count, 1, `one watch on ${resource}`);
  for (const [resource, count] of lists) assert.equal(count, 1, `one list of ${resource}`);
  for (const account of Object.values(SIDECAR_ACCOUNTS)) {
    assert.equal(countBy(audit, "watch", user(account)).size, 0, `${account} opens no watch of its own`);
    // Live reads (start-up probes, the orphan sweep) stay the sidecar's; none is an informer's list.
    for (const resource of countBy(audit, "list", user(account)).keys())
      assert.ok(!watches.has(resource), `${account} lists ${resource}, which the shared informers serve`);
  }
  // The shared-read identity reads and holds no Lease: it writes nothing.
  const readerWrites = audit.filter(
    (e) => e.user.username === READER && !["list", "watch", "get"].includes(e.verb),
  );
  assert.deepEqual(readerWrites.map(describeEvent), [], "the shared identity writes nothing");
  // Each write under its owner's identity.
  const wrote = (account: string, verb: string, resource: string): boolean =>
    audit.some(
      (e) =>
        e.user.username === user(account) && e.verb === verb && e.objectRef && resourceOf(e) === resource,
    );
  assert.ok(wrote("csi-provisioner", "create", "persistentvolumes"), "the provisioner created the PV");
  assert.ok(
    wrote("csi-attacher", "patch", "volumeattachments.storage.k8s.io"),
    "the attacher patched the attachment",
  );
  assert.ok(wrote("csi-resizer", "patch", "persistentvolumes"), "the resizer patched the PV");
  assert.ok(
    audit.some(
      (e) =>
        e.user.username === user("csi-snapshotter") &&
        e.objectRef?.resource === "volumesnapshotcontents" &&
        e.verb !== "get",
    ),
    "the snapshotter wrote the content",
  );
  assert.deepEqual(forbidden(audit).map(describeEvent), [], "nothing was refused");
});

test("csikit sidecars: a sidecar's writes use its own identity: the provisioner as csi-attacher is refused its writes", async (t: TestContext) => {
  const rbac = await startRbacCluster(t, { admission: [] });
  const cluster = clusterOf(rbac);
  const { socket } = await startHostpathProcess(t, rbac.dir);
  await createClass(cluster, "sc", HOSTPATH, { volumeBindingMode: "Immediate" });
  const sidecars = spawnComponent(t, {
    name: "sidecars",
    subcommand: "sidecars",
    args: [
      `--csi-address=${socket}`,
      `--kubeconfig=${await rbac.serviceAccountKubeconfig("default", "csikit-sidecars")}`,
      // The attacher's Role may patch PVs but never create one, nor write a claim.
      `--provisioner.kubeconfig=${await rbac.serviceAccountKubeconfig("default", "csi-attacher")}`,
      "--provisioner",
      "--provisioner.feature-gates=Topology=false",
    ],
  });
  await createClaim(cluster, "c1", HOSTPATH);
  const refused = await until(
    () =>
      forbidden(rbac.audit, user("csi-attacher")).find(
        (e) =>
          ["create", "patch", "update"].includes(e.verb) &&
          ["persistentvolumes", "persistentvolumeclaims"].includes(e.objectRef?.resource ?? ""),
      ),
    `the provisioner's write refused\n--- csikit sidecars:\n${sidecars.output()}`,
    { timeoutMs: 30_000 },
  );
  assert.equal(refused.responseStatus.code, 403);
  const pvs = await rbac.admin.list<PersistentVolume>(GVR.persistentVolumes);
  assert.equal(pvs.items.length, 0, "no PV was created");
  // The shared identity was never used to write.
  assert.equal(
    rbac.audit.filter((e) => e.user.username === READER && !["list", "watch"].includes(e.verb)).length,
    0,
  );
});
