// Table tests of the node's pure pieces: kubelet paths and names (FACTS.md), the registration
// version check, the PV → CSI access-mode mapping, the kubelet's fsGroup rule, Go-style gRPC
// error text and the final/non-final split, and the desired-state computation.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import type { CSIDriver, PersistentVolume, PersistentVolumeClaim, Pod } from "../api/index.ts";
import { CsiError, GrpcStatus } from "../csi/index.ts";
import { describeError, isUncertain } from "./csi-errors.ts";
import { csiAccessMode, supportsFsGroup } from "./csi-volume.ts";
import { computeDesiredState, type VolumeSpec } from "./desired-state.ts";
import { attachmentName, ephemeralVolumeHandle, KubeletPaths, uniqueVolumeName } from "./paths.ts";
import { highestSupportedVersion } from "./registration.ts";
import { nodeExpansionSize, resizePending } from "./expansion.ts";

const hex = (text: string) => createHash("sha256").update(text).digest("hex");

test("kubelet paths and names are FACTS.md's", () => {
  const paths = new KubeletPaths("/var/lib/kubelet");
  assert.equal(paths.pluginsRegistry, "/var/lib/kubelet/plugins_registry");
  assert.equal(
    paths.stagingTarget("d.example.com", "h1"),
    `/var/lib/kubelet/plugins/kubernetes.io/csi/d.example.com/${hex("h1")}/globalmount`,
  );
  assert.equal(
    paths.publishTarget("u1", "pv1"),
    "/var/lib/kubelet/pods/u1/volumes/kubernetes.io~csi/pv1/mount",
  );
  assert.equal(
    paths.blockStagingTarget("pv1"),
    "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/staging/pv1",
  );
  assert.equal(
    paths.blockPublishTarget("pv1", "u1"),
    "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/publish/pv1/u1",
  );
  assert.equal(
    paths.podDeviceLink("u1", "pv1"),
    "/var/lib/kubelet/pods/u1/volumeDevices/kubernetes.io~csi/pv1",
  );
  assert.equal(attachmentName("h1", "d.example.com", "n1"), `csi-${hex("h1d.example.comn1")}`);
  assert.equal(ephemeralVolumeHandle("u1", "scratch"), `csi-${hex("u1scratch")}`);
  assert.equal(uniqueVolumeName("d.example.com", "h1"), "kubernetes.io/csi/d.example.com^h1");
});

test("registration accepts CSI 0.x and 1.x, refuses 2.x, empty and garbage", () => {
  assert.equal(highestSupportedVersion(["1.0.0"]), "1.0.0");
  assert.equal(highestSupportedVersion(["0.3.0", "1.2.0", "v1.1"]), "1.2.0");
  assert.equal(highestSupportedVersion(["0.3.0"]), "0.3.0");
  assert.throws(
    () => highestSupportedVersion(["2.0.0", "1.0.0"]),
    /highest supported version reported by driver is 2\.0\.0, must be v1\.x/,
  );
  assert.throws(() => highestSupportedVersion([]), /empty array for supported versions/);
  assert.throws(() => highestSupportedVersion(["banana"]), /none of the CSI versions/);
});

test("access modes map as FACTS.md says", () => {
  const cases: [Parameters<typeof csiAccessMode>[0], boolean, string | RegExp][] = [
    [["ReadWriteOnce"], false, "SINGLE_NODE_WRITER"],
    [["ReadWriteOnce"], true, "SINGLE_NODE_MULTI_WRITER"],
    [["ReadWriteOncePod"], false, "SINGLE_NODE_WRITER"],
    [["ReadWriteOncePod"], true, "SINGLE_NODE_SINGLE_WRITER"],
    [["ReadWriteMany", "ReadWriteOnce"], false, "MULTI_NODE_MULTI_WRITER"],
    [["ReadOnlyMany"], false, "MULTI_NODE_READER_ONLY"],
    [["ReadOnlyMany", "ReadWriteOnce"], false, /may not be combined/],
    [["ReadWriteOncePod", "ReadWriteOnce"], true, /may not be combined/],
  ];
  for (const [modes, multiWriter, expected] of cases) {
    if (typeof expected === "string")
      assert.equal(csiAccessMode(modes, multiWriter), expected, modes.join(","));
    else assert.throws(() => csiAccessMode(modes, multiWriter), expected);
  }
});

