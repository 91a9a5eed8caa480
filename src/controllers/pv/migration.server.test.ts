// The PV controller's CSI migration (seed 001, "Persistent Volume Controller") against the real
// API server: a claim of a migrated in-tree class is handed to the CSI driver (both
// storage-provisioner annotations and migrated-to); a volume provisioned in-tree before the
// switch gets migrated-to so the external provisioner takes it over, and the controller leaves
// its deletion to that provisioner; rollback (controllers restarted with the plugin's migration
// off) removes migrated-to from claims and volumes again. Portworx is the plugin: at 1.32 it is
// the only one whose migration can still be turned off.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { ANNOTATIONS, GVR, type PersistentVolume, type PersistentVolumeClaim } from "../../api/index.ts";
import type { KubeClient } from "../../kube/index.ts";
import { resolveFeatureGates } from "../../migration/index.ts";
import {
  NS,
  eventsFor,
  pv,
  pvc,
  runLoops,
  startTestServer,
  storageClass,
  waitClaimBound,
  type TestServer,
} from "../../../test/harness/controllers.ts";
import { until } from "../../../test/harness/until.ts";

const PX_PLUGIN = "kubernetes.io/portworx-volume";
const PX_DRIVER = "pxd.portworx.com";
const MIGRATED_TO = ANNOTATIONS.migratedTo.key;
const STORAGE_PROVISIONER = ANNOTATIONS.storageProvisioner.key;
const BETA_STORAGE_PROVISIONER = ANNOTATIONS.betaStorageProvisioner.key;

let env: TestServer;
let client: KubeClient;

before(async () => {
  env = await startTestServer();
  client = env.client();
});
after(async () => {
  await env?.stop();
});

function annotationsOf(object: { metadata?: { annotations?: Record<string, string> } } | undefined) {
  return object?.metadata?.annotations ?? {};
}

test("migration on: claims go to the CSI driver, in-tree volumes get migrated-to; off again: it is removed", async () => {
  await client.create(GVR.storageClasses, storageClass("px", { provisioner: PX_PLUGIN }));
  // A volume the in-tree plugin provisioned before migration, bound to its claim.
  await client.create(
    GVR.persistentVolumeClaims,
    pvc(
      "old-claim",
      { storageClassName: "px", volumeName: "old-px" },
      { annotations: { [STORAGE_PROVISIONER]: PX_PLUGIN } },
    ),
  );
  const old: PersistentVolume = pv(
    "old-px",
    {
      storageClassName: "px",
      persistentVolumeReclaimPolicy: "Delete",
      portworxVolume: { volumeID: "px-1" },
      claimRef: { namespace: NS, name: "old-claim" },
    },
    { annotations: { [ANNOTATIONS.provisionedBy.key]: PX_PLUGIN } },
  );
  delete old.spec!.csi;
  await client.create(GVR.persistentVolumes, old);

  const on = runLoops(client, {
    knobs: { pvClaimBinderSyncPeriodMs: 300, featureGates: resolveFeatureGates({}) },
  });
  try {
    await client.create(GVR.persistentVolumeClaims, pvc("new-claim", { storageClassName: "px" }));
    const handed = await until(async () => {
      const claim = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "new-claim", {
        namespace: NS,
      });
      return annotationsOf(claim)[STORAGE_PROVISIONER] === PX_DRIVER ? claim : undefined;
    }, "new claim handed to the CSI driver");
    assert.equal(annotationsOf(handed)[BETA_STORAGE_PROVISIONER], PX_DRIVER);
    assert.equal(annotationsOf(handed)[MIGRATED_TO], PX_DRIVER);
    const events = await until(async () => {
      const list = await eventsFor(client, "new-claim");
      return list.some((e) => e.reason === "ExternalProvisioning") ? list : undefined;
    }, "ExternalProvisioning event");
    assert.match(
      events.find((e) => e.reason === "ExternalProvisioning")!.message ?? "",
      /'pxd\.portworx\.com'/,
    );

    await waitClaimBound(client, "old-claim");
    await until(
      async () =>
        annotationsOf(await client.get<PersistentVolume>(GVR.persistentVolumes, "old-px"))[MIGRATED_TO] ===
        PX_DRIVER,
      "old volume gets migrated-to",
    );
    await until(
      async () =>
        annotationsOf(
          await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "old-claim", { namespace: NS }),
        )[MIGRATED_TO] === PX_DRIVER,
      "old claim gets migrated-to",
    );
  } finally {
    await on.stop();
  }

  // Rollback: the same objects under controllers with Portworx migration off.
  const off = runLoops(client, {
    knobs: {
      pvClaimBinderSyncPeriodMs: 300,
      featureGates: resolveFeatureGates({ CSIMigrationPortworx: false }),
    },
  });
  try {
    for (const [gvr, name, namespace] of [
      [GVR.persistentVolumes, "old-px", undefined],
      [GVR.persistentVolumeClaims, "old-claim", NS],
      [GVR.persistentVolumeClaims, "new-claim", NS],
    ] as const)
      await until(async () => {
        const object = await client.get<PersistentVolume>(
          gvr,
          name,
          namespace !== undefined ? { namespace } : {},
        );
        return annotationsOf(object)[MIGRATED_TO] === undefined;
      }, `${name} loses migrated-to`);
    // The volume is still bound and usable: nothing but the annotation changed.
    const volume = await client.get<PersistentVolume>(GVR.persistentVolumes, "old-px");
    assert.equal(volume.status?.phase, "Bound");
    assert.deepEqual(volume.spec?.portworxVolume, { volumeID: "px-1" });
  } finally {
    await off.stop();
  }
});

test("a released migrated volume is left to the CSI driver's provisioner to delete", async () => {
  await client.create(GVR.storageClasses, storageClass("px-del", { provisioner: PX_PLUGIN }));
  const volume = pv(
    "gone-claim-px",
    {
      storageClassName: "px-del",
      persistentVolumeReclaimPolicy: "Delete",
      portworxVolume: { volumeID: "px-2" },
      claimRef: { namespace: NS, name: "never-there", uid: "00000000-0000-0000-0000-000000000001" },
    },
    { annotations: { [ANNOTATIONS.provisionedBy.key]: PX_PLUGIN } },
  );
  delete volume.spec!.csi;
  await client.create(GVR.persistentVolumes, volume);
  const loops = runLoops(client, { knobs: { pvClaimBinderSyncPeriodMs: 300 } });
  try {
    const released = await until(async () => {
      const current = await client.get<PersistentVolume>(GVR.persistentVolumes, "gone-claim-px");
      return current.status?.phase === "Released" && annotationsOf(current)[MIGRATED_TO] === PX_DRIVER
        ? current
        : undefined;
    }, "volume Released with migrated-to");
    assert.equal(released.status?.phase, "Released");
    // Several resyncs (300 ms each) later it is still Released, not Failed with "no volume plugin
    // matched": an absence, which only a bounded wait can show.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const later = await client.get<PersistentVolume>(GVR.persistentVolumes, "gone-claim-px");
    assert.equal(later.status?.phase, "Released");
    const events = await eventsFor(client, "gone-claim-px");
    assert.ok(!events.some((e) => e.reason === "VolumeFailedDelete"), JSON.stringify(events));
  } finally {
    await loops.stop();
  }
});
