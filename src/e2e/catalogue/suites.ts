// Upstream's external-storage test suites as data: each suite's name (as it appears in the test
// name), the patterns it runs with, its tests' exact It titles and tags, and the conditions under
// which upstream skips them with the message it skips with. Conditions that need a live cluster
// (node count, SSH keys, the node OS) are kept as text in `runtimeSkips`; the runner checks them.
// Suites are listed in upstream's CSISuites order. Sources and versions: README.md.

import type { DriverDefinition } from "./test-driver.ts";
import type { TestPattern } from "./patterns.ts";

/** What a skip condition sees. */
export interface SkipContext {
  pattern: TestPattern;
  driver: DriverDefinition;
}

/** One upstream skip: when `when` holds, the test is skipped with `message`. */
export interface SkipRule {
  when: (c: SkipContext) => boolean;
  message: (c: SkipContext) => string;
}

export interface SuiteTest {
  /** The It text exactly as upstream passes it (tags written into the text stay in it). */
  title: string;
  /** Tags upstream passes as separate It arguments, rendered, in order: "[Slow]", "[Serial]", ... */
  tags: readonly string[];
  /** Describe/Context texts between the suite and the It ("" for an unnamed Context). */
  containers: readonly string[];
  /** Upstream only registers the test for some patterns/drivers; absent = always. */
  registeredWhen?: (c: SkipContext) => boolean;
  /** In upstream's order; the first that holds gives the skip message. */
  skips: readonly SkipRule[];
  /** Skips that depend on the live cluster, described. */
  runtimeSkips: readonly string[];
}

export interface Suite {
  /** As in the test name, e.g. "provisioning", "volume-expand". */
  name: string;
  /** Rendered suite tags, e.g. ["[Feature:VolumeSnapshotDataSource]"]. */
  tags: readonly string[];
  /** Pattern ids (patterns.ts), in upstream's order. */
  patterns: readonly string[];
  /** TestSuiteInfo.SupportedSizeRange.Min ("" where upstream sets none). */
  minSize: string;
  /** The suite's SkipUnsupportedTests, in order. */
  skips: readonly SkipRule[];
  tests: readonly SuiteTest[];
}

// --- helpers for writing the tables -------------------------------------------------------------

const q = (s: string): string => JSON.stringify(s); // Go's %q for the plain strings used here
const name = (c: SkipContext): string => c.driver.DriverInfo.Name;
const cap = (c: SkipContext, key: string): boolean => c.driver.DriverInfo.Capabilities[key] === true;
const block = (c: SkipContext): boolean => c.pattern.volMode === "Block";
const hasSource = (s: DriverDefinition["StorageClass"]): boolean =>
  s.FromName || s.FromFile !== "" || s.FromExistingClassName !== "";

function rule(when: SkipRule["when"], message: SkipRule["message"] | string): SkipRule {
  return { when, message: typeof message === "string" ? () => message : message };
}

interface TestSpec {
  tags?: readonly string[];
  containers?: readonly string[];
  registeredWhen?: SuiteTest["registeredWhen"];
  skips?: readonly SkipRule[];
  runtimeSkips?: readonly string[];
}

function it(title: string, spec: TestSpec = {}): SuiteTest {
  const t: SuiteTest = {
    title,
    tags: spec.tags ?? [],
    containers: spec.containers ?? [],
    skips: spec.skips ?? [],
    runtimeSkips: spec.runtimeSkips ?? [],
  };
  if (spec.registeredWhen !== undefined) t.registeredWhen = spec.registeredWhen;
  return t;
}

// Shared skip rules, named after what they check.
const blockUnsupported = (msg: (c: SkipContext) => string): SkipRule =>
  rule((c) => block(c) && !cap(c, "block"), msg);
const noRawBlock = blockUnsupported((c) => `Driver ${q(name(c))} does not provide raw block - skipping`);
const blockModeUnsupportedV = blockUnsupported(
  (c) => `Driver ${name(c)} doesn't support ${c.pattern.volMode} -- skipping`,
);
const onlyDynamic = (suite: string): SkipRule =>
  rule(
    (c) => c.pattern.volType !== "DynamicPV",
    (c) => `Suite ${q(suite)} does not support ${c.pattern.volType}`,
  );