test("the kubelet applies fsGroup itself per fsGroupPolicy", () => {
  const spec = (fsType: string, modes: VolumeSpec["accessModes"]) =>
    ({ fsType, accessModes: modes, ephemeral: false }) as VolumeSpec;
  const driver = (fsGroupPolicy?: CSIDriver["spec"]["fsGroupPolicy"]): CSIDriver => ({
    metadata: { name: "d" },
    spec: fsGroupPolicy ? { fsGroupPolicy } : {},
  });
  assert.equal(
    supportsFsGroup(spec("ext4", ["ReadWriteOnce"]), undefined),
    true,
    "default policy, fsType, RWO",
  );
  assert.equal(
    supportsFsGroup(spec("", ["ReadWriteOnce"]), undefined),
    false,
    "default policy needs an fsType",
  );
  assert.equal(supportsFsGroup(spec("ext4", ["ReadWriteMany"]), driver()), false, "default policy needs RWO");
  assert.equal(supportsFsGroup(spec("", ["ReadWriteMany"]), driver("File")), true);
  assert.equal(supportsFsGroup(spec("ext4", ["ReadWriteOnce"]), driver("None")), false);
});

test("gRPC failures read as Go's status text; only the kubelet's non-final codes leave a mount uncertain", () => {
  assert.equal(
    describeError(new CsiError(GrpcStatus.FAILED_PRECONDITION, "not staged")),
    "rpc error: code = FailedPrecondition desc = not staged",
  );
  assert.equal(describeError(new Error("plain")), "plain");
  for (const code of [
    GrpcStatus.DEADLINE_EXCEEDED,
    GrpcStatus.UNAVAILABLE,
    GrpcStatus.CANCELLED,
    GrpcStatus.ABORTED,
    GrpcStatus.RESOURCE_EXHAUSTED,
  ]) {
    assert.equal(isUncertain(new CsiError(code, "x")), true, String(code));
  }
  for (const code of [GrpcStatus.INTERNAL, GrpcStatus.NOT_FOUND, GrpcStatus.INVALID_ARGUMENT]) {
    assert.equal(isUncertain(new CsiError(code, "x")), false, String(code));
  }
});

test("a claim is resize-pending by allocatedResourceStatuses, or by the size skew alone without them", () => {
  const claim = (status: NonNullable<PersistentVolumeClaim["status"]>): PersistentVolumeClaim => ({
    metadata: { name: "c" },
    status,
  });
  assert.equal(resizePending(claim({ allocatedResourceStatuses: { storage: "NodeResizePending" } })), true);
  assert.equal(
    resizePending(claim({ conditions: [{ type: "FileSystemResizePending", status: "True" }] })),
    true,
  );
  assert.equal(
    resizePending(claim({ allocatedResourceStatuses: { storage: "ControllerResizeInProgress" } })),
    false,
  );
  // No allocatedResourceStatuses (an older resizer, or a claim bound anew with the PV's
  // pre-resize-capacity): as the kubelet, the PV-vs-capacity skew decides (nodeExpansionSize).
  assert.equal(resizePending(claim({})), true);
  assert.equal(
    resizePending(claim({ allocatedResourceStatuses: { storage: "NodeResizeInProgress" } })),
    true,
  );
  assert.equal(
    resizePending(
      claim({
        allocatedResourceStatuses: { storage: "NodeResizeInfeasible" },
        conditions: [{ type: "FileSystemResizePending", status: "True" }],
      }),
    ),
    false,
    "an infeasible node step waits for the resizer",
  );
});

