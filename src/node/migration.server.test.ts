// The node's share of CSI migration: its CSINode announces the in-tree plugins it migrated in
// `storage.alpha.kubernetes.io/migrated-plugins` from the moment it exists (so controllers never
// see a CSINode without it), and a kubelet restarted with other gates rewrites it; an in-tree
// GCE PD PV and an inline GCE PD volume are staged and published through the CSI driver
// (a scripted node plugin registered as pd.csi.storage.gke.io) at the kubelet's CSI paths with
// translated sources, and a restarted node reconstructs them as migrated volumes.

import assert from "node:assert/strict";
import { lstat, readFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { GVR, type CSINode, type Node, type PersistentVolume, type VolumeAttachment } from "../api/index.ts";
import { silentLogger } from "../base/index.ts";
import { MIGRATED_PLUGINS_ANNOTATION, resolveFeatureGates } from "../migration/index.ts";
import { ActualState } from "./actual-state.ts";
import {
  boundClaim,
  getPod,
  markAttached,
  pod,
  podRunning,
  runNode,
  runRealRegistrar,
  serveScriptedNode,
  testServer,
} from "../../test/harness/node.ts";
import { attachmentName, KubeletPaths, sha256Hex, uniqueVolumeName } from "./index.ts";
import { reconstruct } from "./reconstruction.ts";
import { until } from "../../test/harness/until.ts";
import { defer, tempDir } from "../../test/harness/cleanup.ts";

const ALL = [
  "kubernetes.io/aws-ebs",
  "kubernetes.io/azure-disk",
  "kubernetes.io/azure-file",
  "kubernetes.io/cinder",
  "kubernetes.io/gce-pd",
  "kubernetes.io/portworx-volume",
  "kubernetes.io/vsphere-volume",
];

test("CSINode carries migrated-plugins from its creation; a restart with Portworx migration off drops it", async (t) => {
  const api = await testServer(t);
  const client = api.client();
  const root = await tempDir(t);
  const first = await runNode(t, client, { nodeName: "node-m", rootDir: root });
  const created = await client.get<CSINode>(GVR.csiNodes, "node-m");
  assert.equal(created.metadata?.annotations?.[MIGRATED_PLUGINS_ANNOTATION], ALL.join(","));
  await first.stop();

  await runNode(t, client, {
    nodeName: "node-m",
    rootDir: root,
    featureGates: resolveFeatureGates({ CSIMigrationPortworx: false }),
  });
  const updated = await client.get<CSINode>(GVR.csiNodes, "node-m");
  assert.equal(
    updated.metadata?.annotations?.[MIGRATED_PLUGINS_ANNOTATION],
    ALL.filter((p) => p !== "kubernetes.io/portworx-volume").join(","),
  );
});

test("a node is NotReady until its CSINode (with migrated-plugins) exists", async (t) => {
  const api = await testServer(t);
  const client = api.client();
  const root = await tempDir(t);
  // Watch every Node status write from the start: the first says NotReady, naming the CSINode.
  const seen: string[] = [];
  const watcher = new AbortController();
  defer(t, () => watcher.abort());
  const watching = (async () => {
    for await (const event of client.watch<Node>(GVR.nodes, {}, watcher.signal)) {
      const ready = event.object.status?.conditions?.find((c) => c.type === "Ready");
      if (ready) seen.push(`${ready.status}:${ready.message ?? ""}`);
    }
  })().catch(() => undefined);
  await runNode(t, client, { nodeName: "node-r", rootDir: root });
  await until(() => seen.some((s) => s.startsWith("True:")), "Ready True");
  watcher.abort();
  await watching;
  assert.equal(seen[0], "False:CSINode is not yet initialized");
  const first = seen.findIndex((s) => s.startsWith("True:"));
  assert.ok(first > 0);
});

const GCE = "pd.csi.storage.gke.io";
const NODE = "node-g";
const NS = "default";

async function json(path: string): Promise<unknown> {
  return JSON.parse(await readFile(path, "utf8"));
}

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}