// skipVolTypePatterns: an external driver always implements dynamic provisioning.
const skipVolTypes = (...types: string[]): SkipRule =>
  rule(
    (c) => types.includes(c.pattern.volType),
    (c) => `Driver supports dynamic provisioning, skipping ${c.pattern.volType} pattern`,
  );
const needsCap = (key: string, msg: (c: SkipContext) => string): SkipRule => rule((c) => !cap(c, key), msg);
const noSnapshotClass = rule(
  (c) => !hasSource(c.driver.SnapshotClass),
  (c) => `Driver ${q(name(c))} does not support snapshotting - skipping`,
);
const fsTypeUnsupported = rule(
  (c) => !c.driver.DriverInfo.SupportedFsType.includes(c.pattern.fsType),
  (c) => `Driver ${q(name(c))} does not support ${q(c.pattern.fsType)} fs type - skipping`,
);
const specificNode = rule(
  (c) => c.driver.ClientNodeName !== "",
  (c) => `Driver ${q(name(c))} requires to deploy on a specific node - skipping`,
);

const SNAPSHOT_FEATURE = "[Feature:VolumeSnapshotDataSource]";
const SLOW = "[Slow]";
const LINUX_ONLY = "[LinuxOnly]";

// --- the suites ---------------------------------------------------------------------------------

const noSnapshotPopulation = needsCap(
  "snapshotDataSource",
  (c) => `Driver ${q(name(c))} does not support populating data from snapshot - skipping`,
);
const noCloning = needsCap(
  "pvcDataSource",
  (c) => `Driver ${q(name(c))} does not support cloning - skipping`,
);
const noROX = needsCap(
  "capReadOnlyMany",
  (c) => `Driver ${q(name(c))} does not support ROX access mode - skipping`,
);

const provisioning: Suite = {
  name: "provisioning",
  tags: [],
  patterns: ["DefaultFsDynamicPV", "BlockVolModeDynamicPV", "NtfsDynamicPV"],
  minSize: "1Mi",
  skips: [onlyDynamic("provisioning"), blockModeUnsupportedV],
  tests: [
    it("should provision storage with mount options", {
      skips: [
        rule(
          (c) => c.driver.DriverInfo.SupportedMountOption === null,
          (c) => `Driver ${q(name(c))} does not define supported mount option - skipping`,
        ),
        rule(block, "Block volumes do not support mount options - skipping"),
      ],
    }),
    it("should provision storage with snapshot data source", {
      tags: [SNAPSHOT_FEATURE],
      skips: [noSnapshotPopulation, fsTypeUnsupported, noSnapshotClass],
    }),
    it("should provision storage with snapshot data source (ROX mode)", {
      tags: [SNAPSHOT_FEATURE],
      skips: [noSnapshotPopulation, fsTypeUnsupported, noROX, noSnapshotClass],
    }),
    it("should provision storage with any volume data source", {
      tags: ["[Serial]"],
      skips: [
        rule(
          (c) => c.driver.DriverInfo.InTreePluginName !== "",
          "AnyVolumeDataSource feature only works with CSI drivers - skipping",
        ),
        rule(block, "Test for Block volumes is not implemented - skipping"),
      ],
    }),
    it("should provision correct filesystem size when restoring snapshot to larger size pvc", {
      tags: [SNAPSHOT_FEATURE],
      skips: [
        rule(block, "Test is not valid for Block volume mode - skipping"),
        rule(
          (c) => cap(c, "FSResizeFromSourceNotSupported"),
          (c) => `Driver ${q(name(c))} does not support filesystem resizing - skipping`,
        ),
        noSnapshotPopulation,
        fsTypeUnsupported,
        noSnapshotClass,
      ],
      runtimeSkips: ["Windows nodes: Test is not valid Windows - skipping"],
    }),
    it("should provision storage with pvc data source", { skips: [noCloning] }),
    it("should provision storage with pvc data source (ROX mode)", { skips: [noCloning, noROX] }),
    it("should provision storage with pvc data source in parallel", {
      tags: [SLOW],
      skips: [
        noCloning,
        blockUnsupported((c) => `Driver ${q(name(c))} does not support block volumes - skipping`),
      ],
    }),
    it("should mount multiple PV pointing to the same storage on the same node", {
      skips: [
        rule(block, "skipping multiple PV mount test for block mode"),
        needsCap(
          "multiplePVsSameID",
          () => "this driver does not support multiple PVs with the same volumeHandle",
        ),
      ],
    }),
  ],
};

