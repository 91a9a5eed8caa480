// Golden tables: for each plugin, in-tree objects and the exact CSI objects upstream
// csi-translation-lib (Kubernetes 1.32) makes of them, and back. Cases follow upstream's own
// plugin tests where they exist. Every translation is also checked not to touch its input
// (inputs are deep-frozen, so a write throws).

import { test } from "node:test";
import assert from "node:assert/strict";
import type { PersistentVolume, StorageClass, Volume } from "../api/index.ts";
import {
  TranslationError,
  translateCSIPVToInTree,
  translateInTreeInlineVolumeToCSI,
  translateInTreePVToCSI,
  translateInTreeStorageClassToCSI,
} from "./index.ts";

function freeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const v of Object.values(value)) freeze(v);
    Object.freeze(value);
  }
  return value;
}

interface PVCase {
  name: string;
  inTree: PersistentVolume;
  csi: PersistentVolume;
  /** Which directions the pair holds for (upstream loses or adds fields in some). Default both. */
  only?: "toCSI" | "toInTree";
}

const ZONE = "topology.kubernetes.io/zone";
const REGION = "topology.kubernetes.io/region";
const BETA_ZONE = "failure-domain.beta.kubernetes.io/zone";
const BETA_REGION = "failure-domain.beta.kubernetes.io/region";

function affinity(...exprs: [string, string[]][]) {
  return {
    required: {
      nodeSelectorTerms: [
        { matchExpressions: exprs.map(([key, values]) => ({ key, operator: "In" as const, values })) },
      ],
    },
  };
}

