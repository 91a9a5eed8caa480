// Volume rules as tables: static matching (smallest fit, pre-bound, modes, class, selector,
// affinity), capacity, per-node decisions and attach limits.
import { test } from "node:test";
import assert from "node:assert/strict";
import type {
  CSIDriver,
  CSINode,
  CSIStorageCapacity,
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  StorageClass,
} from "../../api/index.ts";
import {
  VOLUME_REASONS,
  filterVolumes,
  findMatchingVolume,
  hasEnoughCapacity,
  preFilterVolumes,
  type VolumeView,
} from "./volume-binding.ts";
import { fitsVolumeLimits, missingDriver } from "./volume-limits.ts";

const nodeA: Node = { metadata: { name: "a", labels: { zone: "a" } } };

function view(parts: {
  claims?: PersistentVolumeClaim[];
  volumes?: PersistentVolume[];
  classes?: StorageClass[];
  drivers?: CSIDriver[];
  capacities?: CSIStorageCapacity[];
}): VolumeView {
  return {
    claim: (namespace, name) =>
      parts.claims?.find((c) => c.metadata?.namespace === namespace && c.metadata.name === name),
    volume: (name) => parts.volumes?.find((v) => v.metadata?.name === name),
    volumes: () => parts.volumes ?? [],
    storageClass: (name) => parts.classes?.find((c) => c.metadata?.name === name),
    csiDriver: (name) => parts.drivers?.find((d) => d.metadata?.name === name),
    capacities: () => parts.capacities ?? [],
  };
}

function pv(
  name: string,
  size: string,
  extra: Partial<NonNullable<PersistentVolume["spec"]>> = {},
): PersistentVolume {
  return {
    metadata: { name },
    spec: {
      capacity: { storage: size },
      accessModes: ["ReadWriteOnce"],
      storageClassName: "local",
      csi: { driver: "d", volumeHandle: name },
      ...extra,
    },
    status: { phase: "Available" },
  };
}

const claim: PersistentVolumeClaim = {
  metadata: { name: "c", namespace: "ns", uid: "u1" },
  spec: {
    accessModes: ["ReadWriteOnce"],
    storageClassName: "local",
    resources: { requests: { storage: "5Mi" } },
  },
};

test("static match: smallest that fits; pre-bound wins; modes, class, phase and affinity filter", () => {
  const zoneB = {
    required: {
      nodeSelectorTerms: [{ matchExpressions: [{ key: "zone", operator: "In" as const, values: ["b"] }] }],
    },
  };
  const volumes = [
    pv("big", "50Mi"),
    pv("small", "6Mi"),
    pv("tiny", "1Mi"),
    pv("rox", "5Mi", { accessModes: ["ReadOnlyMany"] }),
    pv("other-class", "5Mi", { storageClassName: "x" }),
    pv("elsewhere", "5Mi", { nodeAffinity: zoneB }),
    { ...pv("released", "5Mi"), status: { phase: "Released" as const } },
  ];
  assert.equal(findMatchingVolume(claim, nodeA, view({ volumes }), new Set())?.metadata?.name, "small");
  assert.equal(
    findMatchingVolume(claim, nodeA, view({ volumes }), new Set(["small"]))?.metadata?.name,
    "big",
  );
  const prebound = pv("prebound", "100Mi", { claimRef: { namespace: "ns", name: "c", uid: "u1" } });
  assert.equal(
    findMatchingVolume(claim, nodeA, view({ volumes: [...volumes, prebound] }), new Set())?.metadata?.name,
    "prebound",
  );
  const preboundElsewhere = pv("pb2", "100Mi", {
    claimRef: { namespace: "ns", name: "c" },
    nodeAffinity: zoneB,
  });
  assert.equal(
    findMatchingVolume(claim, nodeA, view({ volumes: [preboundElsewhere, ...volumes] }), new Set()),
    undefined,
  );
  const block = { ...claim, spec: { ...claim.spec, volumeMode: "Block" as const } };
  assert.equal(findMatchingVolume(block, nodeA, view({ volumes }), new Set()), undefined);
});

test("capacity: only opted-in drivers; maximumVolumeSize preferred; topology must match", () => {
  const wffc: StorageClass = {
    metadata: { name: "local" },
    provisioner: "d",
    volumeBindingMode: "WaitForFirstConsumer",
  };
  const capacity = (size: string, zone: string, max?: string): CSIStorageCapacity => ({
    metadata: { name: `cap-${zone}` },
    storageClassName: "local",
    capacity: size,
    ...(max ? { maximumVolumeSize: max } : {}),
    nodeTopology: { matchLabels: { zone } },
  });
  const optedIn = [{ metadata: { name: "d" }, spec: { storageCapacity: true } }];
  assert.equal(hasEnoughCapacity(claim, wffc, nodeA, view({})), true, "no CSIDriver: not checked");
  assert.equal(hasEnoughCapacity(claim, wffc, nodeA, view({ drivers: optedIn })), false);
  assert.equal(
    hasEnoughCapacity(claim, wffc, nodeA, view({ drivers: optedIn, capacities: [capacity("10Mi", "a")] })),
    true,
  );
  assert.equal(
    hasEnoughCapacity(
      claim,
      wffc,
      nodeA,
      view({ drivers: optedIn, capacities: [capacity("10Mi", "a", "1Mi")] }),
    ),
    false,
  );
  assert.equal(
    hasEnoughCapacity(claim, wffc, nodeA, view({ drivers: optedIn, capacities: [capacity("10Mi", "b")] })),
    false,
  );
});