const volumes: Suite = {
  name: "volumes",
  tags: [],
  patterns: [
    "DefaultFsInlineVolume",
    "DefaultFsPreprovisionedPV",
    "DefaultFsDynamicPV",
    "Ext3InlineVolume",
    "Ext3PreprovisionedPV",
    "Ext3DynamicPV",
    "Ext4InlineVolume",
    "Ext4PreprovisionedPV",
    "Ext4DynamicPV",
    "XfsInlineVolume",
    "XfsPreprovisionedPV",
    "XfsDynamicPV",
    "NtfsInlineVolume",
    "NtfsPreprovisionedPV",
    "NtfsDynamicPV",
    "BlockVolModePreprovisionedPV",
    "BlockVolModeDynamicPV",
  ],
  minSize: "1Mi",
  skips: [noRawBlock],
  tests: [
    it("should store data"),
    it("should allow exec of files on the volume", {
      registeredWhen: (c) => !block(c),
      skips: [needsCap("exec", (c) => `Driver ${q(name(c))} does not support exec - skipping`)],
    }),
  ],
};

const volumeMode: Suite = {
  name: "volumeMode",
  tags: [],
  patterns: [
    "FsVolModePreprovisionedPV",
    "FsVolModeDynamicPV",
    "BlockVolModePreprovisionedPV",
    "BlockVolModeDynamicPV",
  ],
  minSize: "1Mi",
  skips: [],
  tests: [
    it("should fail to create pod by failing to mount volume", {
      tags: [SLOW],
      registeredWhen: (c) => c.pattern.volType === "PreprovisionedPV" && block(c) && !cap(c, "block"),
    }),
    it("should fail in binding dynamic provisioned PV to PVC", {
      tags: [SLOW, LINUX_ONLY],
      registeredWhen: (c) => c.pattern.volType === "DynamicPV" && block(c) && !cap(c, "block"),
    }),
    it("should fail to use a volume in a pod with mismatched mode", {
      tags: [SLOW],
      skips: [needsCap("block", (c) => `Driver ${q(name(c))} does not provide raw block - skipping`)],
    }),
    it("should not mount / map unused volumes in a pod [LinuxOnly]", { skips: [noRawBlock] }),
  ],
};

const volumeIO: Suite = {
  name: "volumeIO",
  tags: [],
  patterns: ["DefaultFsInlineVolume", "DefaultFsPreprovisionedPV", "DefaultFsDynamicPV", "NtfsDynamicPV"],
  minSize: "1Mi",
  skips: [skipVolTypes("PreprovisionedPV", "InlineVolume")],
  tests: [it("should write files of various sizes, verify size, validate content", { tags: [SLOW] })],
};

const kubeletDown = ["needs SSH access to the nodes (e2eskipper.SkipUnlessSSHKeyPresent)"];
const reconstruction = rule(
  (c) => name(c).startsWith("hostPath"),
  (c) => `Driver ${name(c)} does not support reconstruction, skipping`,
);

