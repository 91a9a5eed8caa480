// Property tests: for generated valid in-tree PVs of every plugin that upstream translates both
// ways, in-tree → CSI → in-tree gives back the same object; the CSI form always names the
// plugin's driver and carries no in-tree source. Plus the error cases: missing fields, unknown
// plugins and drivers, malformed handles and zones, each with an error naming the problem.
// The generator is a seeded PRNG, so a failure prints a seed that reproduces it.

import { test } from "node:test";
import assert from "node:assert/strict";
import type { PersistentVolume, PersistentVolumeAccessMode } from "../api/index.ts";
import {
  IN_TREE_PLUGINS,
  TranslationError,
  awsRegionFromZones,
  backwardCompatibleAccessModes,
  csiNameFromInTreeName,
  ebsVolumeID,
  fileShareInfo,
  azureDiskName,
  inTreeNameFromCSIName,
  inTreePluginNameFromSpec,
  isInlineMigratable,
  isMigratableInTreePluginByName,
  isMigratedCSIDriverByName,
  isPVMigratable,
  repairVolumeHandle,
  translateCSIPVToInTree,
  translateInTreeInlineVolumeToCSI,
  translateInTreePVToCSI,
  translateInTreeStorageClassToCSI,
} from "./index.ts";
import { seededRandom } from "../../test/harness/random.ts";

type Rand = () => number;
const pick = <T>(r: Rand, items: readonly T[]): T => items[Math.floor(r() * items.length)]!;
const chance = (r: Rand) => r() < 0.5;
const word = (r: Rand, n = 8) =>
  Array.from({ length: 1 + Math.floor(r() * n) }, () =>
    pick(r, [..."abcdefghijklmnopqrstuvwxyz0123456789"]),
  ).join("");

/** Zone → region pairs each plugin's region parser accepts. */
const GCE_ZONES: [string, string][] = [
  ["us-central1-a", "us-central1"],
  ["europe-west4-b", "europe-west4"],
];
const AWS_ZONES: [string, string][] = [
  ["us-west-2a", "us-west-2"],
  ["us-gov-east-1b", "us-gov-east-1"],
  ["us-west-2-lax-1a", "us-west-2"],
];

/**
 * A complete GA topology (zone and region in affinity and labels). Beta keys are upgraded to GA
 * on the way to CSI on purpose (new nodes lack them), so they are one-way: golden.test.ts.
 */
function topology(r: Rand, zones: [string, string][] | undefined, withRegion: boolean) {
  if (zones === undefined || !chance(r)) return {};
  const [zone, region] = pick(r, zones);
  const zk = "topology.kubernetes.io/zone";
  const rk = "topology.kubernetes.io/region";
  const labels: Record<string, string> = { [zk]: zone };
  const expressions = [{ key: zk, operator: "In" as const, values: [zone] }];
  if (withRegion) {
    labels[rk] = region;
    expressions.push({ key: rk, operator: "In" as const, values: [region] });
  }
  return { labels, nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: expressions }] } } };
}

function maybe<T extends object>(r: Rand, value: T): Partial<T> {
  return chance(r) ? value : {};
}