test("per-node decision: provision, static binding, selected-node elsewhere, missing PV", () => {
  const classes: StorageClass[] = [
    { metadata: { name: "local" }, provisioner: "d", volumeBindingMode: "WaitForFirstConsumer" },
  ];
  const decision = filterVolumes({ bound: [], delayed: [claim] }, nodeA, view({ classes }));
  assert.deepEqual(decision.reasons, []);
  assert.equal(decision.provisions.length, 1);
  const withPV = filterVolumes(
    { bound: [], delayed: [claim] },
    nodeA,
    view({ classes, volumes: [pv("small", "6Mi")] }),
  );
  assert.equal(withPV.staticBindings[0]?.volume.metadata?.name, "small");
  const elsewhere = {
    ...claim,
    metadata: { ...claim.metadata, annotations: { "volume.kubernetes.io/selected-node": "b" } },
  };
  assert.deepEqual(filterVolumes({ bound: [], delayed: [elsewhere] }, nodeA, view({ classes })).reasons, [
    VOLUME_REASONS.bindConflict,
  ]);
  const bound = { ...claim, spec: { ...claim.spec, volumeName: "gone" } };
  assert.deepEqual(filterVolumes({ bound: [bound], delayed: [] }, nodeA, view({ classes })).reasons, [
    VOLUME_REASONS.pvNotExist,
  ]);
});

test("prefilter: missing claim, deleting claim, unbound immediate claim", () => {
  const podWith = (claimName: string): Pod => ({
    metadata: { name: "p", namespace: "ns" },
    spec: { containers: [], volumes: [{ name: "v", persistentVolumeClaim: { claimName } }] },
  });
  assert.deepEqual(preFilterVolumes(podWith("nope"), view({})), {
    ok: false,
    message: 'persistentvolumeclaim "nope" not found',
  });
  const deleting = { ...claim, metadata: { ...claim.metadata, deletionTimestamp: "2024-01-01T00:00:00Z" } };
  assert.deepEqual(preFilterVolumes(podWith("c"), view({ claims: [deleting] })), {
    ok: false,
    message: 'persistentvolumeclaim "c" is being deleted',
  });
  assert.deepEqual(preFilterVolumes(podWith("c"), view({ claims: [claim] })), {
    ok: false,
    message: "pod has unbound immediate PersistentVolumeClaims",
  });
});

test("attach limits count unique volumes per driver; inline volumes count", () => {
  const volumes = [pv("v1", "1Mi"), pv("v2", "1Mi")];
  const claims: PersistentVolumeClaim[] = ["v1", "v2"].map((name) => ({
    metadata: { name, namespace: "ns" },
    spec: { volumeName: name },
  }));
  const podUsing = (name: string, ...claimNames: string[]): Pod => ({
    metadata: { name, namespace: "ns", uid: name },
    spec: {
      containers: [],
      volumes: claimNames.map((c) => ({ name: c, persistentVolumeClaim: { claimName: c } })),
    },
  });
  const csiNode = {
    metadata: { name: "a" },
    spec: { drivers: [{ name: "d", nodeID: "a", allocatable: { count: 1 } }] },
  };
  const lookups = view({ volumes, claims });
  assert.equal(fitsVolumeLimits(podUsing("p1", "v1"), [], csiNode, lookups), true);
  assert.equal(fitsVolumeLimits(podUsing("p2", "v2"), [podUsing("p1", "v1")], csiNode, lookups), false);
  assert.equal(fitsVolumeLimits(podUsing("p3", "v1"), [podUsing("p1", "v1")], csiNode, lookups), true);
  assert.equal(
    fitsVolumeLimits(podUsing("p2", "v2"), [podUsing("p1", "v1")], undefined, lookups),
    true,
    "no CSINode: no limit",
  );
  const inline: Pod = {
    metadata: { name: "i", uid: "i" },
    spec: { containers: [], volumes: [{ name: "x", csi: { driver: "d" } }] },
  };
  assert.equal(fitsVolumeLimits(inline, [podUsing("p1", "v1")], csiNode, lookups), false);
});