const PV_CASES: PVCase[] = [
  // ---- GCE PD
  {
    name: "gce-pd zonal from the GA zone label, with region, partition and fsType",
    inTree: {
      metadata: { name: "pv1", labels: { [ZONE]: "us-east1-a", [REGION]: "us-east1" } },
      spec: {
        accessModes: ["ReadWriteOnce"],
        gcePersistentDisk: { pdName: "pd-name", fsType: "ext4", partition: 2 },
        nodeAffinity: affinity([ZONE, ["us-east1-a"]], [REGION, ["us-east1"]]),
      },
    },
    csi: {
      metadata: { name: "pv1", labels: { [ZONE]: "us-east1-a", [REGION]: "us-east1" } },
      spec: {
        accessModes: ["ReadWriteOnce"],
        csi: {
          driver: "pd.csi.storage.gke.io",
          volumeHandle: "projects/UNSPECIFIED/zones/us-east1-a/disks/pd-name",
          fsType: "ext4",
          volumeAttributes: { partition: "2" },
        },
        nodeAffinity: affinity(["topology.gke.io/zone", ["us-east1-a"]], [REGION, ["us-east1"]]),
      },
    },
  },
  {
    name: "gce-pd regional disk from a multi-zone beta label: regions/<region> handle, beta region becomes GA",
    inTree: {
      metadata: { name: "pv2", labels: { [BETA_ZONE]: "us-east1-a__us-east1-c" } },
      spec: {
        gcePersistentDisk: { pdName: "pd-name", readOnly: true },
        nodeAffinity: affinity([BETA_ZONE, ["us-east1-a", "us-east1-c"]], [BETA_REGION, ["us-east1"]]),
      },
    },
    csi: {
      metadata: { name: "pv2", labels: { [BETA_ZONE]: "us-east1-a__us-east1-c" } },
      spec: {
        csi: {
          driver: "pd.csi.storage.gke.io",
          volumeHandle: "projects/UNSPECIFIED/regions/us-east1/disks/pd-name",
          readOnly: true,
          volumeAttributes: { partition: "" },
        },
        nodeAffinity: affinity(
          ["topology.gke.io/zone", ["us-east1-a", "us-east1-c"]],
          [REGION, ["us-east1"]],
        ),
      },
    },
    only: "toCSI",
  },
  {
    name: "gce-pd without zone labels: UNSPECIFIED zone; RWX and RWO+ROX collapse to RWO",
    inTree: {
      metadata: { name: "pv3" },
      spec: { accessModes: ["ReadWriteMany", "ReadOnlyMany"], gcePersistentDisk: { pdName: "disk" } },
    },
    csi: {
      metadata: { name: "pv3" },
      spec: {
        accessModes: ["ReadWriteOnce"],
        csi: {
          driver: "pd.csi.storage.gke.io",
          volumeHandle: "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk",
          volumeAttributes: { partition: "" },
        },
      },
    },
    only: "toCSI",
  },
  {
    name: "gce-pd CSI PV made by the driver (real project): zone label and region added for rollback",
    inTree: {
      metadata: { name: "pvc-1", labels: { [ZONE]: "us-central1-c", [REGION]: "us-central1" } },
      spec: {
        gcePersistentDisk: { pdName: "pvc-1", fsType: "ext4" },
        nodeAffinity: affinity([ZONE, ["us-central1-c"]], [REGION, ["us-central1"]]),
      },
    },
    csi: {
      metadata: { name: "pvc-1" },
      spec: {
        csi: {
          driver: "pd.csi.storage.gke.io",
          volumeHandle: "projects/my-proj/zones/us-central1-c/disks/pvc-1",
          fsType: "ext4",
        },
        nodeAffinity: affinity(["topology.gke.io/zone", ["us-central1-c"]]),
      },
    },
    only: "toInTree",
  },
  // ---- AWS EBS
  {
    name: "aws-ebs: aws://zone/vol- handle becomes the bare ID; labels become node affinity",
    inTree: {
      metadata: { name: "ebs1", labels: { [ZONE]: "us-east-1a" } },
      spec: { awsElasticBlockStore: { volumeID: "aws://us-east-1a/vol-02399794d890f9375", fsType: "ext4" } },
    },
    csi: {
      metadata: { name: "ebs1", labels: { [ZONE]: "us-east-1a" } },
      spec: {
        awsElasticBlockStore: undefined,
        csi: {
          driver: "ebs.csi.aws.com",
          volumeHandle: "vol-02399794d890f9375",
          fsType: "ext4",
          volumeAttributes: { partition: "0" },
        },
        nodeAffinity: affinity(["topology.ebs.csi.aws.com/zone", ["us-east-1a"]]),
      },
    },
    only: "toCSI",
  },
  {
    name: "aws-ebs round trip with partition, readOnly and full topology",
    inTree: {
      metadata: { name: "ebs2", labels: { [ZONE]: "us-west-2-lax-1a", [REGION]: "us-west-2" } },
      spec: {
        awsElasticBlockStore: { volumeID: "vol-1", partition: 3, readOnly: true },
        nodeAffinity: affinity([ZONE, ["us-west-2-lax-1a"]], [REGION, ["us-west-2"]]),
      },
    },
    csi: {
      metadata: { name: "ebs2", labels: { [ZONE]: "us-west-2-lax-1a", [REGION]: "us-west-2" } },
      spec: {
        csi: {
          driver: "ebs.csi.aws.com",
          volumeHandle: "vol-1",
          readOnly: true,
          volumeAttributes: { partition: "3" },
        },
        nodeAffinity: affinity(
          ["topology.ebs.csi.aws.com/zone", ["us-west-2-lax-1a"]],
          [REGION, ["us-west-2"]],
        ),
      },
    },
  },
  // ---- Cinder
  {
    name: "cinder: zone to the driver key, no region derived back",
    inTree: {
      metadata: { name: "c1", labels: { [ZONE]: "nova" } },
      spec: { cinder: { volumeID: "8a0f-11", fsType: "xfs" }, nodeAffinity: affinity([ZONE, ["nova"]]) },
    },
    csi: {
      metadata: { name: "c1", labels: { [ZONE]: "nova" } },
      spec: {
        csi: { driver: "cinder.csi.openstack.org", volumeHandle: "8a0f-11", fsType: "xfs" },
        nodeAffinity: affinity(["topology.cinder.csi.openstack.org/zone", ["nova"]]),
      },
    },
  },
  // ---- Azure Disk
  {
    name: "azure-disk managed disk with caching mode, fsType and kind",
    inTree: {
      metadata: { name: "ad1" },
      spec: {
        azureDisk: {
          diskName: "name",
          diskURI: "/subscriptions/12/resourceGroups/23/providers/Microsoft.Compute/disks/name",
          cachingMode: "ReadOnly",
          fsType: "ext4",
          readOnly: false,
          kind: "Managed",
        },
      },
    },
    csi: {
      metadata: { name: "ad1" },
      spec: {
        csi: {
          driver: "disk.csi.azure.com",
          volumeHandle: "/subscriptions/12/resourceGroups/23/providers/Microsoft.Compute/disks/name",
          fsType: "ext4",
          volumeAttributes: {
            kind: "Managed",
            "csi-migration": "true",
            cachingMode: "ReadOnly",
            fsType: "ext4",
          },
        },
      },
    },
  },
  {
    name: "azure-disk unmanaged blob disk back from CSI (name from /vhds/, pointer fields written)",
    inTree: {
      metadata: { name: "ad2" },
      spec: {
        azureDisk: {
          diskName: "disk.vhd",
          diskURI: "https://acct.blob.core.windows.net/vhds/disk.vhd",
          fsType: "",
          readOnly: true,
          kind: "Dedicated",
        },
      },
    },
    csi: {
      metadata: { name: "ad2" },
      spec: {
        csi: {
          driver: "disk.csi.azure.com",
          volumeHandle: "https://acct.blob.core.windows.net/vhds/disk.vhd",
          readOnly: true,
          volumeAttributes: { kind: "Dedicated" },
        },
      },
    },
    only: "toInTree",
  },
  // ---- Azure File
  {
    name: "azure-file: account from the secret name, resource group annotation, secret namespace",
    inTree: {
      metadata: { name: "af1", annotations: { "kubernetes.io/azure-file-resource-group": "rg" } },
      spec: {
        azureFile: {
          secretName: "azure-storage-account-acct-secret",
          shareName: "share",
          secretNamespace: "team",
        },
      },
    },
    csi: {
      metadata: { name: "af1", annotations: { "kubernetes.io/azure-file-resource-group": "rg" } },
      spec: {
        csi: {
          driver: "file.csi.azure.com",
          volumeHandle: "rg#acct#share##team",
          volumeAttributes: { sharename: "share" },
          nodeStageSecretRef: { name: "azure-storage-account-acct-secret", namespace: "team" },
        },
      },
    },
  },
  {
    name: "azure-file without secretNamespace: the claim's namespace; other secret names are the account",
    inTree: {
      metadata: { name: "af2" },
      spec: {
        azureFile: { secretName: "mysecret", shareName: "s", readOnly: true },
        claimRef: { namespace: "apps", name: "c" },
      },
    },
    csi: {
      metadata: { name: "af2" },
      spec: {
        claimRef: { namespace: "apps", name: "c" },
        csi: {
          driver: "file.csi.azure.com",
          volumeHandle: "#mysecret#s##apps",
          readOnly: true,
          volumeAttributes: { sharename: "s" },
          nodeStageSecretRef: { name: "mysecret", namespace: "apps" },
        },
      },
    },
    only: "toCSI",
  },
  {
    name: "azure-file CSI PV provisioned by the driver: share, secret and resource group from the handle",
    inTree: {
      metadata: { name: "af3", annotations: { "kubernetes.io/azure-file-resource-group": "rg" } },
      spec: {
        azureFile: {
          secretName: "azure-storage-account-f5713de-secret",
          shareName: "pvc-file",
          secretNamespace: "default",
        },
      },
    },
    csi: {
      metadata: { name: "af3" },
      spec: { csi: { driver: "file.csi.azure.com", volumeHandle: "rg#f5713de#pvc-file#diskname.vhd" } },
    },
    only: "toInTree",
  },
  // ---- vSphere
  {
    name: "vsphere: VMDK path is the handle, storage policy an attribute, zone and region keys",
    inTree: {
      metadata: { name: "vs1", labels: { [ZONE]: "z1", [REGION]: "r1" } },
      spec: {
        vsphereVolume: {
          volumePath: "[vsanDatastore] kubevols/vol.vmdk",
          fsType: "ext4",
          storagePolicyName: "gold",
        },
      },
    },
    csi: {
      metadata: { name: "vs1", labels: { [ZONE]: "z1", [REGION]: "r1" } },
      spec: {
        csi: {
          driver: "csi.vsphere.vmware.com",
          volumeHandle: "[vsanDatastore] kubevols/vol.vmdk",
          fsType: "ext4",
          volumeAttributes: { storagepolicyname: "gold" },
        },
        nodeAffinity: {
          required: {
            nodeSelectorTerms: [
              {
                matchExpressions: [
                  { key: "topology.csi.vmware.com/zone", operator: "In", values: ["z1"] },
                  { key: "topology.csi.vmware.com/region", operator: "In", values: ["r1"] },
                ],
              },
            ],
          },
        },
      },
    },
    only: "toCSI",
  },
  {
    name: "vsphere back from a driver-made PV: the path comes from initialvolumefilepath",
    inTree: {
      metadata: { name: "vs2", labels: { [ZONE]: "z1" } },
      spec: {
        vsphereVolume: { volumePath: "[ds] kubevols/pvc.vmdk", fsType: "ext4" },
        nodeAffinity: affinity([ZONE, ["z1"]]),
      },
    },
    csi: {
      metadata: { name: "vs2" },
      spec: {
        csi: {
          driver: "csi.vsphere.vmware.com",
          volumeHandle: "4f2c-fcd-id",
          fsType: "ext4",
          volumeAttributes: { initialvolumefilepath: "[ds] kubevols/pvc.vmdk" },
        },
        nodeAffinity: affinity(["topology.csi.vmware.com/zone", ["z1"]]),
      },
    },
    only: "toInTree",
  },
  // ---- Portworx
  {
    name: "portworx: auth secret annotations become every CSI secret",
    inTree: {
      metadata: {
        name: "px1",
        annotations: {
          "openstorage.io/auth-secret-name": "tok",
          "openstorage.io/auth-secret-namespace": "px",
        },
      },
      spec: { portworxVolume: { volumeID: "vid", fsType: "ext4", readOnly: true } },
    },
    csi: {
      metadata: {
        name: "px1",
        annotations: {
          "openstorage.io/auth-secret-name": "tok",
          "openstorage.io/auth-secret-namespace": "px",
        },
      },
      spec: {
        csi: {
          driver: "pxd.portworx.com",
          volumeHandle: "vid",
          fsType: "ext4",
          readOnly: true,
          controllerPublishSecretRef: { name: "tok", namespace: "px" },
          nodeStageSecretRef: { name: "tok", namespace: "px" },
          nodePublishSecretRef: { name: "tok", namespace: "px" },
          controllerExpandSecretRef: { name: "tok", namespace: "px" },
          nodeExpandSecretRef: { name: "tok", namespace: "px" },
        },
      },
    },
    only: "toCSI",
  },
  {
    name: "portworx round trip",
    inTree: { metadata: { name: "px2" }, spec: { portworxVolume: { volumeID: "v2" } } },
    csi: { metadata: { name: "px2" }, spec: { csi: { driver: "pxd.portworx.com", volumeHandle: "v2" } } },
  },
];

