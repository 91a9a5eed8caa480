// CSI migration in the attach/detach controller against the real API server: migrated in-tree
// PVs get VolumeAttachments named from the translated source, inline in-tree volumes ones with
// `spec.source.inlineVolumeSpec`; the seed's decision cases from the controller's gates and the
// node's CSINode migrated-plugins annotation (Portworx, the one plugin with a gate at 1.32),
// including the error case; and the caveat: an in-tree detach deletes the VolumeAttachment a
// migrated attach made. The test plays the kubelet (CSINode), the PV controller and the attacher.

import { test } from "node:test";
import assert from "node:assert/strict";
import {
  GVR,
  type CSINode,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
} from "../../api/index.ts";
import type { KubeClient } from "../../kube/index.ts";
import { MIGRATED_PLUGINS_ANNOTATION, resolveFeatureGates } from "../../migration/index.ts";
import {
  attachment,
  boundVolume,
  createNode,
  podEvent,
  scheduledPod,
  setAttached,
  startEnv,
  volumesAttached,
} from "../../../test/harness/attachdetach.ts";
import { uniqueVolumeName, volumeAttachmentName } from "./index.ts";
import { until } from "../../../test/harness/until.ts";

const GCE = "pd.csi.storage.gke.io";
const PX = "pxd.portworx.com";
const PX_PLUGIN = "kubernetes.io/portworx-volume";

/** An in-tree PV (any in-tree source) bound to a claim of the same name in "default". */
async function boundInTreeVolume(
  client: KubeClient,
  name: string,
  source: Record<string, unknown>,
): Promise<void> {
  const claim = await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
    metadata: { name, namespace: "default" },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Mi" } },
      volumeName: `pv-${name}`,
      storageClassName: "",
    },
  });
  await client.updateStatus(GVR.persistentVolumeClaims, { ...claim, status: { phase: "Bound" } });
  await client.create(GVR.persistentVolumes, {
    metadata: { name: `pv-${name}` },
    spec: {
      capacity: { storage: "1Mi" },
      accessModes: ["ReadWriteOnce"],
      claimRef: { kind: "PersistentVolumeClaim", namespace: "default", name, uid: claim.metadata?.uid ?? "" },
      ...source,
    },
  });
}

/** The kubelet's CSINode, with the plugins it migrated (undefined: no annotation). */
async function csiNode(client: KubeClient, nodeName: string, migrated?: string[]): Promise<void> {
  await client.create<CSINode>(GVR.csiNodes, {
    metadata: {
      name: nodeName,
      ...(migrated ? { annotations: { [MIGRATED_PLUGINS_ANNOTATION]: migrated.join(",") } } : {}),
    },
    spec: { drivers: [] },
  });
}

test("a migrated in-tree PV and an inline in-tree volume attach through VolumeAttachments of the CSI driver", async (t) => {
  const { client, run } = await startEnv(t);
  await createNode(client, "node-m");
  await boundInTreeVolume(client, "legacy", { gcePersistentDisk: { pdName: "disk-1", fsType: "ext4" } });
  run();
  await scheduledPod(
    client,
    "app",
    "node-m",
    ["legacy"],
    [{ name: "inline", gcePersistentDisk: { pdName: "disk-2", readOnly: true } }],
  );
  // GCE PD migration is complete at 1.32: CSI on every node, CSINode or not.
  const pvHandle = "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk-1";
  const inlineHandle = "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk-2";
  const pvName = volumeAttachmentName(pvHandle, GCE, "node-m");
  const inlineName = volumeAttachmentName(inlineHandle, GCE, "node-m");
  const forPV = await until(() => attachment(client, pvName), "the PV's VolumeAttachment");
  assert.deepEqual(forPV.spec, {
    attacher: GCE,
    source: { persistentVolumeName: "pv-legacy" },
    nodeName: "node-m",
  });
  const forInline = await until(() => attachment(client, inlineName), "the inline volume's VolumeAttachment");
  assert.equal(forInline.spec.attacher, GCE);
  assert.equal(forInline.spec.source.persistentVolumeName, undefined);
  assert.deepEqual(forInline.spec.source.inlineVolumeSpec?.csi, {
    driver: GCE,
    volumeHandle: inlineHandle,
    readOnly: true,
    volumeAttributes: { partition: "" },
  });
  assert.deepEqual(forInline.spec.source.inlineVolumeSpec?.accessModes, ["ReadOnlyMany"]);
  // The PV keeps its in-tree shape.
  const pv = await client.get<PersistentVolume>(GVR.persistentVolumes, "pv-legacy");
  assert.equal(pv.spec?.csi, undefined);

  // Attached: node status reports the CSI unique names, and the pod hears of the inline one by its
  // translated name.
  await setAttached(client, pvName, { attached: true });
  await setAttached(client, inlineName, { attached: true });
  await until(
    async () => ((await volumesAttached(client, "node-m")).length === 2 ? true : undefined),
    "both in volumesAttached",
  );
  assert.deepEqual(await volumesAttached(client, "node-m"), [
    `${uniqueVolumeName(GCE, pvHandle)}|`,
    `${uniqueVolumeName(GCE, inlineHandle)}|`,
  ]);

  // Pod gone, nothing mounted: both detached (the inline one too, found from its spec alone).
  await client.delete(GVR.pods, "app", { namespace: "default" });
  await until(
    async () =>
      (await attachment(client, pvName)) === undefined && (await attachment(client, inlineName)) === undefined
        ? true
        : undefined,
    "both VolumeAttachments deleted",
  );
});

