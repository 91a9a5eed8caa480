// The pure checks, as tables: seeded inputs → findings (kind, object, fix or report-only).

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, test } from "node:test";
import type {
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  VolumeAttachment,
  VolumeSnapshot,
  VolumeSnapshotContent,
} from "../api/index.ts";
import { translateInTreePVToCSI } from "../migration/index.ts";
import { diagnose } from "./diagnose.ts";
import { ownerOfPath } from "./check-node-root.ts";
import type { BackendState, ClusterState, DoctorInputs, Finding } from "./types.ts";

const DRIVER = "hostpath.csi.k8s.io";
const NOW = Date.parse("2026-01-01T01:00:00Z");
const LONG_AGO = "2026-01-01T00:00:00Z";

function pv(
  name: string,
  handle: string,
  extra: Partial<PersistentVolume["metadata"]> = {},
  spec = {},
): PersistentVolume {
  return {
    metadata: { name, uid: `uid-${name}`, ...extra },
    spec: { csi: { driver: DRIVER, volumeHandle: handle }, ...spec },
  };
}

function pvc(
  name: string,
  extra: Partial<PersistentVolumeClaim["metadata"]> = {},
  phase: "Pending" | "Bound" = "Bound",
): PersistentVolumeClaim {
  return {
    metadata: { name, namespace: "default", uid: `uid-${name}`, ...extra },
    spec: {},
    status: { phase },
  };
}

function pod(name: string, claim: string, phase: NonNullable<Pod["status"]>["phase"] = "Running"): Pod {
  return {
    metadata: { name, namespace: "default", uid: `uid-${name}` },
    spec: { containers: [], volumes: [{ name: "v", persistentVolumeClaim: { claimName: claim } }] },
    status: { phase },
  };
}

function va(
  name: string,
  node: string,
  pvName: string,
  extra: Partial<VolumeAttachment["metadata"]> = {},
): VolumeAttachment {
  return {
    metadata: { name, uid: `uid-${name}`, ...extra },
    spec: { attacher: DRIVER, nodeName: node, source: { persistentVolumeName: pvName } },
  };
}

const node = (name: string): Node => ({ metadata: { name } });

function cluster(parts: Partial<ClusterState>): ClusterState {
  return {
    persistentVolumes: [],
    persistentVolumeClaims: [],
    pods: [],
    nodes: [],
    volumeAttachments: [],
    ...parts,
  };
}

function backend(volumes: string[], extra: Partial<BackendState> = {}): BackendState {
  return {
    driverName: DRIVER,
    volumes: volumes.map((volumeId) => ({ volume: { volumeId } as never, status: null })),
    publishedNodes: false,
    ...extra,
  };
}

function run(parts: Partial<DoctorInputs> & { cluster: ClusterState }): Finding[] {
  return diagnose({ nodeRoots: [], now: NOW, minAgeMs: 60_000, ...parts });
}

/** "kind object fix|manual" per finding, for compact assertions. */
function summary(findings: Finding[]): string[] {
  return findings.map((f) => `${f.kind} ${f.object} ${f.fix ? `fix:${f.fix.action.type}` : "manual"}`);
}

const deleting = { deletionTimestamp: LONG_AGO };