const subPath: Suite = {
  name: "subPath",
  tags: [],
  patterns: ["DefaultFsInlineVolume", "DefaultFsPreprovisionedPV", "DefaultFsDynamicPV", "NtfsDynamicPV"],
  minSize: "1Mi",
  skips: [skipVolTypes("PreprovisionedPV", "InlineVolume")],
  tests: [
    it("should support non-existent path"),
    it("should support existing directory"),
    it("should support existing single file [LinuxOnly]"),
    it("should support file as subpath [LinuxOnly]"),
    it("should fail if subpath directory is outside the volume", { tags: [SLOW, LINUX_ONLY] }),
    it("should fail if subpath file is outside the volume", { tags: [SLOW, LINUX_ONLY] }),
    it("should fail if non-existent subpath is outside the volume", { tags: [SLOW, LINUX_ONLY] }),
    it("should fail if subpath with backstepping is outside the volume", { tags: [SLOW, LINUX_ONLY] }),
    it("should support creating multiple subpath from same volumes", { tags: [SLOW] }),
    it("should support restarting containers using directory as subpath", { tags: [SLOW] }),
    it("should support restarting containers using file as subpath", { tags: [SLOW, LINUX_ONLY] }),
    it("should unmount if pod is gracefully deleted while kubelet is down", {
      tags: ["[Disruptive]", SLOW, LINUX_ONLY],
      skips: [reconstruction],
      runtimeSkips: kubeletDown,
    }),
    it("should unmount if pod is force deleted while kubelet is down", {
      tags: ["[Disruptive]", SLOW, LINUX_ONLY],
      skips: [reconstruction],
      runtimeSkips: kubeletDown,
    }),
    it("should support readOnly directory specified in the volumeMount"),
    it("should support readOnly file specified in the volumeMount [LinuxOnly]"),
    it("should support existing directories when readOnly specified in the volumeSource"),
    it("should verify container cannot write to subpath readonly volumes", { tags: [SLOW] }),
    it("should be able to unmount after the subpath directory is deleted [LinuxOnly]"),
  ],
};

const noPreprovisioned = rule(
  (c) => c.pattern.volType === "PreprovisionedPV",
  "This test doesn't work with pre-provisioned volume -- skipping",
);
const singleNode = rule(
  (c) => cap(c, "singleNodeVolume"),
  (c) => `Driver ${name(c)} only supports singleNodeVolume -- skipping`,
);
const twoNodes = [
  "fewer than 2 ready schedulable nodes (in one topology segment): Number of available nodes is less than 2 - skipping",
];
const fsCoveredByBlock = rule(
  (c) => c.pattern.volMode === "Filesystem",
  "Filesystem volume case should be covered by block volume case -- skipping",
);
const noMultiPods = needsCap(
  "multipods",
  (c) => `Driver ${q(name(c))} does not support multiple concurrent pods - skipping`,
);

const multiVolume: Suite = {
  name: "multiVolume",
  tags: [SLOW],
  patterns: [
    "FsVolModePreprovisionedPV",
    "FsVolModeDynamicPV",
    "BlockVolModePreprovisionedPV",
    "BlockVolModeDynamicPV",
    "Ext4DynamicPV",
    "XfsDynamicPV",
    "NtfsDynamicPV",
  ],
  minSize: "1Mi",
  skips: [skipVolTypes("PreprovisionedPV"), blockModeUnsupportedV],
  tests: [
    it(
      "should access to two volumes with the same volume mode and retain data across pod recreation on the same node",
      {
        skips: [noPreprovisioned],
      },
    ),
    it(
      "should access to two volumes with the same volume mode and retain data across pod recreation on different node",
      {
        skips: [noPreprovisioned, singleNode, specificNode],
        runtimeSkips: twoNodes,
      },
    ),
    it(
      "should access to two volumes with different volume mode and retain data across pod recreation on the same node",
      {
        skips: [fsCoveredByBlock, noPreprovisioned],
      },
    ),
    it(
      "should access to two volumes with different volume mode and retain data across pod recreation on different node",
      {
        skips: [fsCoveredByBlock, noPreprovisioned, singleNode, specificNode],
        runtimeSkips: twoNodes,
      },
    ),
    it("should concurrently access the single volume from pods on the same node", { skips: [noMultiPods] }),
    it("should concurrently access the volume and restored snapshot from pods on the same node [LinuxOnly]", {
      tags: [SNAPSHOT_FEATURE, "[Feature:VolumeSourceXFS]"],
      skips: [
        needsCap(
          "snapshotDataSource",
          (c) => `Driver ${q(name(c))} does not support volume snapshots - skipping`,
        ),
        rule(
          (c) => c.pattern.snapshotType === "",
          (c) => `Driver ${q(name(c))} does not support snapshots - skipping`,
        ),
        noSnapshotClass,
      ],
    }),
    it("should concurrently access the volume and its clone from pods on the same node [LinuxOnly]", {
      tags: ["[Feature:VolumeSourceXFS]"],
      skips: [
        needsCap("pvcDataSource", (c) => `Driver ${q(name(c))} does not support volume clone - skipping`),
      ],
    }),
    it("should concurrently access the single read-only volume from pods on the same node", {
      skips: [noMultiPods],
    }),
    it("should concurrently access the single volume from pods on different node", {
      skips: [needsCap("RWX", (c) => `Driver ${name(c)} doesn't support RWX -- skipping`), specificNode],
      runtimeSkips: twoNodes,
    }),
  ],
};