/** Drops keys whose value is undefined (a golden may spell a removed source as undefined). */
function clean<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

for (const c of PV_CASES) {
  test(`golden PV: ${c.name}`, () => {
    if (c.only !== "toInTree") {
      const input = freeze(structuredClone(c.inTree));
      assert.deepEqual(clean(translateInTreePVToCSI(input)), clean(c.csi), "in-tree → CSI");
    }
    if (c.only !== "toCSI") {
      const input = freeze(structuredClone(c.csi));
      assert.deepEqual(clean(translateCSIPVToInTree(input)), clean(c.inTree), "CSI → in-tree");
    }
  });
}

interface InlineCase {
  name: string;
  volume: Volume;
  namespace?: string;
  pv: PersistentVolume;
}

const INLINE_CASES: InlineCase[] = [
  {
    name: "gce-pd read-only inline: UNSPECIFIED project and zone, ROX",
    volume: { name: "v", gcePersistentDisk: { pdName: "disk1", readOnly: true, partition: 1 } },
    pv: {
      metadata: { name: "pd.csi.storage.gke.io-disk1" },
      spec: {
        csi: {
          driver: "pd.csi.storage.gke.io",
          volumeHandle: "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk1",
          readOnly: true,
          volumeAttributes: { partition: "1" },
        },
        accessModes: ["ReadOnlyMany"],
        volumeMode: "Filesystem",
      },
    },
  },
  {
    name: "aws-ebs inline: bare ID, RWO, Filesystem",
    volume: { name: "v", awsElasticBlockStore: { volumeID: "aws:///vol-abc", fsType: "xfs" } },
    pv: {
      metadata: { name: "ebs.csi.aws.com-vol-abc" },
      spec: {
        csi: {
          driver: "ebs.csi.aws.com",
          volumeHandle: "vol-abc",
          fsType: "xfs",
          volumeAttributes: { partition: "0" },
        },
        accessModes: ["ReadWriteOnce"],
        volumeMode: "Filesystem",
      },
    },
  },
  {
    name: "cinder inline",
    volume: { name: "v", cinder: { volumeID: "c-1" } },
    pv: {
      metadata: { name: "cinder.csi.openstack.org-c-1" },
      spec: {
        csi: { driver: "cinder.csi.openstack.org", volumeHandle: "c-1" },
        accessModes: ["ReadWriteOnce"],
        volumeMode: "Filesystem",
      },
    },
  },
  {
    name: "azure-disk inline: an empty caching mode is skipped",
    volume: {
      name: "v",
      azureDisk: {
        diskName: "d",
        diskURI: "/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/disks/d",
        cachingMode: "",
        kind: "Managed",
      },
    },
    pv: {
      metadata: { name: "disk.csi.azure.com-d" },
      spec: {
        csi: {
          driver: "disk.csi.azure.com",
          volumeHandle: "/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/disks/d",
          volumeAttributes: { kind: "Managed", "csi-migration": "true" },
        },
        accessModes: ["ReadWriteOnce"],
        volumeMode: "Filesystem",
      },
    },
  },
  {
    name: "azure-file inline: the secret lives in the pod's namespace; RWX",
    volume: { name: "v", azureFile: { secretName: "azure-storage-account-acct-secret", shareName: "share" } },
    namespace: "web",
    pv: {
      metadata: { name: "file.csi.azure.com-share" },
      spec: {
        csi: {
          driver: "file.csi.azure.com",
          volumeHandle: "#acct#share##web",
          volumeAttributes: { sharename: "share" },
          nodeStageSecretRef: { name: "azure-storage-account-acct-secret", namespace: "web" },
        },
        accessModes: ["ReadWriteMany"],
        volumeMode: "Filesystem",
      },
    },
  },
  {
    name: "vsphere inline",
    volume: { name: "v", vsphereVolume: { volumePath: "[ds] a.vmdk" } },
    pv: {
      metadata: { name: "csi.vsphere.vmware.com-[ds] a.vmdk" },
      spec: {
        csi: { driver: "csi.vsphere.vmware.com", volumeHandle: "[ds] a.vmdk" },
        accessModes: ["ReadWriteOnce"],
        volumeMode: "Filesystem",
      },
    },
  },
  {
    name: "portworx read-only inline: ROX",
    volume: { name: "v", portworxVolume: { volumeID: "p1", readOnly: true } },
    pv: {
      metadata: { name: "pxd.portworx.com-p1" },
      spec: {
        csi: { driver: "pxd.portworx.com", volumeHandle: "p1" },
        accessModes: ["ReadOnlyMany"],
        volumeMode: "Filesystem",
      },
    },
  },
];

