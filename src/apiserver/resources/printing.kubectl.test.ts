// Server-side printing and validation of the built-in storage kinds as kubectl shows them: the
// column headers a real cluster prints for each kind, a row of each, and upstream's messages
// for immutable fields. Skipped when kubectl is not installed.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../../test/harness/apiserver.ts";
import { kubectl, kubectlMissing } from "../../../test/harness/kubectl.ts";

const skip = kubectlMissing();

const OBJECTS = `
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: hostpath.csi.k8s.io}
spec: {podInfoOnMount: true, volumeLifecycleModes: [Persistent, Ephemeral]}
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: node-1}
spec:
  drivers:
    - {name: hostpath.csi.k8s.io, nodeID: node-1, topologyKeys: [topology.hostpath.csi/node]}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-1}
spec:
  capacity: {storage: 1024Mi}
  accessModes: [ReadWriteOnce]
  storageClassName: fast
  csi: {driver: hostpath.csi.k8s.io, volumeHandle: vol-1}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {name: csi-0123}
spec:
  attacher: hostpath.csi.k8s.io
  nodeName: node-1
  source: {persistentVolumeName: pv-1}
---
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {name: csisc-1, namespace: default}
storageClassName: fast
capacity: 10Gi
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: external-attacher-leader-hostpath-csi-k8s-io, namespace: default}
spec: {holderIdentity: attacher-1, leaseDurationSeconds: 15}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: hostpath.csi.k8s.io
`;

function table(stdout: string): string[][] {
  return stdout
    .trim()
    .split("\n")
    .map((line) => line.trim().split(/\s{2,}/));
}

describe("storage kinds printed and validated through kubectl", { skip }, () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
    const applied = await kubectl(["apply", "-f", "-"], {
      kubeconfig: server.handle.kubeconfigPath,
      stdin: OBJECTS,
    });
    assert.equal(applied.code, 0, applied.stderr);
  });
  after(async () => {
    await server.dispose();
  });

  const cases: [string[], string[], RegExp][] = [
    [
      ["get", "pv", "-o", "wide"],
      [
        "NAME",
        "CAPACITY",
        "ACCESS MODES",
        "RECLAIM POLICY",
        "STATUS",
        "CLAIM",
        "STORAGECLASS",
        "VOLUMEATTRIBUTESCLASS",
        "REASON",
        "AGE",
        "VOLUMEMODE",
      ],
      /^pv-1\s+1Gi\s+RWO\s+Retain\s+Pending\s+fast\s+<unset>\s+\d+s\s+Filesystem$/,
    ],
    [
      ["get", "volumeattachments"],
      ["NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"],
      /^csi-0123\s+hostpath.csi.k8s.io\s+pv-1\s+node-1\s+false\s+\d+s$/,
    ],
    [["get", "csinodes"], ["NAME", "DRIVERS", "AGE"], /^node-1\s+1\s+\d+s$/],
    [
      ["get", "csidrivers"],
      [
        "NAME",
        "ATTACHREQUIRED",
        "PODINFOONMOUNT",
        "STORAGECAPACITY",
        "TOKENREQUESTS",
        "REQUIRESREPUBLISH",
        "MODES",
        "AGE",
      ],
      /^hostpath.csi.k8s.io\s+true\s+true\s+false\s+<unset>\s+false\s+Persistent,Ephemeral\s+\d+s$/,
    ],
    [
      ["get", "csistoragecapacities", "-n", "default"],
      ["NAME", "STORAGECLASSNAME", "CAPACITY"],
      /^csisc-1\s+fast\s+10Gi$/,
    ],
    [
      ["get", "leases", "-n", "default"],
      ["NAME", "HOLDER", "AGE"],
      /^external-attacher-leader-hostpath-csi-k8s-io\s+attacher-1\s+\d+s$/,
    ],
    [
      ["get", "sc"],
      ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION", "AGE"],
      /^fast\s+hostpath.csi.k8s.io\s+Delete\s+Immediate\s+false\s+\d+s$/,
    ],
  ];
  for (const [args, header, row] of cases) {
    test(`kubectl ${args.join(" ")}`, async () => {
      const result = await kubectl(args, { kubeconfig: server.handle.kubeconfigPath });
      assert.equal(result.code, 0, result.stderr);
      const [head, first] = table(result.stdout);
      assert.deepEqual(head, header);
      assert.match(first?.join("  ") ?? "", row);
    });
  }

  test("immutable fields answer upstream's messages", async () => {
    const sc = await kubectl(
      ["patch", "sc", "fast", "--type=merge", "-p", '{"provisioner":"other.csi.k8s.io"}'],
      { kubeconfig: server.handle.kubeconfigPath },
    );
    assert.notEqual(sc.code, 0);
    assert.match(
      sc.stderr,
      /The StorageClass "fast" is invalid: provisioner: Forbidden: updates to provisioner are forbidden\./,
    );
    const va = await kubectl(
      ["patch", "volumeattachment", "csi-0123", "--type=merge", "-p", '{"spec":{"nodeName":"node-2"}}'],
      { kubeconfig: server.handle.kubeconfigPath },
    );
    assert.notEqual(va.code, 0);
    assert.match(va.stderr, /spec: Invalid value: .*: field is immutable/);
    const pv = await kubectl(
      ["patch", "pv", "pv-1", "--type=merge", "-p", '{"spec":{"csi":{"volumeHandle":"vol-2"}}}'],
      { kubeconfig: server.handle.kubeconfigPath },
    );
    assert.notEqual(pv.code, 0);
    assert.match(
      pv.stderr,
      /spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation/,
    );
    const typo = await kubectl(["apply", "-f", "-"], {
      kubeconfig: server.handle.kubeconfigPath,
      stdin: `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: typo}
provisioner: hostpath.csi.k8s.io
reclaimPolicy: Recycle
`,
    });
    assert.notEqual(typo.code, 0);
    assert.match(
      typo.stderr,
      /reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"/,
    );
  });
});
