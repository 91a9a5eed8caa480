// The chaos suite's invariant checker (chaos/invariants.ts) is itself tested: a clean state
// passes, and each seeded fault — a backend volume no PV names (a provisioner that forgot its
// CreateVolume), a PV whose claim is gone, an attachment no pod uses, a mount of a gone pod,
// a deleted object still there, an acknowledged claim replaced — is reported as what it is. The
// leak of a backend volume is also seeded for real: CreateVolume on a real hostpath driver with
// no PV, read back through the embedded API server and the driver's ListVolumes.

import assert from "node:assert/strict";
import { test } from "node:test";
import { GVR, type PersistentVolume, type PersistentVolumeClaim } from "../../src/api/index.ts";
import { CsiClient } from "../../src/csi/index.ts";
import { checkInvariants, collectState, type ClusterState, type RunIntent } from "../../chaos/invariants.ts";
import { defer, tempDir } from "../harness/cleanup.ts";
import { startHostpathProcess } from "../harness/csikit-process.ts";
import { startTestServer } from "../harness/kube-server.ts";

const POD_UID = "11111111-2222-3333-4444-555555555555";
const GONE_UID = "99999999-2222-3333-4444-555555555555";

function cleanState(): ClusterState {
  return {
    claims: [
      {
        metadata: { name: "data", namespace: "default", uid: "claim-uid" },
        spec: { volumeName: "pv-1" },
        status: { phase: "Bound", capacity: { storage: "2Mi" } },
      },
    ],
    volumes: [
      {
        metadata: { name: "pv-1" },
        spec: { csi: { driver: "d", volumeHandle: "vol-1" }, claimRef: { uid: "claim-uid", name: "data" } },
        status: { phase: "Bound" },
      },
    ],
    attachments: [
      {
        metadata: { name: "csi-1" },
        spec: { attacher: "d", nodeName: "node-1", source: { persistentVolumeName: "pv-1" } },
      },
    ],
    pods: [
      {
        metadata: { name: "app", namespace: "default", uid: POD_UID },
        spec: {
          nodeName: "node-1",
          containers: [],
          volumes: [{ name: "v", persistentVolumeClaim: { claimName: "data" } }],
        },
        status: { phase: "Running" },
      },
    ],
    snapshots: [
      { metadata: { name: "snap", uid: "snap-uid" }, spec: { source: {} }, status: { readyToUse: true } },
    ],
    contents: [
      {
        metadata: { name: "content-1" },
        spec: { volumeSnapshotRef: { uid: "snap-uid" }, driver: "d", deletionPolicy: "Delete", source: {} },
        status: { snapshotHandle: "snap-1" },
      },
    ],
    backendVolumes: ["vol-1"],
    backendSnapshots: ["snap-1"],
    mounts: [
      `/s/nodes/node-1/pods/${POD_UID}/volumes/kubernetes.io~csi/pv-1/mount`,
      "/s/nodes/node-1/plugins/kubernetes.io/csi/d/abc/globalmount",
    ],
  };
}

const intent: RunIntent = {
  namespace: "default",
  keptClaims: new Map([["data", "claim-uid"]]),
  keptPods: new Map([["app", POD_UID]]),
  keptSnapshots: ["snap"],
  grown: new Map([["data", 2 * 1024 * 1024]]),
  deletedClaims: ["old"],
  deletedPods: [],
  deletedSnapshots: [],
};

const whats = (state: ClusterState, want: RunIntent = intent) =>
  checkInvariants(state, want).map((v) => `${v.kind}: ${v.what}`);

test("a settled, consistent cluster has no violation", () => {
  assert.deepEqual(whats(cleanState()), []);
});