for (const c of INLINE_CASES) {
  test(`golden inline: ${c.name}`, () => {
    const input = freeze(structuredClone(c.volume));
    assert.deepEqual(clean(translateInTreeInlineVolumeToCSI(input, c.namespace ?? "")), clean(c.pv));
  });
}

interface ClassCase {
  name: string;
  plugin: string;
  sc: Partial<StorageClass>;
  want: Partial<StorageClass> | RegExp;
}

const SC_CASES: ClassCase[] = [
  {
    name: "gce-pd passes unknown parameters",
    plugin: "kubernetes.io/gce-pd",
    sc: { parameters: { foo: "bar" } },
    want: { parameters: { foo: "bar" } },
  },
  {
    name: "gce-pd fstype is prefixed",
    plugin: "kubernetes.io/gce-pd",
    sc: { parameters: { fstype: "myfs" } },
    want: { parameters: { "csi.storage.k8s.io/fstype": "myfs" } },
  },
  {
    name: "gce-pd zone becomes allowedTopologies",
    plugin: "kubernetes.io/gce-pd",
    sc: { parameters: { zone: "foo" } },
    want: {
      parameters: {},
      allowedTopologies: [{ matchLabelExpressions: [{ key: "topology.gke.io/zone", values: ["foo"] }] }],
    },
  },
  {
    name: "gce-pd zones become allowedTopologies",
    plugin: "kubernetes.io/gce-pd",
    sc: { parameters: { zones: "foo,bar,baz" } },
    want: {
      parameters: {},
      allowedTopologies: [
        { matchLabelExpressions: [{ key: "topology.gke.io/zone", values: ["foo", "bar", "baz"] }] },
      ],
    },
  },
  {
    name: "gce-pd beta zone topology is rewritten, other keys kept",
    plugin: "kubernetes.io/gce-pd",
    sc: {
      allowedTopologies: [
        {
          matchLabelExpressions: [
            { key: BETA_ZONE, values: ["foo"] },
            { key: "rack", values: ["r1"] },
          ],
        },
      ],
    },
    want: {
      allowedTopologies: [
        {
          matchLabelExpressions: [
            { key: "topology.gke.io/zone", values: ["foo"] },
            { key: "rack", values: ["r1"] },
          ],
        },
      ],
      parameters: {},
    },
  },
  {
    name: "gce-pd zone together with allowedTopologies is an error",
    plugin: "kubernetes.io/gce-pd",
    sc: {
      parameters: { zone: "foo" },
      allowedTopologies: [{ matchLabelExpressions: [{ key: ZONE, values: ["foo"] }] }],
    },
    want: /cannot simultaneously set allowed topologies and zone\/zones parameters/,
  },
  {
    name: "aws-ebs iopsPerGB also allows automatic IOPS increase",
    plugin: "kubernetes.io/aws-ebs",
    sc: { parameters: { iopsPerGB: "100", fsType: "ext3" } },
    want: {
      parameters: {
        iopsPerGB: "100",
        allowautoiopspergbincrease: "true",
        "csi.storage.k8s.io/fstype": "ext3",
      },
    },
  },
  {
    name: "aws-ebs GA zone topology is rewritten",
    plugin: "kubernetes.io/aws-ebs",
    sc: { allowedTopologies: [{ matchLabelExpressions: [{ key: ZONE, values: ["us-east-1a"] }] }] },
    want: {
      parameters: {},
      allowedTopologies: [
        { matchLabelExpressions: [{ key: "topology.ebs.csi.aws.com/zone", values: ["us-east-1a"] }] },
      ],
    },
  },
  {
    name: "cinder keeps availability, prefixes fstype, rewrites topology",
    plugin: "kubernetes.io/cinder",
    sc: {
      parameters: { availability: "nova", fstype: "ext4" },
      allowedTopologies: [{ matchLabelExpressions: [{ key: ZONE, values: ["nova"] }] }],
    },
    want: {
      parameters: { availability: "nova", "csi.storage.k8s.io/fstype": "ext4" },
      allowedTopologies: [
        { matchLabelExpressions: [{ key: "topology.cinder.csi.openstack.org/zone", values: ["nova"] }] },
      ],
    },
  },
  {
    name: "azure-disk marks csi-migration and keeps fsType unprefixed",
    plugin: "kubernetes.io/azure-disk",
    sc: { parameters: { skuname: "Premium_LRS", fsType: "xfs", zoned: "true", zones: "eastus-1" } },
    want: {
      parameters: { skuname: "Premium_LRS", fsType: "xfs", zoned: "true", "csi-migration": "true" },
      allowedTopologies: [
        { matchLabelExpressions: [{ key: "topology.disk.csi.azure.com/zone", values: ["eastus-1"] }] },
      ],
    },
  },
  {
    name: "azure-file passes through",
    plugin: "kubernetes.io/azure-file",
    sc: { parameters: { skuName: "Standard_LRS" } },
    want: { parameters: { skuName: "Standard_LRS" } },
  },
  {
    name: "vsphere renames known parameters, drops unknown ones, marks csimigration",
    plugin: "kubernetes.io/vsphere-volume",
    sc: {
      parameters: {
        datastore: "vsanDatastore",
        diskformat: "thin",
        storagePolicyName: "gold",
        hostFailuresToTolerate: "1",
        fstype: "ext4",
        unknown: "x",
      },
    },
    want: {
      parameters: {
        "datastore-migrationparam": "vsanDatastore",
        "diskformat-migrationparam": "thin",
        storagepolicyname: "gold",
        "hostfailurestotolerate-migrationparam": "1",
        "csi.storage.k8s.io/fstype": "ext4",
        csimigration: "true",
      },
    },
  },
  {
    name: "portworx renames the provisioner and maps the auth secret",
    plugin: "kubernetes.io/portworx-volume",
    sc: {
      parameters: {
        repl: "2",
        "openstorage.io/auth-secret-name": "tok",
        "openstorage.io/auth-secret-namespace": "px",
      },
    },
    want: {
      provisioner: "pxd.portworx.com",
      parameters: {
        repl: "2",
        ...Object.fromEntries(
          [
            "provisioner",
            "controller-publish",
            "node-stage",
            "node-publish",
            "controller-expand",
            "node-expand",
          ].flatMap((op) => [
            [`csi.storage.k8s.io/${op}-secret-name`, "tok"],
            [`csi.storage.k8s.io/${op}-secret-namespace`, "px"],
          ]),
        ),
      },
    },
  },
];

for (const c of SC_CASES) {
  test(`golden StorageClass: ${c.name}`, () => {
    const sc = freeze({ metadata: { name: "sc" }, provisioner: c.plugin, ...c.sc });
    if (c.want instanceof RegExp) {
      assert.throws(
        () => translateInTreeStorageClassToCSI(c.plugin, sc),
        (e: unknown) => e instanceof TranslationError && (c.want as RegExp).test(e.message),
      );
      return;
    }
    const want = { metadata: { name: "sc" }, provisioner: c.plugin, ...c.sc, ...c.want };
    assert.deepEqual(clean(translateInTreeStorageClassToCSI(c.plugin, sc)), clean(want));
  });
}