// The seed's "ADC and Kubelet CSI/In-tree Sync" cases, for a Portworx PV.
const DECISIONS: {
  name: string;
  adcMigration: boolean;
  csiNode: "none" | "without plugin" | "with plugin";
  expected: "csi" | "in-tree" | "error";
}[] = [
  { name: "no CSINode: old kubelet", adcMigration: true, csiNode: "none", expected: "in-tree" },
  { name: "CSINode without the plugin", adcMigration: true, csiNode: "without plugin", expected: "in-tree" },
  { name: "CSINode with the plugin", adcMigration: true, csiNode: "with plugin", expected: "csi" },
  {
    name: "kubelet migrated, controller not",
    adcMigration: false,
    csiNode: "with plugin",
    expected: "error",
  },
  { name: "neither migrated", adcMigration: false, csiNode: "without plugin", expected: "in-tree" },
];

for (const row of DECISIONS) {
  test(`decision: ${row.name} → ${row.expected}`, async (t) => {
    const { client, run } = await startEnv(t);
    await createNode(client, "node-d");
    if (row.csiNode !== "none")
      await csiNode(client, "node-d", row.csiNode === "with plugin" ? [PX_PLUGIN] : ["kubernetes.io/gce-pd"]);
    await boundInTreeVolume(client, "px", { portworxVolume: { volumeID: "px-1" } });
    // A CSI volume in the same pod: once its attachment exists, the Portworx one was decided too
    // (one pass creates a node's attachments together).
    await boundVolume(client, "marker", "marker-1");
    run({ featureGates: resolveFeatureGates({ CSIMigrationPortworx: row.adcMigration }) });
    await scheduledPod(client, "app", "node-d", ["px", "marker"]);
    await until(
      () => attachment(client, volumeAttachmentName("marker-1", "hostpath.csi.k8s.io", "node-d")),
      "the marker attachment",
    );
    const px = await attachment(client, volumeAttachmentName("px-1", PX, "node-d"));
    assert.equal(px !== undefined, row.expected === "csi", "Portworx VolumeAttachment exists iff CSI");
    if (px) assert.deepEqual(px.spec.source, { persistentVolumeName: "pv-px" });
    if (row.expected === "error") {
      const event = await podEvent(client, "app", "FailedAttachVolume");
      assert.equal(
        event.message,
        `AttachVolume.Attach failed for volume "px" : kubelet on node "node-d" migrated in-tree plugin ${PX_PLUGIN} to CSI (CSINode annotation storage.alpha.kubernetes.io/migrated-plugins) but CSI migration of that plugin is off in the attach/detach controller`,
      );
    }
  });
}

test("caveat: a volume attached migrated and then handled in-tree loses its VolumeAttachment", async (t) => {
  const { client, run } = await startEnv(t);
  await createNode(client, "node-c");
  await csiNode(client, "node-c", [PX_PLUGIN]);
  await boundInTreeVolume(client, "px", { portworxVolume: { volumeID: "px-9" } });
  run();
  await scheduledPod(client, "app", "node-c", ["px"]);
  const name = volumeAttachmentName("px-9", PX, "node-c");
  await until(() => attachment(client, name), "the migrated attachment");
  await setAttached(client, name, { attached: true });
  // The kubelet is un-migrated (downgrade without the drain the seed requires): the volume is now
  // the in-tree plugin's, and the attachment the migrated attach made must not be orphaned.
  const current = await client.get<CSINode>(GVR.csiNodes, "node-c");
  await client.update<CSINode>(GVR.csiNodes, {
    ...current,
    metadata: { ...current.metadata, annotations: {} },
  });
  await until(
    async () => ((await attachment(client, name)) === undefined ? true : undefined),
    "attachment deleted",
  );
  const pod = await client.get<Pod>(GVR.pods, "app", { namespace: "default" });
  assert.equal(pod.metadata?.deletionTimestamp, undefined, "the pod is still there");
});