/** Generators of valid in-tree PVs whose round trip upstream preserves. */
const GENERATORS: Record<string, (r: Rand) => PersistentVolume> = {
  gcePersistentDisk: (r) => {
    const t = topology(r, GCE_ZONES, true);
    const modes: PersistentVolumeAccessMode[] = [pick(r, ["ReadWriteOnce", "ReadOnlyMany"] as const)];
    return {
      metadata: { name: word(r), ...(t.labels && { labels: t.labels }) },
      spec: {
        accessModes: modes,
        gcePersistentDisk: {
          pdName: word(r),
          ...maybe(r, { fsType: pick(r, ["ext4", "xfs"]) }),
          ...maybe(r, { partition: 1 + Math.floor(r() * 9) }),
          ...maybe(r, { readOnly: true }),
        },
        ...(t.nodeAffinity && { nodeAffinity: t.nodeAffinity }),
      },
    };
  },
  awsElasticBlockStore: (r) => {
    const t = topology(r, AWS_ZONES, true);
    return {
      metadata: { name: word(r), ...(t.labels && { labels: t.labels }) },
      spec: {
        awsElasticBlockStore: {
          volumeID: `vol-${word(r, 17)}`,
          ...maybe(r, { fsType: "ext4" }),
          ...maybe(r, { partition: 2 }),
          ...maybe(r, { readOnly: true }),
        },
        ...(t.nodeAffinity && { nodeAffinity: t.nodeAffinity }),
      },
    };
  },
  cinder: (r) => {
    const t = topology(r, [["nova", ""]], false);
    return {
      metadata: { name: word(r), ...(t.labels && { labels: t.labels }) },
      spec: {
        cinder: { volumeID: word(r, 20), ...maybe(r, { fsType: "ext4" }), ...maybe(r, { readOnly: true }) },
        ...(t.nodeAffinity && { nodeAffinity: t.nodeAffinity }),
      },
    };
  },
  azureDisk: (r) => {
    const name = word(r);
    const managed = chance(r);
    return {
      metadata: { name: word(r) },
      spec: {
        azureDisk: {
          diskName: name,
          diskURI: managed
            ? `/subscriptions/${word(r)}/resourceGroups/${word(r)}/providers/Microsoft.Compute/disks/${name}`
            : `https://${word(r)}.blob.core.windows.net/vhds/${name}`,
          ...maybe(r, { cachingMode: pick(r, ["None", "ReadOnly", "ReadWrite"]) }),
          fsType: pick(r, ["ext4", "xfs"]),
          readOnly: chance(r),
          kind: pick(r, ["Managed", "Shared", "Dedicated"]),
        },
      },
    };
  },
  azureFile: (r) => ({
    metadata: { name: word(r) },
    spec: {
      azureFile: {
        secretName: chance(r) ? `azure-storage-account-${word(r)}-secret` : word(r),
        shareName: word(r),
        ...maybe(r, { readOnly: true }),
        secretNamespace: word(r),
      },
    },
  }),
  portworxVolume: (r) => ({
    metadata: { name: word(r) },
    spec: {
      portworxVolume: {
        volumeID: word(r, 12),
        ...maybe(r, { fsType: "ext4" }),
        ...maybe(r, { readOnly: true }),
      },
    },
  }),
};

test("every plugin of the 1.32 table but vSphere has a round-trip generator", () => {
  // vSphere's reverse reads the path from the driver's initialvolumefilepath attribute only,
  // so upstream itself does not round-trip it; golden.test.ts pins both directions instead.
  const fields = IN_TREE_PLUGINS.map((p) => p.sourceField).filter((f) => f !== "vsphereVolume");
  assert.deepEqual(Object.keys(GENERATORS).sort(), [...fields].sort());
});

for (const [field, generate] of Object.entries(GENERATORS)) {
  test(`round trip in-tree → CSI → in-tree is the identity: ${field} (300 generated PVs)`, () => {
    const plugin = IN_TREE_PLUGINS.find((p) => p.sourceField === field)!;
    for (let seed = 1; seed <= 300; seed++) {
      const pv = generate(seededRandom(seed * 7919));
      const before = structuredClone(pv);
      const csi = translateInTreePVToCSI(pv);
      assert.deepEqual(pv, before, `seed ${seed}: input modified`);
      assert.equal(csi.spec?.csi?.driver, plugin.csiDriverName, `seed ${seed}`);
      assert.equal(csi.spec?.[field], undefined, `seed ${seed}: in-tree source left behind`);
      assert.ok(isPVMigratable(pv) && !isPVMigratable(csi), `seed ${seed}`);
      const back = translateCSIPVToInTree(csi);
      assert.deepEqual(
        back,
        before,
        `seed ${seed}: ${JSON.stringify(before)} → ${JSON.stringify(csi)} → ${JSON.stringify(back)}`,
      );
    }
  });
}

test("name lookups both ways and migratability over the whole table", () => {
  assert.equal(IN_TREE_PLUGINS.length, 7);
  for (const p of IN_TREE_PLUGINS) {
    assert.equal(csiNameFromInTreeName(p.inTreePluginName), p.csiDriverName);
    assert.equal(inTreeNameFromCSIName(p.csiDriverName), p.inTreePluginName);
    assert.ok(isMigratableInTreePluginByName(p.inTreePluginName));
    assert.ok(isMigratedCSIDriverByName(p.csiDriverName));
    assert.equal(
      inTreePluginNameFromSpec({ metadata: {}, spec: { [p.sourceField]: {} } }),
      p.inTreePluginName,
    );
    assert.equal(inTreePluginNameFromSpec(undefined, { name: "v", [p.sourceField]: {} }), p.inTreePluginName);
    assert.ok(isInlineMigratable({ name: "v", [p.sourceField]: {} }));
  }
  assert.ok(!isMigratableInTreePluginByName("kubernetes.io/rbd"), "RBD left the table in 1.31");
  assert.ok(!isMigratedCSIDriverByName("hostpath.csi.k8s.io"));
  assert.ok(!isInlineMigratable({ name: "v", hostPath: { path: "/x" } }));
  assert.throws(
    () => csiNameFromInTreeName("kubernetes.io/nfs"),
    /could not find CSI Driver name for plugin "kubernetes.io\/nfs"/,
  );
  assert.throws(
    () => inTreeNameFromCSIName("x.csi"),
    /could not find In-Tree driver name for CSI plugin "x.csi"/,
  );
  assert.throws(() => inTreePluginNameFromSpec(undefined), /both persistent volume and volume are missing/);
});