describe("backend checks", () => {
  test("a listed volume no PV names → orphan-volume with DeleteVolume; a named one → nothing", () => {
    const findings = run({
      cluster: cluster({ persistentVolumes: [pv("pv-a", "vol-a")] }),
      backend: backend(["vol-a", "vol-leak"]),
    });
    assert.deepEqual(summary(findings), ["orphan-volume backend volume vol-leak fix:delete-volume"]);
  });

  test("a claim still being provisioned withholds the DeleteVolume (the volume may be its)", () => {
    const provisioning = pvc(
      "c",
      { annotations: { "volume.kubernetes.io/storage-provisioner": DRIVER } },
      "Pending",
    );
    const inFlight = pvc("d", { finalizers: ["provisioner.csikit.io/volume-in-flight"] });
    for (const claim of [provisioning, inFlight]) {
      const findings = run({
        cluster: cluster({ persistentVolumeClaims: [claim] }),
        backend: backend(["vol-leak"]),
      });
      assert.deepEqual(summary(findings), ["orphan-volume backend volume vol-leak manual"]);
    }
  });

  test("a PV of another driver does not protect a volume of ours; a PV whose volume is not listed → volume-missing, report-only", () => {
    const other = pv("pv-o", "vol-x", {}, { csi: { driver: "other.csi", volumeHandle: "vol-x" } });
    const findings = run({
      cluster: cluster({ persistentVolumes: [other, pv("pv-gone", "vol-gone")] }),
      backend: backend(["vol-x"]),
    });
    assert.deepEqual(summary(findings), [
      "orphan-volume backend volume vol-x fix:delete-volume",
      "volume-missing PersistentVolume pv-gone manual",
    ]);
  });

  test("an in-tree PV migrated to the driver and a pod's inline CSI volume name their volumes too", () => {
    const gce = "pd.csi.storage.gke.io";
    const inTree: PersistentVolume = {
      metadata: { name: "pv-gce", labels: { "topology.kubernetes.io/zone": "us-east1-b" } },
      spec: { gcePersistentDisk: { pdName: "disk-1" }, accessModes: ["ReadWriteOnce"] },
    };
    const handle = translateInTreePVToCSI(inTree).spec!.csi!.volumeHandle;
    const inline: Pod = {
      metadata: { name: "p", namespace: "default", uid: "pod-uid" },
      spec: { containers: [], volumes: [{ name: "scratch", csi: { driver: gce } }] },
    };
    const inlineHandle = `csi-${createHash("sha256")
      .update("pod-uid" + "scratch")
      .digest("hex")}`;
    const findings = run({
      cluster: cluster({ persistentVolumes: [inTree], pods: [inline] }),
      backend: { ...backend([handle, inlineHandle, "leak"]), driverName: gce },
    });
    assert.deepEqual(summary(findings), ["orphan-volume backend volume leak fix:delete-volume"]);
  });

  test("a driver that cannot list volumes → no volume findings at all", () => {
    const findings = run({
      cluster: cluster({ persistentVolumes: [pv("pv-a", "vol-a")] }),
      backend: { driverName: DRIVER, publishedNodes: false },
    });
    assert.deepEqual(findings, []);
  });

  test("snapshots: unnamed → DeleteSnapshot; without CRDs, while a content is being created, or in a group → report-only", () => {
    const snap = (snapshotId: string, groupSnapshotId = "") =>
      ({ snapshotId, sourceVolumeId: "vol-a", groupSnapshotId }) as never;
    const content = (name: string, handle?: string): VolumeSnapshotContent => ({
      metadata: { name },
      spec: {
        driver: DRIVER,
        deletionPolicy: "Delete",
        source: { volumeHandle: "vol-a" },
        volumeSnapshotRef: { namespace: "default", name: "s", uid: "u" },
      },
      ...(handle ? { status: { snapshotHandle: handle } } : {}),
    });
    const state = backend(["vol-a"], {
      snapshots: [snap("snap-kept"), snap("snap-leak"), snap("snap-group", "g1")],
    });
    const pvs = [pv("pv-a", "vol-a")];
    const base = { persistentVolumes: pvs, volumeSnapshots: [] };
    assert.deepEqual(
      summary(
        run({
          cluster: cluster({ ...base, volumeSnapshotContents: [content("c1", "snap-kept")] }),
          backend: state,
        }),
      ),
      [
        "orphan-snapshot backend snapshot snap-leak fix:delete-snapshot",
        "orphan-snapshot backend snapshot snap-group manual",
      ],
    );
    const creating = [content("c1", "snap-kept"), content("c2")];
    assert.deepEqual(
      summary(run({ cluster: cluster({ ...base, volumeSnapshotContents: creating }), backend: state })).slice(
        0,
        1,
      ),
      ["orphan-snapshot backend snapshot snap-leak manual"],
    );
    assert.deepEqual(summary(run({ cluster: cluster({ persistentVolumes: pvs }), backend: state })), [
      "orphan-snapshot backend snapshot snap-kept manual",
      "orphan-snapshot backend snapshot snap-leak manual",
      "orphan-snapshot backend snapshot snap-group manual",
    ]);
  });
});

