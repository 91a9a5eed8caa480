// The diagnosis rules on object fixtures, for what is cheaper to state than to build: a leader
// Lease still renewed versus expired (measured against the view's own clock), a node that is
// not Ready, a Lost claim, attachRequired false, a snapshot whose class is missing.

import assert from "node:assert/strict";
import { test } from "node:test";
import type {
  CSIDriver,
  Lease,
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  VolumeAttachment,
  VolumeSnapshot,
} from "../api/index.ts";
import { diagnose } from "./diagnose.ts";
import type { ClusterView, Link } from "./model.ts";

const NOW = "2026-01-01T12:00:00.000Z";
const DRIVER = "disk.csi.example.com";

const claim: PersistentVolumeClaim = {
  metadata: { name: "data", namespace: "default", uid: "c-1" },
  spec: { storageClassName: "fast", volumeName: "pv-1", resources: { requests: { storage: "1Gi" } } },
  status: { phase: "Bound", capacity: { storage: "1Gi" } },
};
const volume: PersistentVolume = {
  metadata: { name: "pv-1" },
  spec: {
    csi: { driver: DRIVER, volumeHandle: "h-1" },
    claimRef: { namespace: "default", name: "data", uid: "c-1" },
  },
  status: { phase: "Bound" },
};
const pod: Pod = {
  metadata: { name: "app", namespace: "default", uid: "p-1" },
  spec: {
    nodeName: "node-1",
    containers: [],
    volumes: [{ name: "d", persistentVolumeClaim: { claimName: "data" } }],
  },
  status: { phase: "Pending" },
};
const readyNode: Node = {
  metadata: { name: "node-1" },
  status: { conditions: [{ type: "Ready", status: "True" }] },
};
const attachment: VolumeAttachment = {
  metadata: { name: "csi-abc", finalizers: ["external-attacher/disk-csi-example-com"] },
  spec: { attacher: DRIVER, nodeName: "node-1", source: { persistentVolumeName: "pv-1" } },
  status: { attached: false },
};

function podView(overrides: Partial<ClusterView> = {}): ClusterView {
  return {
    now: NOW,
    target: { kind: "pod", name: "app", namespace: "default" },
    pod: { name: "app", namespace: "default", object: pod },
    podsUsingClaim: [pod],
    claim: { name: "data", namespace: "default", object: claim },
    volume: { name: "pv-1", object: volume },
    node: { name: "node-1", object: readyNode },
    nodes: [readyNode],
    csiNode: {
      name: "node-1",
      object: { metadata: { name: "node-1" }, spec: { drivers: [{ name: DRIVER, nodeID: "n1" }] } },
    },
    csiDriver: { name: DRIVER, object: { metadata: { name: DRIVER }, spec: {} } },
    attachment: { name: "csi-abc", object: attachment },
    secrets: [],
    leases: [],
    events: [],
    ...overrides,
  };
}

function firstNotDone(view: ClusterView): Link {
  const link = diagnose(view).links.find((l) => l.state !== "done");
  assert.ok(link, "a link not done");
  return link;
}

function attacherLease(renewTime: string): Lease {
  return {
    metadata: { name: "external-attacher-leader-disk-csi-example-com", namespace: "kube-system" },
    spec: { holderIdentity: "attacher-0", leaseDurationSeconds: 15, renewTime },
  };
}

test("attacher Lease renewed 5s ago: attach waits; renewed 60s ago (15s lease): the attacher is not running", () => {
  const fresh = firstNotDone(podView({ leases: [attacherLease("2026-01-01T11:59:55.000Z")] }));
  assert.equal(fresh.step, "attach");
  assert.equal(fresh.state, "waiting");
  assert.match(fresh.details.join("\n"), /held by attacher-0, renewed/);
  const stale = firstNotDone(podView({ leases: [attacherLease("2026-01-01T11:59:00.000Z")] }));
  assert.equal(stale.state, "failed");
  assert.match(
    stale.cause ?? "",
    /kube-system\/external-attacher-leader-disk-csi-example-com held by attacher-0 expired 45s ago/,
  );
  assert.equal(stale.responsible?.finalizer, "external-attacher/disk-csi-example-com");
});

test("attachRequired false: attach is done without a VolumeAttachment; the pod then waits for the kubelet", () => {
  const csiDriver: CSIDriver = { metadata: { name: DRIVER }, spec: { attachRequired: false } };
  const { attachment: _unused, ...withoutAttachment } = podView({
    csiDriver: { name: DRIVER, object: csiDriver },
  });
  const diagnosis = diagnose(withoutAttachment);
  assert.deepEqual(diagnosis.links.map((l) => [l.step, l.state]).slice(-2), [
    ["attach", "done"],
    ["mount", "waiting"],
  ]);
});

test("a node that is not Ready stops the chain at the node, with the kubelet's message", () => {
  const notReady = {
    metadata: { name: "node-1" },
    status: {
      conditions: [{ type: "Ready", status: "Unknown", message: "Kubelet stopped posting node status." }],
    },
  } as Node;
  const link = firstNotDone(podView({ node: { name: "node-1", object: notReady } }));
  assert.equal(link.step, "node");
  assert.match(link.cause ?? "", /Kubelet stopped posting node status/);
});

test("a Lost claim fails at the claim", () => {
  const lost: PersistentVolumeClaim = { ...claim, status: { phase: "Lost" } };
  const { volume: _unused, ...view } = podView({
    claim: { name: "data", namespace: "default", object: lost },
  });
  const link = firstNotDone(view);
  assert.equal(link.step, "claim");
  assert.match(link.cause ?? "", /Lost: its volume pv-1 no longer exists/);
});

test("a snapshot whose class does not exist fails at snapshot-class", () => {
  const snapshot: VolumeSnapshot = {
    metadata: { name: "s", namespace: "default", uid: "s-1" },
    spec: { source: { persistentVolumeClaimName: "data" }, volumeSnapshotClassName: "gone" },
  };
  const link = firstNotDone({
    now: NOW,
    target: { kind: "volumesnapshot", name: "s", namespace: "default" },
    snapshot: { name: "s", namespace: "default", object: snapshot },
    snapshotClass: { name: "gone" },
    claim: { name: "data", namespace: "default", object: claim },
    podsUsingClaim: [],
    nodes: [],
    secrets: [],
    leases: [],
    events: [],
  });
  assert.equal(link.step, "snapshot-class");
  assert.match(link.cause ?? "", /volumesnapshotclass\.snapshot\.storage\.k8s\.io "gone" not found/);
});