test("error cases name what is wrong", () => {
  const cases: [string, () => unknown, RegExp][] = [
    [
      "unknown in-tree source",
      () => translateInTreePVToCSI({ metadata: { name: "n" }, spec: { nfs: { server: "s", path: "/" } } }),
      /PersistentVolume "n".*no migratable in-tree source/,
    ],
    [
      "unknown driver",
      () =>
        translateCSIPVToInTree({
          metadata: { name: "n" },
          spec: { csi: { driver: "x.csi", volumeHandle: "h" } },
        }),
      /CSI driver "x.csi"/,
    ],
    [
      "no csi source",
      () => translateCSIPVToInTree({ metadata: { name: "n" }, spec: {} }),
      /PersistentVolume "n": no csi source/,
    ],
    [
      "unknown StorageClass plugin",
      () =>
        translateInTreeStorageClassToCSI("kubernetes.io/nfs", {
          metadata: { name: "s" },
          provisioner: "kubernetes.io/nfs",
        }),
      /kubernetes.io\/nfs/,
    ],
    [
      "missing pdName",
      () =>
        translateInTreePVToCSI({ metadata: { name: "n" }, spec: { gcePersistentDisk: { fsType: "ext4" } } }),
      /PersistentVolume "n" \(gcePersistentDisk\): pdName is required/,
    ],
    [
      "partition of the wrong type",
      () =>
        translateInTreePVToCSI({
          metadata: { name: "n" },
          spec: { gcePersistentDisk: { pdName: "d", partition: "1" } },
        }),
      /partition must be an integer/,
    ],
    [
      "malformed GCE handle",
      () =>
        translateCSIPVToInTree({
          metadata: {},
          spec: { csi: { driver: "pd.csi.storage.gke.io", volumeHandle: "disk-1" } },
        }),
      /has 1 components, wanted 6 or more/,
    ],
    [
      "bad partition attribute",
      () =>
        translateCSIPVToInTree({
          metadata: {},
          spec: {
            csi: {
              driver: "pd.csi.storage.gke.io",
              volumeHandle: "projects/p/zones/z/disks/d",
              volumeAttributes: { partition: "x" },
            },
          },
        }),
      /failed to convert partition "x" to integer/,
    ],
    [
      "regional zones across regions",
      () =>
        translateInTreePVToCSI({
          metadata: { name: "n", labels: { "topology.kubernetes.io/zone": "us-east1-a__europe-west1-b" } },
          spec: { gcePersistentDisk: { pdName: "d" } },
        }),
      /failed to get region from zones: multiple or no regions/,
    ],
    [
      "malformed EBS URL",
      () =>
        translateInTreePVToCSI({
          metadata: { name: "n" },
          spec: { awsElasticBlockStore: { volumeID: "aws://us-east-1/02399794" } },
        }),
      /Invalid format for AWS volume \(aws:\/\/us-east-1\/02399794\)/,
    ],
    [
      "missing EBS volumeID",
      () => translateInTreeInlineVolumeToCSI({ name: "v", awsElasticBlockStore: {} }),
      /volume "v" \(awsElasticBlockStore\): volumeID is required/,
    ],
    [
      "azure disk URI without a name",
      () =>
        translateCSIPVToInTree({
          metadata: {},
          spec: {
            csi: { driver: "disk.csi.azure.com", volumeHandle: "http://test.blob.core.windows.net/name" },
          },
        }),
      /could not get disk name from http:\/\/test.blob.core.windows.net\/name/,
    ],
    [
      "azure file handle with one #",
      () =>
        translateCSIPVToInTree({
          metadata: {},
          spec: { csi: { driver: "file.csi.azure.com", volumeHandle: "rg#acct" } },
        }),
      /should at least contain two #/,
    ],
    [
      "azure file without shareName",
      () => translateInTreePVToCSI({ metadata: { name: "n" }, spec: { azureFile: { secretName: "s" } } }),
      /shareName is required/,
    ],
    [
      "vsphere CSI PV not made in migration mode",
      () =>
        translateCSIPVToInTree({
          metadata: { name: "n" },
          spec: { csi: { driver: "csi.vsphere.vmware.com", volumeHandle: "fcd" } },
        }),
      /no initialvolumefilepath volume attribute/,
    ],
    [
      "unknown inline source",
      () => translateInTreeInlineVolumeToCSI({ name: "v", emptyDir: {} }),
      /volume "v": no migratable in-tree source/,
    ],
  ];
  for (const [name, run, message] of cases)
    assert.throws(run, (e: unknown) => e instanceof TranslationError && message.test(e.message), name);
});