describe("attachments", () => {
  test("a VolumeAttachment to a deleted node → deleted as the attach/detach controller would; to a live node → nothing", () => {
    const findings = run({
      cluster: cluster({
        nodes: [node("n1")],
        volumeAttachments: [va("va-live", "n1", "pv"), va("va-gone", "n2", "pv")],
      }),
    });
    assert.deepEqual(summary(findings), [
      "attachment-to-deleted-node VolumeAttachment va-gone fix:delete-object",
    ]);
  });

  test("a deleted one held by the attacher: fix only when the backend confirms the volume is not published there", () => {
    const held = va("va-held", "n2", "pv-a", {
      ...deleting,
      finalizers: ["external-attacher/hostpath-csi-k8s-io"],
      annotations: { "csi.alpha.kubernetes.io/node-id": "node-id-2" },
    });
    const state = cluster({ persistentVolumes: [pv("pv-a", "vol-a")], volumeAttachments: [held] });
    const published = (nodes: string[]): BackendState => ({
      driverName: DRIVER,
      publishedNodes: true,
      volumes: [
        {
          volume: { volumeId: "vol-a" } as never,
          status: { publishedNodeIds: nodes, volumeCondition: null },
        },
      ],
    });
    assert.deepEqual(summary(run({ cluster: state })), ["stuck-finalizer VolumeAttachment va-held manual"]);
    assert.deepEqual(summary(run({ cluster: state, backend: published(["node-id-2"]) })), [
      "stuck-finalizer VolumeAttachment va-held manual",
    ]);
    assert.deepEqual(summary(run({ cluster: state, backend: published([]) })), [
      "stuck-finalizer VolumeAttachment va-held fix:remove-finalizer",
    ]);
  });
});

