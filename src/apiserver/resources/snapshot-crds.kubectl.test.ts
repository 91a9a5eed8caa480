// The upstream snapshot CRDs (deploy/crds) applied with the machine's kubectl against the
// embedded server, then used: established, served with their printer columns and short
// names, validated by their schemas and CEL rules. Skipped when kubectl is not installed.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../../test/harness/apiserver.ts";
import { kubectl, kubectlMissing } from "../../../test/harness/kubectl.ts";
import { CRDS_DIR } from "../../../test/harness/snapshots.ts";

const skip = kubectlMissing();

const OBJECTS = `
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata:
  name: csi-hostpath-snapclass
driver: hostpath.csi.k8s.io
deletionPolicy: Delete
---
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshot
metadata:
  name: snap-1
  namespace: default
spec:
  volumeSnapshotClassName: csi-hostpath-snapclass
  source:
    persistentVolumeClaimName: data
`;

describe("VolumeSnapshot CRDs through kubectl", { skip }, () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server.dispose();
  });

  test("apply the CRDs, wait until established, then use the kinds", async () => {
    const applied = await kubectl(["apply", "-f", CRDS_DIR], { kubeconfig: server.handle.kubeconfigPath });
    assert.equal(applied.code, 0, applied.stderr);
    assert.match(
      applied.stdout,
      /customresourcedefinition.apiextensions.k8s.io\/volumesnapshots.snapshot.storage.k8s.io created/,
    );
    const waited = await kubectl(
      [
        "wait",
        "--for=condition=Established",
        "--timeout=30s",
        "crd/volumesnapshots.snapshot.storage.k8s.io",
        "crd/volumesnapshotcontents.snapshot.storage.k8s.io",
        "crd/volumesnapshotclasses.snapshot.storage.k8s.io",
      ],
      { kubeconfig: server.handle.kubeconfigPath },
    );
    assert.equal(waited.code, 0, waited.stderr);

    const created = await kubectl(["apply", "-f", "-"], {
      kubeconfig: server.handle.kubeconfigPath,
      stdin: OBJECTS,
    });
    assert.equal(created.code, 0, created.stderr);
    assert.deepEqual(created.stdout.trim().split("\n"), [
      "volumesnapshotclass.snapshot.storage.k8s.io/csi-hostpath-snapclass created",
      "volumesnapshot.snapshot.storage.k8s.io/snap-1 created",
    ]);

    const listed = await kubectl(["get", "vs", "-n", "default"], {
      kubeconfig: server.handle.kubeconfigPath,
    });
    assert.equal(listed.code, 0, listed.stderr);
    const [header, row] = listed.stdout.trim().split("\n");
    assert.deepEqual(header?.split(/\s+/), [
      "NAME",
      "READYTOUSE",
      "SOURCEPVC",
      "SOURCESNAPSHOTCONTENT",
      "RESTORESIZE",
      "SNAPSHOTCLASS",
      "SNAPSHOTCONTENT",
      "CREATIONTIME",
      "AGE",
    ]);
    assert.match(row ?? "", /^snap-1\s+data\s+csi-hostpath-snapclass\s+\d+s$/);
    const classes = await kubectl(["get", "vsclass"], { kubeconfig: server.handle.kubeconfigPath });
    assert.match(
      classes.stdout,
      /^NAME\s+DRIVER\s+DELETIONPOLICY\s+AGE\ncsi-hostpath-snapclass\s+hostpath.csi.k8s.io\s+Delete\s+/,
    );
  });

  test("schema and CEL rules reject bad objects as upstream does", async () => {
    const both = await kubectl(["apply", "-f", "-"], {
      kubeconfig: server.handle.kubeconfigPath,
      stdin: `apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshot
metadata: {name: snap-both, namespace: default}
spec:
  source: {persistentVolumeClaimName: a, volumeSnapshotContentName: b}
`,
    });
    assert.notEqual(both.code, 0);
    assert.match(
      both.stderr,
      /exactly one of volumeSnapshotContentName and persistentVolumeClaimName must be set/,
    );
    const immutable = await kubectl(
      [
        "patch",
        "vs",
        "snap-1",
        "-n",
        "default",
        "--type=merge",
        "-p",
        '{"spec":{"source":{"persistentVolumeClaimName":"other"}}}',
      ],
      { kubeconfig: server.handle.kubeconfigPath },
    );
    assert.notEqual(immutable.code, 0);
    assert.match(immutable.stderr, /persistentVolumeClaimName is immutable/);
    const policy = await kubectl(["apply", "-f", "-"], {
      kubeconfig: server.handle.kubeconfigPath,
      stdin: `apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata: {name: bad}
driver: d
deletionPolicy: Keep
`,
    });
    assert.notEqual(policy.code, 0);
    assert.match(
      policy.stderr,
      /deletionPolicy: Unsupported value: "Keep": supported values: "Delete", "Retain"/,
    );
  });
});