const noTopologyKeys = rule(
  (c) => c.driver.DriverInfo.TopologyKeys.length === 0,
  "Driver didn't provide topology keys -- skipping",
);

const topology: Suite = {
  name: "topology",
  tags: [],
  patterns: ["TopologyImmediate", "TopologyDelayed"],
  minSize: "",
  skips: [needsCap("topology", (c) => `Driver ${q(name(c))} does not support topology - skipping`)],
  tests: [
    it("should provision a volume and schedule a pod with AllowedTopologies", {
      skips: [noTopologyKeys],
      runtimeSkips: [
        "fewer topologies than NumAllowedTopologies: Not enough topologies in cluster -- skipping",
      ],
    }),
    it("should fail to schedule a pod which has topologies that conflict with AllowedTopologies", {
      skips: [noTopologyKeys],
      runtimeSkips: [
        "fewer topologies than NumAllowedTopologies+1: Not enough topologies in cluster -- skipping",
      ],
    }),
  ],
};

const capacity: Suite = {
  name: "capacity",
  tags: [],
  patterns: ["DefaultFsDynamicPV"],
  minSize: "1Mi",
  skips: [
    onlyDynamic("capacity"),
    needsCap("capacity", (c) => `Driver ${name(c)} doesn't publish storage capacity -- skipping`),
  ],
  tests: [it("provides storage capacity information")],
};

const volumeExpand: Suite = {
  name: "volume-expand",
  tags: [],
  patterns: [
    "DefaultFsDynamicPV",
    "XfsDynamicPV",
    "BlockVolModeDynamicPV",
    "DefaultFsDynamicPVAllowExpansion",
    "BlockVolModeDynamicPVAllowExpansion",
    "NtfsDynamicPV",
    "NtfsDynamicPVAllowExpansion",
  ],
  minSize: "1Gi",
  skips: [
    needsCap(
      "controllerExpansion",
      (c) => `Driver ${q(name(c))} does not support volume expansion - skipping`,
    ),
    blockUnsupported((c) => `Driver ${q(name(c))} does not support block volume mode - skipping`),
  ],
  tests: [
    it("should not allow expansion of pvcs without AllowVolumeExpansion property", {
      registeredWhen: (c) => !c.pattern.allowExpansion,
    }),
    it("Verify if offline PVC expansion works", {
      registeredWhen: (c) => c.pattern.allowExpansion,
      skips: [
        needsCap(
          "offlineExpansion",
          (c) => `Driver ${q(name(c))} does not support offline volume expansion - skipping`,
        ),
      ],
    }),
    it("should resize volume when PVC is edited while pod is using it", {
      registeredWhen: (c) => c.pattern.allowExpansion,
      skips: [
        needsCap(
          "onlineExpansion",
          (c) => `Driver ${q(name(c))} does not support online volume expansion - skipping`,
        ),
      ],
    }),
    it(
      "should resize volume when PVC is edited and the pod is re-created on the same node after controller resize is finished",
      {
        registeredWhen: (c) => c.pattern.allowExpansion,
        skips: [
          needsCap(
            "onlineExpansion",
            (c) => `Driver ${q(name(c))} does not support online volume expansion - skipping`,
          ),
        ],
      },
    ),
  ],
};

const SNAPSHOT_CONTAINERS = ["volume snapshot controller", ""];