describe("finalizers", () => {
  test("pvc-protection: released when no running pod uses the claim; an ended pod does not hold it", () => {
    const claim = pvc("data", { ...deleting, finalizers: ["kubernetes.io/pvc-protection"] });
    assert.deepEqual(
      summary(
        run({ cluster: cluster({ persistentVolumeClaims: [claim], pods: [pod("p", "data", "Succeeded")] }) }),
      ),
      ["stuck-finalizer PersistentVolumeClaim default/data fix:remove-finalizer"],
    );
    assert.deepEqual(
      summary(run({ cluster: cluster({ persistentVolumeClaims: [claim], pods: [pod("p", "data")] }) })),
      ["stuck-finalizer PersistentVolumeClaim default/data manual"],
    );
  });

  test("a deletion younger than --min-age is in progress: no finding", () => {
    const claim = pvc("data", {
      deletionTimestamp: new Date(NOW - 5000).toISOString(),
      finalizers: ["kubernetes.io/pvc-protection"],
    });
    assert.deepEqual(run({ cluster: cluster({ persistentVolumeClaims: [claim] }) }), []);
  });

  test("csikit's in-flight mark is never removed by doctor; unknown finalizers are left alone", () => {
    const claim = pvc("data", {
      ...deleting,
      finalizers: ["provisioner.csikit.io/volume-in-flight", "example.com/mine"],
    });
    assert.deepEqual(summary(run({ cluster: cluster({ persistentVolumeClaims: [claim] }) })), [
      "stuck-finalizer PersistentVolumeClaim default/data manual",
    ]);
  });

  test("provisioner finalizer: removed for Retain or a confirmed-gone volume, kept while the volume exists or cannot be checked", () => {
    const fin = { ...deleting, finalizers: ["external-provisioner.volume.kubernetes.io/finalizer"] };
    const del = pv("pv-d", "vol-d", fin, { persistentVolumeReclaimPolicy: "Delete" });
    const ret = pv("pv-r", "vol-r", fin, { persistentVolumeReclaimPolicy: "Retain" });
    const state = cluster({ persistentVolumes: [del, ret] });
    assert.deepEqual(summary(run({ cluster: state })), [
      "stuck-finalizer PersistentVolume pv-d manual",
      "stuck-finalizer PersistentVolume pv-r fix:remove-finalizer",
    ]);
    assert.deepEqual(summary(run({ cluster: state, backend: backend(["vol-d", "vol-r"]) })), [
      "stuck-finalizer PersistentVolume pv-d manual",
      "stuck-finalizer PersistentVolume pv-r fix:remove-finalizer",
    ]);
    assert.deepEqual(summary(run({ cluster: state, backend: backend(["vol-r"]) })), [
      "stuck-finalizer PersistentVolume pv-d fix:remove-finalizer",
      "stuck-finalizer PersistentVolume pv-r fix:remove-finalizer",
    ]);
  });

  test("pv-protection and attacher finalizers on a PV: removed once the claim / every attachment is gone", () => {
    const held = pv(
      "pv-a",
      "vol-a",
      {
        ...deleting,
        finalizers: ["kubernetes.io/pv-protection", "external-attacher/hostpath-csi-k8s-io"],
      },
      { claimRef: { namespace: "default", name: "data", uid: "uid-data" } },
    );
    assert.deepEqual(summary(run({ cluster: cluster({ persistentVolumes: [held] }) })), [
      "stuck-finalizer PersistentVolume pv-a fix:remove-finalizer",
      "stuck-finalizer PersistentVolume pv-a fix:remove-finalizer",
    ]);
    const still = cluster({
      persistentVolumes: [held],
      persistentVolumeClaims: [pvc("data")],
      nodes: [node("n1")],
      volumeAttachments: [va("va", "n1", "pv-a")],
    });
    assert.deepEqual(summary(run({ cluster: still })), [
      "stuck-finalizer PersistentVolume pv-a manual",
      "stuck-finalizer PersistentVolume pv-a manual",
    ]);
  });

  test("snapshot finalizers: bound protection follows its content; as-source follows pending restores; content follows its snapshot and backend", () => {
    const snapshot: VolumeSnapshot = {
      metadata: {
        name: "s",
        namespace: "default",
        uid: "uid-s",
        ...deleting,
        finalizers: [
          "snapshot.storage.kubernetes.io/volumesnapshot-bound-protection",
          "snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection",
        ],
      },
      spec: { source: { persistentVolumeClaimName: "data" } },
      status: { boundVolumeSnapshotContentName: "c" },
    };
    const restore = pvc("restore", {}, "Pending");
    restore.spec = { dataSource: { kind: "VolumeSnapshot", name: "s", apiGroup: "snapshot.storage.k8s.io" } };
    assert.deepEqual(
      summary(
        run({
          cluster: cluster({
            volumeSnapshots: [snapshot],
            volumeSnapshotContents: [],
            persistentVolumeClaims: [restore],
          }),
        }),
      ),
      [
        "stuck-finalizer VolumeSnapshot default/s fix:remove-finalizer",
        "stuck-finalizer VolumeSnapshot default/s manual",
      ],
    );
    const content: VolumeSnapshotContent = {
      metadata: {
        name: "c",
        uid: "uid-c",
        ...deleting,
        finalizers: ["snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"],
      },
      spec: {
        driver: DRIVER,
        deletionPolicy: "Delete",
        source: { volumeHandle: "vol-a" },
        volumeSnapshotRef: { namespace: "default", name: "s", uid: "uid-gone" },
      },
      status: { snapshotHandle: "snap-1" },
    };
    const state = cluster({ volumeSnapshots: [], volumeSnapshotContents: [content] });
    assert.deepEqual(summary(run({ cluster: state })), ["stuck-finalizer VolumeSnapshotContent c manual"]);
    assert.deepEqual(
      summary(
        run({ cluster: state, backend: backend([], { snapshots: [{ snapshotId: "snap-1" } as never] }) }),
      ),
      ["stuck-finalizer VolumeSnapshotContent c manual"],
    );
    assert.deepEqual(summary(run({ cluster: state, backend: backend([], { snapshots: [] }) })), [
      "stuck-finalizer VolumeSnapshotContent c fix:remove-finalizer",
    ]);
  });
});