test("VolumeLimitScaling: an opted-in driver missing from the CSINode (or no CSINode) is named", () => {
  const volumes = [pv("v1", "1Mi")];
  const claims: PersistentVolumeClaim[] = [
    { metadata: { name: "v1", namespace: "ns" }, spec: { volumeName: "v1" } },
  ];
  const pod: Pod = {
    metadata: { name: "p", namespace: "ns", uid: "p" },
    spec: { containers: [], volumes: [{ name: "v1", persistentVolumeClaim: { claimName: "v1" } }] },
  };
  const withDriver = (...names: string[]): CSINode => ({
    metadata: { name: "a" },
    spec: { drivers: names.map((name) => ({ name, nodeID: "a" })) },
  });
  const driver = (prevent: boolean | undefined): CSIDriver => ({
    metadata: { name: "d" },
    spec: prevent === undefined ? {} : { preventPodSchedulingIfMissing: prevent },
  });
  const optedIn = view({ volumes, claims, drivers: [driver(true)] });
  assert.equal(missingDriver(pod, withDriver("other"), optedIn), "d");
  assert.equal(missingDriver(pod, undefined, optedIn), "d", "no CSINode: no driver");
  assert.equal(missingDriver(pod, withDriver("d"), optedIn), undefined);
  assert.equal(missingDriver(pod, undefined, view({ volumes, claims, drivers: [driver(false)] })), undefined);
  assert.equal(
    missingDriver(pod, undefined, view({ volumes, claims, drivers: [driver(undefined)] })),
    undefined,
  );
  assert.equal(missingDriver(pod, undefined, view({ volumes, claims })), undefined, "no CSIDriver");
  // CSI inline volumes are not NodeVolumeLimits' business upstream.
  const inline: Pod = {
    metadata: { name: "i", uid: "i" },
    spec: { containers: [], volumes: [{ name: "x", csi: { driver: "d" } }] },
  };
  assert.equal(missingDriver(inline, undefined, optedIn), undefined);
});

test("volume limits with CSI migration: in-tree PVs, inline volumes and in-tree classes count against the driver", () => {
  const GCE = "pd.csi.storage.gke.io";
  const PX = "pxd.portworx.com";
  const inTree = (name: string, source: Partial<NonNullable<PersistentVolume["spec"]>>): PersistentVolume => {
    const { csi: _csi, ...spec } = pv(name, "1Gi").spec ?? {};
    return { metadata: { name }, spec: { ...spec, ...source } };
  };
  const handle = (disk: string) => `projects/UNSPECIFIED/zones/UNSPECIFIED/disks/${disk}`;
  const volumes = [
    inTree("in-tree", { gcePersistentDisk: { pdName: "disk-1" } }),
    pv("csi-same", "1Gi", { csi: { driver: GCE, volumeHandle: handle("disk-1") } }),
    inTree("px", { portworxVolume: { volumeID: "px-1" } }),
  ];
  const claims = ["in-tree", "csi-same", "px", "new"].map((name) => ({
    metadata: { name, namespace: "ns" },
    spec: name === "new" ? { storageClassName: "legacy" } : { volumeName: name },
  }));
  const classes = [{ metadata: { name: "legacy" }, provisioner: "kubernetes.io/gce-pd" }];
  const lookups = view({ volumes, claims, classes });
  const using = (name: string, volumesOfPod: NonNullable<NonNullable<Pod["spec"]>["volumes"]>): Pod => ({
    metadata: { name, namespace: "ns", uid: name },
    spec: { containers: [], volumes: volumesOfPod },
  });
  const byClaim = (name: string) => ({ name, persistentVolumeClaim: { claimName: name } });
  const csiNode = (limits: Record<string, number>, migrated = ""): CSINode => ({
    metadata: { name: "a", annotations: { "storage.alpha.kubernetes.io/migrated-plugins": migrated } },
    spec: {
      drivers: Object.entries(limits).map(([name, count]) => ({ name, nodeID: "a", allocatable: { count } })),
    },
  });
  const oneGce = csiNode({ [GCE]: 1 });
  const onNode = [using("old", [byClaim("in-tree")])];
  // The in-tree PV fills the GCE limit; the same disk named in CSI form counts once.
  assert.equal(fitsVolumeLimits(using("p", [byClaim("csi-same")]), onNode, oneGce, lookups), true);
  assert.equal(
    fitsVolumeLimits(
      using("p", [{ name: "x", gcePersistentDisk: { pdName: "disk-2" } }]),
      onNode,
      oneGce,
      lookups,
    ),
    false,
    "an inline in-tree disk is one more",
  );
  assert.equal(
    fitsVolumeLimits(using("p", [byClaim("new")]), onNode, oneGce, lookups),
    false,
    "an in-tree class's claim",
  );
  assert.equal(fitsVolumeLimits(using("p", [byClaim("new")]), onNode, csiNode({ [GCE]: 2 }), lookups), true);
  // Portworx counts only where the node migrated it (its CSINode annotation).
  const onePx = (migrated: string) => csiNode({ [PX]: 0 }, migrated);
  assert.equal(
    fitsVolumeLimits(using("p", [byClaim("px")]), [], onePx(""), lookups),
    true,
    "not migrated here",
  );
  assert.equal(
    fitsVolumeLimits(using("p", [byClaim("px")]), [], onePx("kubernetes.io/portworx-volume"), lookups),
    false,
  );
});