const snapshottable: Suite = {
  name: "snapshottable",
  tags: [SNAPSHOT_FEATURE],
  patterns: [
    "DynamicSnapshotDelete",
    "DynamicSnapshotRetain",
    "EphemeralSnapshotDelete",
    "EphemeralSnapshotRetain",
    "PreprovisionedSnapshotDelete",
    "PreprovisionedSnapshotRetain",
  ],
  minSize: "1Mi",
  skips: [
    needsCap("snapshotDataSource", (c) => `Driver ${q(name(c))} does not support snapshots - skipping`),
  ],
  tests: [
    it("should check snapshot fields, check restore correctly works, check deletion (ephemeral)", {
      containers: SNAPSHOT_CONTAINERS,
      skips: [
        rule(
          (c) => c.pattern.volType !== "GenericEphemeralVolume",
          (c) => `volume type ${q(c.pattern.volType)} is not ephemeral`,
        ),
        noSnapshotClass,
      ],
    }),
    it(
      "should check snapshot fields, check restore correctly works after modifying source data, check deletion (persistent)",
      {
        containers: SNAPSHOT_CONTAINERS,
        skips: [
          rule(
            (c) => c.pattern.volType === "GenericEphemeralVolume",
            (c) => `volume type ${q(c.pattern.volType)} is ephemeral`,
          ),
          noSnapshotClass,
        ],
      },
    ),
  ],
};

const immediateWithTopology = rule(
  (c) => c.pattern.bindingMode === "Immediate" && c.driver.DriverInfo.TopologyKeys.length > 0,
  "VolumeBindingMode immediate is not compatible with a multi-topology environment.",
);
// TestEphemeral: a CSI inline volume the driver can only mount read-only cannot serve a read/write test.
const readOnlyInline = (count: number): SkipRule => ({
  when: (c) => c.pattern.volType === "CSIInlineVolume" && firstReadOnlyInline(c, count) >= 0,
  message: (c) =>
    `inline ephemeral volume #${firstReadOnlyInline(c, count)} is read-only, but the test needs a read/write volume`,
});
function firstReadOnlyInline(c: SkipContext, count: number): number {
  const vols = c.driver.InlineVolumes;
  if (vols.length === 0) return -1;
  for (let i = 0; i < count; i++) if (vols[i % vols.length]?.ReadOnly === true) return i;
  return -1;
}

const ephemeral: Suite = {
  name: "ephemeral",
  tags: [],
  // Upstream registers the generic patterns (BaseSuites) and the CSI one (CSISuites) as two
  // instances of this suite; both render as "ephemeral".
  patterns: [
    "GenericEphemeralLateBinding",
    "GenericEphemeralImmediateBinding",
    "BlockVolModeGenericEphemeralVolume",
    "DefaultFsCSIEphemeralVolume",
  ],
  minSize: "",
  skips: [noRawBlock],
  tests: [
    it("should create read-only inline ephemeral volume", {
      skips: [rule(block, "raw block volumes cannot be read-only"), immediateWithTopology],
    }),
    it("should create read/write inline ephemeral volume", {
      skips: [immediateWithTopology, readOnlyInline(1)],
    }),
    it("should support expansion of pvcs created for ephemeral pvcs", {
      skips: [
        rule(
          (c) => c.pattern.volType !== "GenericEphemeralVolume",
          (c) => `Skipping ${c.pattern.volType} test for expansion`,
        ),
        immediateWithTopology,
        needsCap(
          "onlineExpansion",
          (c) => `Driver ${q(name(c))} does not support online volume expansion - skipping`,
        ),
      ],
    }),
    it("should support two pods which have the same volume definition", {
      skips: [immediateWithTopology, readOnlyInline(1)],
    }),
    it("should support multiple inline ephemeral volumes", {
      skips: [
        rule(
          (c) => c.pattern.bindingMode === "Immediate" && c.pattern.volType === "GenericEphemeralVolume",
          "Multiple generic ephemeral volumes with immediate binding may cause pod startup failures when the volumes get created in separate topology segments.",
        ),
        immediateWithTopology,
        readOnlyInline(2),
      ],
    }),
  ],
};