test("in-tree GCE PD PV and inline volume: staged and published through the CSI driver, reconstructed as migrated", async (t) => {
  const api = await testServer(t);
  const client = api.client();
  const root = await tempDir(t);
  const paths = new KubeletPaths(root);
  const driverDir = await tempDir(t, "csikit-node-driver-");
  const endpoint = join(driverDir, "csi.sock");
  const scripted = await serveScriptedNode(t, {
    endpoint,
    nodeId: "gce-node",
    capabilities: ["STAGE_UNSTAGE_VOLUME"],
    name: GCE,
  });
  const node = await runNode(t, client, { nodeName: NODE, rootDir: root });
  await runRealRegistrar(t, client, { rootDir: root, nodeName: NODE, csiAddress: endpoint });

  const inTreePV: PersistentVolume = {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name: "pv-gce" },
    spec: {
      capacity: { storage: "1Mi" },
      accessModes: ["ReadWriteOnce"],
      persistentVolumeReclaimPolicy: "Retain",
      gcePersistentDisk: { pdName: "disk-1", fsType: "ext4" },
    },
  };
  await boundClaim(client, NS, "data", inTreePV);
  const created = await client.create(
    GVR.pods,
    pod(NS, "app", {
      nodeName: NODE,
      volumes: [
        { name: "vol", persistentVolumeClaim: { claimName: "data" } },
        { name: "inline", gcePersistentDisk: { pdName: "disk-2", fsType: "xfs" } },
      ],
    }),
  );
  const uid = created.metadata?.uid ?? "";
  const pvHandle = "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk-1";
  const inlineHandle = "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk-2";
  const inlineName = `${GCE}-disk-2`;

  // Both wait for their VolumeAttachments (named from the translated handles) before staging.
  await until(async () => {
    const inUse = (await client.get<Node>(GVR.nodes, NODE)).status?.volumesInUse ?? [];
    return (
      inUse.includes(uniqueVolumeName(GCE, pvHandle)) && inUse.includes(uniqueVolumeName(GCE, inlineHandle))
    );
  }, "volumesInUse");
  assert.equal(scripted.callsOf("NodeStageVolume").length, 0);
  await markAttached(client, {
    name: attachmentName(pvHandle, GCE, NODE),
    driver: GCE,
    pvName: "pv-gce",
    nodeName: NODE,
  });
  const inlineVA = attachmentName(inlineHandle, GCE, NODE);
  await client.create<VolumeAttachment>(GVR.volumeAttachments, {
    apiVersion: "storage.k8s.io/v1",
    kind: "VolumeAttachment",
    metadata: { name: inlineVA },
    spec: {
      attacher: GCE,
      nodeName: NODE,
      source: { inlineVolumeSpec: { csi: { driver: GCE, volumeHandle: inlineHandle } } },
    },
  });
  await client.patch(
    GVR.volumeAttachments,
    inlineVA,
    { status: { attached: true } },
    { subresource: "status" },
  );
  await until(() => podRunning(client, NS, "app"), "pod Running");

  // Staged at the kubelet's CSI staging paths with the translated handles and capabilities.
  const stages = new Map(scripted.callsOf("NodeStageVolume").map((c) => [c.request.volumeId, c.request]));
  assert.equal(
    stages.get(pvHandle)?.stagingTargetPath,
    join(root, "plugins/kubernetes.io/csi", GCE, sha256Hex(pvHandle), "globalmount"),
  );
  assert.deepEqual(stages.get(pvHandle)?.volumeCapability, {
    mount: { fsType: "ext4", mountFlags: [], volumeMountGroup: "" },
    accessMode: { mode: "SINGLE_NODE_WRITER" },
    accessType: "mount",
  });
  assert.deepEqual(stages.get(pvHandle)?.volumeContext, { partition: "" });
  assert.equal(
    stages.get(inlineHandle)?.stagingTargetPath,
    join(root, "plugins/kubernetes.io/csi", GCE, sha256Hex(inlineHandle), "globalmount"),
  );
  const publishes = new Map(
    scripted.callsOf("NodePublishVolume").map((c) => [c.request.volumeId, c.request]),
  );
  assert.equal(
    publishes.get(pvHandle)?.targetPath,
    join(root, "pods", uid, "volumes/kubernetes.io~csi/pv-gce/mount"),
  );
  assert.equal(
    publishes.get(inlineHandle)?.targetPath,
    join(root, "pods", uid, "volumes/kubernetes.io~csi", inlineName, "mount"),
  );
  // vol_data.json: the kubelet's keys, plus the migration record.
  assert.deepEqual(await json(join(paths.stagingDir(GCE, pvHandle), "vol_data.json")), {
    volumeHandle: pvHandle,
    driverName: GCE,
    migrated: "true",
    inTreePluginName: "kubernetes.io/gce-pd",
  });
  assert.deepEqual(await json(join(paths.podVolumeDir(uid, inlineName), "vol_data.json")), {
    specVolID: inlineName,
    volumeHandle: inlineHandle,
    driverName: GCE,
    nodeName: NODE,
    attachmentID: inlineVA,
    volumeLifecycleMode: "Persistent",
    migrated: "true",
    inTreePluginName: "kubernetes.io/gce-pd",
  });
  // The API keeps the in-tree shape.
  const pv = await client.get<PersistentVolume>(GVR.persistentVolumes, "pv-gce");
  assert.equal(pv.spec?.csi, undefined);
  assert.deepEqual(pv.spec?.gcePersistentDisk, { pdName: "disk-1", fsType: "ext4" });

  // Restart: reconstruction from the root dir knows both were mounted migrated, from which plugin.
  await node.stop();
  const actual = new ActualState();
  const found = await reconstruct(paths, actual, silentLogger);
  assert.deepEqual(found, { staged: 2, published: 2 });
  for (const entry of [...actual.staged.values(), ...actual.published.values()])
    assert.equal(entry.migratedFrom, "kubernetes.io/gce-pd", `${entry.uniqueName} reconstructed as migrated`);

  // The restarted node tears them down through the CSI driver once the pod goes.
  await runNode(t, client, { nodeName: NODE, rootDir: root });
  await client.delete(GVR.pods, "app", { namespace: NS });
  await until(async () => (await getPod(client, NS, "app")) === undefined, "pod gone");
  await until(() => scripted.callsOf("NodeUnstageVolume").length >= 2, "both unstaged");
  const unstaged = scripted.callsOf("NodeUnstageVolume").map((c) => c.request.volumeId);
  assert.deepEqual([...new Set(unstaged)].sort(), [pvHandle, inlineHandle].sort());
  await until(async () => !(await exists(paths.stagingDir(GCE, pvHandle))), "staging dirs removed");
  await until(async () => !(await exists(paths.podDir(uid))), "pod dir removed");
});
