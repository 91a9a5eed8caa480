// Desired state of a node as a table: bound CSI claims of live pods, shared volumes once,
// attachRequired false and inline volumes skipped, terminated pods ignored.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { CSIDriver, PersistentVolume, PersistentVolumeClaim, Pod } from "../../api/index.ts";
import { desiredVolumes, podTerminated, type DesiredLookups } from "./desired.ts";
import { attachMessage, volumeAttachmentName } from "./names.ts";

function pod(name: string, claims: string[], status: Pod["status"] = {}, deleting = false): Pod {
  return {
    metadata: { name, namespace: "ns", ...(deleting ? { deletionTimestamp: "2024-01-01T00:00:00Z" } : {}) },
    spec: {
      nodeName: "n",
      containers: [],
      volumes: [
        ...claims.map((c) => ({ name: c, persistentVolumeClaim: { claimName: c } })),
        { name: "inline", csi: { driver: "d" } },
      ],
    },
    status,
  };
}

function lookups(pods: Pod[], drivers: CSIDriver[] = []): DesiredLookups {
  const claims: PersistentVolumeClaim[] = ["c1", "c2", "c3", "pending"].map((name) => ({
    metadata: { name, namespace: "ns", uid: name },
    spec: name === "pending" ? {} : { volumeName: `pv-${name}` },
    status: { phase: name === "pending" ? "Pending" : "Bound" },
  }));
  const volumes: PersistentVolume[] = ["c1", "c2", "c3"].map((name) => ({
    metadata: { name: `pv-${name}` },
    spec: {
      claimRef: { name, namespace: "ns", uid: name },
      csi: { driver: name === "c3" ? "no-attach" : "d", volumeHandle: `h-${name}` },
    },
  }));
  return {
    podsOnNode: () => pods,
    claim: (key) => claims.find((c) => `${c.metadata?.namespace}/${c.metadata?.name}` === key),
    volume: (name) => volumes.find((v) => v.metadata?.name === name),
    csiDriver: (name) => drivers.find((d) => d.metadata?.name === name),
  };
}

test("desired volumes of a node", () => {
  const noAttach: CSIDriver = { metadata: { name: "no-attach" }, spec: { attachRequired: false } };
  const desired = desiredVolumes(
    "n",
    lookups(
      [pod("p1", ["c1", "c3", "pending"]), pod("p2", ["c1"]), pod("done", ["c2"], { phase: "Succeeded" })],
      [noAttach],
    ),
  );
  assert.deepEqual([...desired.keys()], [volumeAttachmentName("h-c1", "d", "n")]);
  const entry = desired.get(volumeAttachmentName("h-c1", "d", "n"));
  assert.equal(entry?.uniqueName, "kubernetes.io/csi/d^h-c1");
  assert.equal(entry?.persistentVolumeName, "pv-c1");
  assert.deepEqual(
    entry?.pods.map((p) => p.metadata?.name),
    ["p1", "p2"],
  );
});

test("terminated pods: finished, or deleting with nothing running", () => {
  assert.equal(podTerminated(pod("a", [], { phase: "Failed" })), true);
  assert.equal(podTerminated(pod("b", [], { phase: "Running" })), false);
  assert.equal(podTerminated(pod("c", [], {}, true)), true);
  assert.equal(
    podTerminated(
      pod(
        "d",
        [],
        { containerStatuses: [{ name: "c", ready: true, restartCount: 0, state: { running: {} } }] },
        true,
      ),
    ),
    false,
  );
});

test("upstream event messages", () => {
  assert.equal(
    attachMessage("AttachVolume.Attach failed", "pv-1", "boom"),
    'AttachVolume.Attach failed for volume "pv-1" : boom',
  );
  assert.equal(
    attachMessage("AttachVolume.Attach succeeded", "pv-1"),
    'AttachVolume.Attach succeeded for volume "pv-1" ',
  );
});