const volumeLimits: Suite = {
  name: "volumeLimits",
  tags: [],
  patterns: ["FsVolModeDynamicPV", "DefaultFsGenericEphemeralVolume"],
  minSize: "",
  skips: [
    onlyDynamic("volumeLimits"),
    needsCap("volumeLimits", (c) => `Driver ${name(c)} does not support volume limits`),
  ],
  tests: [
    it("should support volume limits", { tags: ["[Serial]"] }),
    it("should verify that all csinodes have volume limits", {
      skips: [needsCap("volumeLimits", (c) => `driver ${name(c)} does not support volume limits`)],
    }),
  ],
};

const SELINUX = "[Feature:SELinux]";
const fsMode = (c: SkipContext): boolean => c.pattern.volMode === "Filesystem";

const disruptive: Suite = {
  name: "disruptive",
  tags: ["[Disruptive]", LINUX_ONLY],
  patterns: [
    "DefaultFsInlineVolume",
    "FsVolModePreprovisionedPV",
    "FsVolModeDynamicPV",
    "BlockVolModePreprovisionedPV",
    "BlockVolModeDynamicPV",
  ],
  minSize: "",
  skips: [skipVolTypes("PreprovisionedPV"), blockModeUnsupportedV],
  tests: [
    // Upstream registers each test only for the volume modes it has a body for; note that a
    // pattern with volMode "" (DefaultFsInlineVolume) gets none.
    it("Should test that pv written before kubelet restart is readable after restart.", {
      registeredWhen: (c) => block(c) || fsMode(c),
      runtimeSkips: kubeletDown,
    }),
    it(
      "Should test that pv used in a pod that is deleted while the kubelet is down cleans up when the kubelet returns.",
      {
        registeredWhen: block,
        runtimeSkips: kubeletDown,
      },
    ),
    it(
      "Should test that pv used in a pod that is force deleted while the kubelet is down cleans up when the kubelet returns.",
      {
        registeredWhen: block,
        runtimeSkips: kubeletDown,
      },
    ),
    ...[
      "Should test that pv used in a pod that is deleted while the kubelet is down is usable by a new pod when kubelet returns",
      "Should test that pv used in a pod that is force deleted while the kubelet is down is usable by a new pod when kubelet returns",
      "Should test that pv used in a pod that is deleted while the kubelet is down is usable by a new pod with a different SELinux context when kubelet returns",
      "Should test that pv used in a pod that is force deleted while the kubelet is down is usable by a new pod with a different SELinux context when kubelet returns",
    ].map((title) => it(title, { tags: [SELINUX], registeredWhen: fsMode, runtimeSkips: kubeletDown })),
  ],
};

const readWriteOncePod: Suite = {
  name: "read-write-once-pod",
  tags: ["[MinimumKubeletVersion:1.27]"],
  patterns: ["DefaultFsDynamicPV"],
  minSize: "",
  skips: [
    needsCap("readWriteOncePod", (c) => `Driver ${q(name(c))} doesn't support ReadWriteOncePod - skipping`),
  ],
  tests: [
    it("should preempt lower priority pods using ReadWriteOncePod volumes"),
    it("should block a second pod from using an in-use ReadWriteOncePod volume on the same node"),
  ],
};

const volumeMountGroupConflict = rule(
  (c) => cap(c, "volumeMountGroup"),
  (c) => `Driver ${q(name(c))} supports VolumeMountGroup, which is incompatible with this test - skipping`,
);
const fsGroupCase = (
  policy: "Always" | "OnRootMismatch",
  text: string,
  supportsVolumeMountGroup: boolean,
): SuiteTest =>
  it(`(${policy})[LinuxOnly], ${text}`, {
    skips: supportsVolumeMountGroup ? [] : [volumeMountGroupConflict],
    runtimeSkips: ["Windows nodes (SkipIfNodeOSDistroIs windows)"],
  });