test("each seeded fault is reported as what it is, and only it", () => {
  const cases: [string, (s: ClusterState) => void, RegExp][] = [
    [
      "forgotten backend volume",
      (s) => s.backendVolumes.push("vol-orphan"),
      /^leak: backend volume vol-orphan: no PersistentVolume names it$/,
    ],
    [
      "forgotten backend snapshot",
      (s) => s.backendSnapshots.push("snap-orphan"),
      /^leak: backend snapshot snap-orphan/,
    ],
    [
      "backend volume gone",
      (s) => (s.backendVolumes = []),
      /^lost: PersistentVolume pv-1: its backend volume vol-1 is gone$/,
    ],
    [
      "PV without claim",
      (s) => (s.claims[0]!.metadata.uid = "other"),
      /leak: PersistentVolume pv-1 \(Bound\): its claim is gone/,
    ],
    [
      "attachment no pod uses",
      (s) => (s.pods[0]!.spec!.nodeName = "node-2"),
      /^leak: VolumeAttachment csi-1 \(pv-1 on node-1\): no pod uses it$/,
    ],
    [
      "mount of a gone pod",
      (s) => s.mounts.push(`/s/nodes/node-1/pods/${GONE_UID}/volumes/x/mount`),
      new RegExp(`^leak: mount .*: pod ${GONE_UID} is gone$`),
    ],
    [
      "deleted claim still there",
      (s) => s.claims.push({ metadata: { name: "old", uid: "u" }, status: { phase: "Bound" } }),
      /^stuck: old was deleted and still exists$/,
    ],
    ["claim replaced", (s) => (s.claims[0]!.metadata.uid = "new-uid"), /^lost: claim data was replaced/],
    [
      "growth not reported",
      (s) => (s.claims[0]!.status!.capacity = { storage: "1Mi" }),
      /^stuck: claim data reports 1Mi, asked to grow to 2097152 bytes$/,
    ],
    [
      "finalizer holding a deletion",
      (s) =>
        (s.volumes[0]!.metadata = {
          name: "pv-1",
          deletionTimestamp: "2026-11-28T00:00:00Z",
          finalizers: ["kubernetes.io/pv-protection"],
        }),
      /^stuck: .*pv-1 deleted at .*, held by kubernetes.io\/pv-protection$/,
    ],
  ];
  for (const [name, seed, expected] of cases) {
    const state = cleanState();
    seed(state);
    const found = whats(state);
    assert.ok(
      found.some((line) => expected.test(line)),
      `${name}: ${JSON.stringify(found)}`,
    );
  }
});

test("a volume a real driver created with no PV (a provisioner that forgot it) is reported until a PV names it", async (t) => {
  const dir = await tempDir(t, "csikit-chaos-inv-");
  const { socket } = await startHostpathProcess(t, dir);
  const server = await startTestServer();
  defer(t, () => server.stop());
  const client = server.client();
  defer(t, () => client.close());
  const csi = CsiClient.connect(`unix://${socket}`, { timeoutMs: 10_000 });
  defer(t, () => csi.close());
  const created = await csi.controller.createVolume({
    name: "forgotten",
    capacityRange: { requiredBytes: "1048576" },
    volumeCapabilities: [{ mount: {}, accessMode: { mode: "SINGLE_NODE_WRITER" } }],
  });
  const id = created.volume!.volumeId;
  const none: RunIntent = {
    ...intent,
    keptClaims: new Map(),
    keptPods: new Map(),
    keptSnapshots: [],
    grown: new Map(),
    deletedClaims: [],
  };
  const leaked = checkInvariants(await collectState(client, csi, []), none);
  assert.deepEqual(
    leaked.map((v) => `${v.kind}: ${v.what}`),
    [`leak: backend volume ${id}: no PersistentVolume names it`],
  );
  // Owned again: a bound claim and its PV naming the volume.
  const claim = await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
    metadata: { name: "owner", namespace: "default" },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Mi" } },
      storageClassName: "",
    },
  });
  await client.create<PersistentVolume>(GVR.persistentVolumes, {
    metadata: { name: "pv-owner" },
    spec: {
      capacity: { storage: "1Mi" },
      accessModes: ["ReadWriteOnce"],
      csi: { driver: "hostpath.csi.k8s.io", volumeHandle: id },
      claimRef: { name: "owner", namespace: "default", uid: claim.metadata.uid! },
    },
  });
  assert.deepEqual(checkInvariants(await collectState(client, csi, []), none), []);
});