describe("node roots", () => {
  const root = "/var/lib/kubelet";
  const sha = createHash("sha256").update("vol-a").digest("hex");

  test("ownerOfPath reads the kubelet layout", () => {
    assert.deepEqual(ownerOfPath(root, `${root}/pods/u1/volumes/kubernetes.io~csi/v/mount`), {
      kind: "pod",
      uid: "u1",
    });
    assert.deepEqual(ownerOfPath(root, `${root}/plugins/kubernetes.io/csi/volumeDevices/publish/pv-a/u2`), {
      kind: "pod",
      uid: "u2",
    });
    assert.deepEqual(ownerOfPath(root, `${root}/plugins/kubernetes.io/csi/volumeDevices/staging/pv-a`), {
      kind: "pv",
      name: "pv-a",
    });
    assert.deepEqual(ownerOfPath(root, `${root}/plugins/kubernetes.io/csi/${DRIVER}/${sha}/globalmount`), {
      kind: "staging",
      driver: DRIVER,
      sha,
    });
    assert.equal(ownerOfPath(root, `${root}/plugins_registry/x.sock`), undefined);
    assert.equal(ownerOfPath(root, "/elsewhere/pods/u1/volumes/x"), undefined);
  });

  test("mounts and loops: a live pod's or PV's are kept; the rest unmounted deepest first, then loops detached", () => {
    const mounts = [
      {
        mountPoint: `${root}/pods/dead/volumes/kubernetes.io~csi/v/mount`,
        source: "/dev/sda",
        fsType: "ext4",
      },
      {
        mountPoint: `${root}/pods/dead/volumes/kubernetes.io~csi/v/mount/nested`,
        source: "/dev/sda",
        fsType: "ext4",
      },
      {
        mountPoint: `${root}/pods/uid-live/volumes/kubernetes.io~csi/v/mount`,
        source: "/dev/sda",
        fsType: "ext4",
      },
      {
        mountPoint: `${root}/plugins/kubernetes.io/csi/${DRIVER}/${sha}/globalmount`,
        source: "/dev/sda",
        fsType: "ext4",
      },
      {
        mountPoint: `${root}/plugins/kubernetes.io/csi/${DRIVER}/${"0".repeat(64)}/globalmount`,
        source: "/dev/sda",
        fsType: "ext4",
      },
    ];
    const loops = [
      {
        device: "/dev/loop7",
        backingFile: `${root}/plugins/kubernetes.io/csi/volumeDevices/publish/pv-a/dead`,
      },
      {
        device: "/dev/loop8",
        backingFile: `${root}/plugins/kubernetes.io/csi/volumeDevices/publish/pv-a/uid-live`,
      },
      { device: "/dev/loop9", backingFile: `${root}/pods/uid-live/x (deleted)` },
    ];
    const findings = run({
      cluster: cluster({ pods: [pod("live", "data")], persistentVolumes: [pv("pv-a", "vol-a")] }),
      nodeRoots: [{ root, mounts, loops }],
    });
    assert.deepEqual(summary(findings), [
      `orphan-mount mount ${root}/pods/dead/volumes/kubernetes.io~csi/v/mount/nested fix:unmount`,
      `orphan-mount mount ${root}/pods/dead/volumes/kubernetes.io~csi/v/mount fix:unmount`,
      `orphan-mount mount ${root}/plugins/kubernetes.io/csi/${DRIVER}/${"0".repeat(64)}/globalmount fix:unmount`,
      "orphan-loop-device loop device /dev/loop7 fix:detach-loop",
      "orphan-loop-device loop device /dev/loop9 fix:detach-loop",
    ]);
  });
});