test("node expansion goes to the PV's size only when it is above the claim's recorded capacity (a stale PV cache waits)", () => {
  const pending = (recorded?: string): PersistentVolumeClaim => ({
    metadata: { name: "c" },
    status: {
      ...(recorded ? { capacity: { storage: recorded } } : {}),
      allocatedResourceStatuses: { storage: "NodeResizePending" },
    },
  });
  const pv = (size?: string): PersistentVolume => ({
    metadata: { name: "pv" },
    spec: size ? { capacity: { storage: size } } : {},
  });
  // The claim says NodeResizePending but the cache still holds the PV from before
  // ControllerExpandVolume: expanding now would finish the resize at the old capacity.
  assert.equal(nodeExpansionSize(pending("1Mi"), pv("1Mi")), undefined);
  assert.equal(nodeExpansionSize(pending("1Gi"), pv("1024Mi")), undefined, "sizes compare as quantities");
  assert.equal(nodeExpansionSize(pending("2Mi"), pv("1Mi")), undefined, "never shrinks");
  // Once the PV update arrives, the node expands to it.
  assert.equal(nodeExpansionSize(pending("1Mi"), pv("2Mi")), "2Mi");
  assert.equal(nodeExpansionSize(pending(), pv("2Mi")), "2Mi", "no recorded capacity: the PV's size");
  assert.equal(nodeExpansionSize(pending("1Mi"), undefined), undefined, "PV not in the cache yet");
  assert.equal(nodeExpansionSize(pending("1Mi"), pv()), undefined, "PV without a capacity");
  const notPending: PersistentVolumeClaim = {
    metadata: { name: "c" },
    status: {
      capacity: { storage: "1Mi" },
      allocatedResourceStatuses: { storage: "ControllerResizeInProgress" },
    },
  };
  assert.equal(nodeExpansionSize(notPending, pv("2Mi")), undefined, "only claims whose node step waits");
  // A claim bound anew to a PV whose node expansion was cut short: the PV controller gave it the
  // pre-resize-capacity and no resize status; the node expands to the PV's size.
  const rebound: PersistentVolumeClaim = {
    metadata: { name: "c" },
    status: { capacity: { storage: "1Mi" } },
  };
  assert.equal(nodeExpansionSize(rebound, pv("2Mi")), "2Mi");
  // The resizer finished the whole resize (node-expansion-not-required): the claim reports the
  // PV's size, so nothing runs on the node — the kubelet's ReadWriteMany case included.
  const finished: PersistentVolumeClaim = {
    metadata: {
      name: "c",
      annotations: { "volume.kubernetes.io/node-expansion-not-required": "true" },
    },
    spec: { accessModes: ["ReadWriteMany"] },
    status: { capacity: { storage: "2Mi" } },
  };
  assert.equal(nodeExpansionSize(finished, pv("2Mi")), undefined);
});

test("desired state: bound CSI claims and inline volumes of active pods; problems in the kubelet's words", () => {
  const pv: PersistentVolume = {
    metadata: { name: "pv-1" },
    spec: {
      accessModes: ["ReadWriteOnce"],
      volumeMode: "Block",
      claimRef: { uid: "claim-uid" },
      csi: { driver: "d", volumeHandle: "h1", nodeStageSecretRef: { name: "s", namespace: "ns" } },
    },
  };
  const claims: Record<string, PersistentVolumeClaim> = {
    "ns/bound": {
      metadata: { name: "bound", namespace: "ns", uid: "claim-uid" },
      spec: { volumeName: "pv-1" },
      status: { phase: "Bound" },
    },
    "ns/pending": { metadata: { name: "pending", namespace: "ns" }, spec: {}, status: { phase: "Pending" } },
  };
  const ephemeralDriver: CSIDriver = {
    metadata: { name: "e" },
    spec: { volumeLifecycleModes: ["Ephemeral"] },
  };
  const pod = (name: string, extra: Partial<Pod> = {}): Pod => ({
    metadata: { name, namespace: "ns", uid: `uid-${name}` },
    spec: {
      containers: [],
      volumes: [
        { name: "data", persistentVolumeClaim: { claimName: "bound", readOnly: true } },
        { name: "scratch", csi: { driver: "e" } },
        { name: "cache", emptyDir: {} },
      ],
    },
    ...extra,
  });
  const state = computeDesiredState(
    [
      pod("a"),
      pod("gone", {
        metadata: {
          name: "gone",
          namespace: "ns",
          uid: "uid-gone",
          deletionTimestamp: "2026-01-01T00:00:00Z",
        },
      }),
      pod("done", { status: { phase: "Succeeded" } }),
      {
        metadata: { name: "b", namespace: "ns", uid: "uid-b" },
        spec: {
          containers: [],
          volumes: [
            { name: "v", persistentVolumeClaim: { claimName: "pending" } },
            { name: "w", csi: { driver: "p" } },
          ],
        },
      },
    ],
    {
      claim: (namespace, name) => claims[`${namespace}/${name}`],
      volume: (name) => (name === "pv-1" ? pv : undefined),
      csiDriver: (name) => (name === "e" ? ephemeralDriver : undefined),
    },
  );
  assert.deepEqual([...state.pods.keys()], ["uid-a", "uid-b"]);
  assert.deepEqual([...state.volumes.keys()].sort(), ["uid-a/pv-1", "uid-a/scratch"]);
  const data = state.volumes.get("uid-a/pv-1")!.spec;
  assert.equal(data.block, true);
  assert.equal(data.readOnly, true);
  assert.deepEqual(data.nodeStageSecretRef, { name: "s", namespace: "ns" });
  assert.deepEqual(data.claim, { namespace: "ns", name: "bound" });
  const scratch = state.volumes.get("uid-a/scratch")!.spec;
  assert.equal(scratch.ephemeral, true);
  assert.equal(scratch.handle, ephemeralVolumeHandle("uid-a", "scratch"));
  assert.deepEqual(state.problems.get("uid-b"), [
    "error processing PVC ns/pending: PVC is not bound",
    'volume "w": volume mode "Ephemeral" not supported by driver p (only supports ["Persistent"])',
  ]);
});