test("GCE handle repair from the node ID (upstream's cases)", () => {
  const node = "projects/bing/zones/bada/instances/boom";
  assert.equal(
    repairVolumeHandle("pd.csi.storage.gke.io", "projects/foo/zones/bar/disks/baz", node),
    "projects/foo/zones/bar/disks/baz",
  );
  assert.equal(
    repairVolumeHandle("pd.csi.storage.gke.io", "projects/UNSPECIFIED/zones/bar/disks/baz", node),
    "projects/bing/zones/bar/disks/baz",
  );
  assert.equal(
    repairVolumeHandle("pd.csi.storage.gke.io", "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/baz", node),
    "projects/bing/zones/bada/disks/baz",
  );
  assert.equal(
    repairVolumeHandle(
      "pd.csi.storage.gke.io",
      "projects/UNSPECIFIED/regions/UNSPECIFIED/disks/baz",
      "projects/bing/zones/us-central1-c/instances/boom",
    ),
    "projects/bing/regions/us-central1/disks/baz",
  );
  assert.equal(
    repairVolumeHandle("pd.csi.storage.gke.io", "projects/UNSPECIFIED/regions/us-west1/disks/baz", node),
    "projects/bing/regions/us-west1/disks/baz",
  );
  assert.throws(
    () => repairVolumeHandle("pd.csi.storage.gke.io", "foo", node),
    /wrong number of elements; got 1/,
  );
  assert.throws(
    () => repairVolumeHandle("pd.csi.storage.gke.io", "projects/UNSPECIFIED/zones/bar/disks/baz", "foo"),
    /node handle has wrong number/,
  );
  assert.equal(repairVolumeHandle("ebs.csi.aws.com", "vol-1", node), "vol-1");
});

test("plugin helpers: EBS IDs, AWS regions, GCE access modes, Azure names and handles", () => {
  for (const id of [
    "aws://us-east-1/vol-02399794d890f9375",
    "aws:///vol-02399794d890f9375",
    "vol-02399794d890f9375",
  ])
    assert.equal(ebsVolumeID(id), "vol-02399794d890f9375", id);
  assert.equal(awsRegionFromZones(["us-west-2a", "us-west-2b"]), "us-west-2");
  assert.equal(awsRegionFromZones(["us-gov-east-1a"]), "us-gov-east-1");
  assert.equal(awsRegionFromZones(["us-west-2-lax-1a"]), "us-west-2");
  assert.equal(awsRegionFromZones(["us-east-1-wl1-bos-wlz-1"]), "us-east-1");
  assert.throws(() => awsRegionFromZones(["us-west-2a", "us-east-1a"]), /multiple or no regions/);
  assert.throws(() => awsRegionFromZones(["us-west"]), /not a valid AWS zone/);
  assert.throws(() => awsRegionFromZones([]), /no zones specified/);
  const modes: [PersistentVolumeAccessMode[], PersistentVolumeAccessMode[]][] = [
    [["ReadWriteOnce"], ["ReadWriteOnce"]],
    [["ReadOnlyMany"], ["ReadOnlyMany"]],
    [["ReadWriteMany"], ["ReadWriteOnce"]],
    [["ReadWriteOnce", "ReadOnlyMany"], ["ReadWriteOnce"]],
    [["ReadWriteMany", "ReadOnlyMany"], ["ReadWriteOnce"]],
    [["ReadWriteOncePod"], ["ReadWriteOnce"]],
  ];
  for (const [input, want] of modes)
    assert.deepEqual(backwardCompatibleAccessModes(input), want, input.join(","));
  assert.equal(backwardCompatibleAccessModes(undefined), undefined);
  assert.equal(
    azureDiskName("/subscriptions/12/resourceGroups/23/providers/Microsoft.Compute/disks/name"),
    "name",
  );
  assert.equal(azureDiskName("http://test.blob.core.windows.net/vhds/name"), "name");
  assert.throws(
    () => azureDiskName("/subscriptions/12/resourcegroups/23/providers/microsoft.compute/disks/name"),
    /could not get disk name/,
  );
  assert.deepEqual(fileShareInfo("rg#f5713de20cde511e8ba4900#pvc-file-dynamic-17e43f84#diskname.vhd"), [
    "rg",
    "f5713de20cde511e8ba4900",
    "pvc-file-dynamic-17e43f84",
    "",
  ]);
  assert.deepEqual(fileShareInfo("rg#acct#share##ns"), ["rg", "acct", "share", "ns"]);
  for (const bad of ["rg#acct", "rg", ""])
    assert.throws(() => fileShareInfo(bad), /should at least contain two #/, bad);
});