const fsgroupchangepolicy: Suite = {
  name: "fsgroupchangepolicy",
  tags: [],
  patterns: ["DefaultFsDynamicPV"],
  minSize: "1Mi",
  skips: [
    skipVolTypes("CSIInlineVolume", "GenericEphemeralVolume"),
    needsCap("fsGroup", (c) => `Driver ${q(name(c))} does not support FsGroup - skipping`),
    rule(block, "Test does not support non-filesystem volume mode - skipping"),
    onlyDynamic("fsgroupchangepolicy"),
  ],
  tests: [
    fsGroupCase(
      "Always",
      "pod created with an initial fsgroup, new pod fsgroup applied to volume contents",
      true,
    ),
    fsGroupCase(
      "Always",
      "rwop pod created with an initial fsgroup, new pod fsgroup applied to volume contents",
      true,
    ),
    fsGroupCase(
      "Always",
      "pod created with an initial fsgroup, volume contents ownership changed via chgrp in first pod, new pod with same fsgroup applied to the volume contents",
      false,
    ),
    fsGroupCase(
      "Always",
      "pod created with an initial fsgroup, volume contents ownership changed via chgrp in first pod, new pod with different fsgroup applied to the volume contents",
      false,
    ),
    fsGroupCase(
      "OnRootMismatch",
      "pod created with an initial fsgroup, new pod fsgroup applied to volume contents",
      false,
    ),
    fsGroupCase(
      "OnRootMismatch",
      "pod created with an initial fsgroup, volume contents ownership changed via chgrp in first pod, new pod with same fsgroup skips ownership changes to the volume contents",
      false,
    ),
    fsGroupCase(
      "OnRootMismatch",
      "pod created with an initial fsgroup, volume contents ownership changed via chgrp in first pod, new pod with different fsgroup applied to the volume contents",
      false,
    ),
  ],
};

const noVAC = rule(
  (c) => !hasSource(c.driver.VolumeAttributesClass),
  (c) => `Driver ${q(name(c))} has no configured VolumeAttributesClass - skipping`,
);

const volumeModify: Suite = {
  name: "volume-modify",
  // framework.WithFeatureGate(VolumeAttributesClass); releases where the gate is beta also add "[Beta]".
  tags: ["[FeatureGate:VolumeAttributesClass]"],
  patterns: ["DefaultFsDynamicPV", "BlockVolModeDynamicPV", "NtfsDynamicPV"],
  minSize: "1Gi",
  skips: [blockUnsupported((c) => `Driver ${q(name(c))} does not support block volume mode - skipping`)],
  tests: [
    it("should create a volume with VAC", { skips: [noVAC] }),
    it("should modify volume with no VAC", { skips: [noVAC] }),
    it("should modify volume that already has a VAC", { skips: [noVAC] }),
    it("should recover from invalid target VAC by updating PVC to new valid VAC", {
      tags: ["[Flaky]"],
      skips: [noVAC],
    }),
    it("should be protected by vac-protection finalizer", { skips: [noVAC] }),
  ],
};

const volumeGroupSnapshottable: Suite = {
  name: "volumegroupsnapshottable",
  // feature.VolumeGroupSnapshotDataSource; its rendered name is unverified (README "Uncertain").
  tags: ["[Feature:volumegroupsnapshot]"],
  patterns: ["VolumeGroupSnapshotDelete"],
  minSize: "1Mi",
  skips: [
    rule(
      (c) => !cap(c, "groupSnapshot") || !hasSource(c.driver.GroupSnapshotClass),
      (c) => `Driver ${q(name(c))} does not support group snapshots - skipping`,
    ),
  ],
  tests: [
    it("should create snapshots for StatefulSet volumes and verify data consistency after restore", {
      containers: ["VolumeGroupSnapshottable", ""],
    }),
  ],
};

/** The suites csikit implements, in upstream's CSISuites order (stress/perf suites left out). */
export const SUITES: readonly Suite[] = [
  capacity,
  volumes,
  volumeIO,
  volumeMode,
  subPath,
  provisioning,
  multiVolume,
  volumeExpand,
  disruptive,
  volumeLimits,
  topology,
  fsgroupchangepolicy,
  volumeGroupSnapshottable,
  ephemeral,
  snapshottable,
  readWriteOncePod,
  volumeModify,
];

export function suiteByName(suiteName: string): Suite | undefined {
  return SUITES.find((s) => s.name === suiteName);
}