test("desired state: a generic ephemeral volume uses the pod's own claim <pod>-<volume>; a claim of that name the pod does not control is a problem", () => {
  const pv: PersistentVolume = {
    metadata: { name: "pv-e" },
    spec: {
      accessModes: ["ReadWriteOnce"],
      claimRef: { uid: "c-uid" },
      csi: { driver: "d", volumeHandle: "he" },
    },
  };
  const claim = (owner: string): PersistentVolumeClaim => ({
    metadata: {
      name: "app-scratch",
      namespace: "ns",
      uid: "c-uid",
      ownerReferences: [{ apiVersion: "v1", kind: "Pod", name: "app", uid: owner, controller: true }],
    },
    spec: { volumeName: "pv-e" },
    status: { phase: "Bound" },
  });
  const pod: Pod = {
    metadata: { name: "app", namespace: "ns", uid: "uid-app" },
    spec: {
      containers: [],
      volumes: [{ name: "scratch", ephemeral: { volumeClaimTemplate: { spec: {} } } }],
    },
  };
  const lookups = (owner: string) => ({
    claim: (namespace: string, name: string) =>
      `${namespace}/${name}` === "ns/app-scratch" ? claim(owner) : undefined,
    volume: (name: string) => (name === "pv-e" ? pv : undefined),
    csiDriver: () => undefined,
  });
  const owned = computeDesiredState([pod], lookups("uid-app"));
  assert.deepEqual(owned.volumes.get("uid-app/pv-e")?.spec.claim, { namespace: "ns", name: "app-scratch" });
  const foreign = computeDesiredState([pod], lookups("uid-someone-else"));
  assert.equal(foreign.volumes.size, 0);
  assert.deepEqual(foreign.problems.get("uid-app"), [
    "PVC ns/app-scratch was not created for pod ns/app (pod is not owner)",
  ]);
});

test("desired state: a ReadWriteOncePod volume is the oldest pod's; a second pod gets the kubelet's refusal", () => {
  const pv: PersistentVolume = {
    metadata: { name: "pv-r" },
    spec: {
      accessModes: ["ReadWriteOncePod"],
      claimRef: { uid: "c-uid" },
      csi: { driver: "d", volumeHandle: "r" },
    },
  };
  const claim: PersistentVolumeClaim = {
    metadata: { name: "rwop", namespace: "ns", uid: "c-uid" },
    spec: { volumeName: "pv-r" },
    status: { phase: "Bound" },
  };
  const pod = (name: string, created: string, extra: Partial<NonNullable<Pod["metadata"]>> = {}): Pod => ({
    metadata: { name, namespace: "ns", uid: `uid-${name}`, creationTimestamp: created, ...extra },
    spec: { containers: [], volumes: [{ name: "v", persistentVolumeClaim: { claimName: "rwop" } }] },
  });
  const caches = { claim: () => claim, volume: () => pv, csiDriver: () => undefined };
  const newer = pod("newer", "2026-01-01T00:00:02Z");
  const older = pod("older", "2026-01-01T00:00:01Z");
  // Listed newest first: the older pod still owns it.
  const state = computeDesiredState([newer, older], caches);
  assert.deepEqual([...state.volumes.keys()], ["uid-older/pv-r"]);
  assert.deepEqual(state.problems.get("uid-newer"), [
    "error processing PVC ns/rwop: volume uses the ReadWriteOncePod access mode and is already in use by another pod",
  ]);
  // A terminating owner keeps it until its volumes are released.
  const terminating = pod("older", "2026-01-01T00:00:01Z", { deletionTimestamp: "2026-01-01T00:00:03Z" });
  const kept = computeDesiredState([newer, terminating], caches, () => true);
  assert.deepEqual([...kept.volumes.keys()], ["uid-older/pv-r"]);
  assert.equal(kept.problems.get("uid-newer")?.length, 1);
  // Once it is gone, the next pod gets it.
  const freed = computeDesiredState([newer], caches);
  assert.deepEqual([...freed.volumes.keys()], ["uid-newer/pv-r"]);
  assert.equal(freed.problems.size, 0);
});
