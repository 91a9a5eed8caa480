// groupsnapshot.storage.k8s.io served in v1, v1beta2 (storage) and v1beta1 from one store, as
// kube-apiserver with upstream's snapshot-conversion-webhook serves them, through the machine's
// kubectl: a VolumeGroupSnapshotContent written in one version reads back in each (the member
// list renamed, v1beta1's annotation round trip, creationTime's two shapes), writes through
// v1beta1 land in the storage version, and every snapshot kind prints upstream's columns.
// Skipped when kubectl is not installed.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../../../test/harness/apiserver.ts";
import { kubectl, kubectlMissing } from "../../../test/harness/kubectl.ts";
import { CRDS_DIR } from "../../../test/harness/snapshots.ts";
import { VOLUME_SNAPSHOT_INFO_ANNOTATION } from "./group-snapshot-conversion.ts";

const skip = kubectlMissing();
const VGSC = "volumegroupsnapshotcontents";
const at = (version: string) => `${VGSC}.${version}.groupsnapshot.storage.k8s.io`;

interface Content {
  apiVersion: string;
  metadata: { annotations?: Record<string, string>; resourceVersion: string };
  spec: { driver: string };
  status?: Record<string, unknown>;
}

describe("group snapshot versions and printer columns through kubectl", { skip }, () => {
  let server: TestServer;
  const run = (args: string[], stdin?: string) =>
    kubectl(args, { kubeconfig: server.handle.kubeconfigPath, stdin });
  const get = async (version: string, name: string): Promise<Content> => {
    const result = await run(["get", at(version), name, "-o", "json"]);
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as Content;
  };

  before(async () => {
    server = await startTestServer();
    const applied = await run(["apply", "-f", CRDS_DIR]);
    assert.equal(applied.code, 0, applied.stderr);
    const waited = await run(["wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"]);
    assert.equal(waited.code, 0, waited.stderr);
  });
  after(async () => {
    await server.dispose();
  });

  test("a content written in v1 reads in v1beta2 unchanged and in v1beta1 with the pair list", async () => {
    const created = await run(
      ["apply", "-f", "-"],
      `apiVersion: groupsnapshot.storage.k8s.io/v1
kind: VolumeGroupSnapshotContent
metadata: {name: from-v1}
spec:
  volumeGroupSnapshotRef: {name: group, namespace: default}
  driver: hostpath.csi.k8s.io
  deletionPolicy: Delete
  source: {volumeHandles: [vol-a, vol-b]}
`,
    );
    assert.equal(created.code, 0, created.stderr);
    const infos = [
      {
        volumeHandle: "vol-a",
        snapshotHandle: "snap-a",
        creationTime: 1767225600000000000,
        readyToUse: true,
        restoreSize: 1048576,
      },
      { volumeHandle: "vol-b", snapshotHandle: "snap-b", readyToUse: false },
    ];
    const status = {
      volumeGroupSnapshotHandle: "group-1",
      creationTime: "2026-01-01T00:00:00Z",
      readyToUse: true,
      volumeSnapshotInfoList: infos,
    };
    const patched = await run([
      "patch",
      at("v1"),
      "from-v1",
      "--subresource=status",
      "--type=merge",
      "-p",
      JSON.stringify({ status }),
    ]);
    assert.equal(patched.code, 0, patched.stderr);

    const v1 = await get("v1", "from-v1");
    assert.equal(v1.apiVersion, "groupsnapshot.storage.k8s.io/v1");
    assert.deepEqual(v1.status, status);
    const beta2 = await get("v1beta2", "from-v1");
    assert.equal(beta2.apiVersion, "groupsnapshot.storage.k8s.io/v1beta2");
    assert.deepEqual(beta2.status, status);
    assert.equal(beta2.metadata.resourceVersion, v1.metadata.resourceVersion);

    const beta1 = await get("v1beta1", "from-v1");
    assert.equal(beta1.apiVersion, "groupsnapshot.storage.k8s.io/v1beta1");
    assert.deepEqual(beta1.status, {
      volumeGroupSnapshotHandle: "group-1",
      creationTime: 1767225600000000000,
      readyToUse: true,
      volumeSnapshotHandlePairList: [
        { volumeHandle: "vol-a", snapshotHandle: "snap-a" },
        { volumeHandle: "vol-b", snapshotHandle: "snap-b" },
      ],
    });
    // Go's JSON of the list (keys sorted), so the way back restores every field.
    assert.equal(
      beta1.metadata.annotations?.[VOLUME_SNAPSHOT_INFO_ANNOTATION],
      '[{"creationTime":1767225600000000000,"readyToUse":true,"restoreSize":1048576,"snapshotHandle":"snap-a","volumeHandle":"vol-a"},{"readyToUse":false,"snapshotHandle":"snap-b","volumeHandle":"vol-b"}]',
    );
    // The annotation lives only in v1beta1's view: v1 has none.
    assert.equal(v1.metadata.annotations?.[VOLUME_SNAPSHOT_INFO_ANNOTATION], undefined);
  });

  test("a v1beta1 client's update round-trips: the member details survive, its change lands", async () => {
    const beta1 = await get("v1beta1", "from-v1");
    beta1.spec.driver = "hostpath.csi.k8s.io";
    const labelled = await run(["label", at("v1beta1"), "from-v1", "written-by=v1beta1"]);
    assert.equal(labelled.code, 0, labelled.stderr);
    const v1 = await get("v1", "from-v1");
    assert.equal((v1.status?.volumeSnapshotInfoList as unknown[]).length, 2);
    assert.deepEqual((v1.status?.volumeSnapshotInfoList as Record<string, unknown>[])[0], {
      volumeHandle: "vol-a",
      snapshotHandle: "snap-a",
      creationTime: 1767225600000000000,
      readyToUse: true,
      restoreSize: 1048576,
    });
    assert.equal(v1.status?.creationTime, "2026-01-01T00:00:00Z");
    assert.equal(v1.metadata.annotations?.[VOLUME_SNAPSHOT_INFO_ANNOTATION], undefined);
  });

  test("a content written in v1beta1 with a pair list reads in v1 with the info list", async () => {
    const created = await run(
      ["apply", "-f", "-"],
      `apiVersion: groupsnapshot.storage.k8s.io/v1beta1
kind: VolumeGroupSnapshotContent
metadata: {name: from-beta1}
spec:
  volumeGroupSnapshotRef: {name: group, namespace: default}
  driver: hostpath.csi.k8s.io
  deletionPolicy: Retain
  source:
    groupSnapshotHandles: {volumeGroupSnapshotHandle: g, volumeSnapshotHandles: [s1]}
`,
    );
    assert.equal(created.code, 0, created.stderr);
    const patched = await run([
      "patch",
      at("v1beta1"),
      "from-beta1",
      "--subresource=status",
      "--type=merge",
      "-p",
      JSON.stringify({
        status: {
          creationTime: 1767225601000000000,
          volumeSnapshotHandlePairList: [{ volumeHandle: "v1", snapshotHandle: "s1" }],
        },
      }),
    ]);
    assert.equal(patched.code, 0, patched.stderr);
    const v1 = await get("v1", "from-beta1");
    assert.deepEqual(v1.status, {
      creationTime: "2026-01-01T00:00:01Z",
      volumeSnapshotInfoList: [{ volumeHandle: "v1", snapshotHandle: "s1" }],
    });
    // The v1 schema rejects v1beta1's field name: the conversion, not the client, renames it.
    const wrong = await run([
      "patch",
      at("v1"),
      "from-beta1",
      "--subresource=status",
      "--type=merge",
      "-p",
      '{"status":{"creationTime":5}}',
    ]);
    assert.notEqual(wrong.code, 0);
    assert.match(
      wrong.stderr,
      /status.creationTime: Invalid value: "integer": status.creationTime in body must be of type string: "integer"/,
    );
  });

  test("VolumeGroupSnapshot and its class read in every version; v1beta1 warns it is deprecated", async () => {
    const created = await run(
      ["apply", "-f", "-"],
      `apiVersion: groupsnapshot.storage.k8s.io/v1beta1
kind: VolumeGroupSnapshotClass
metadata: {name: csi-hostpath-groupsnapclass}
driver: hostpath.csi.k8s.io
deletionPolicy: Delete
---
apiVersion: groupsnapshot.storage.k8s.io/v1beta2
kind: VolumeGroupSnapshot
metadata: {name: group, namespace: default}
spec:
  volumeGroupSnapshotClassName: csi-hostpath-groupsnapclass
  source: {selector: {matchLabels: {app: db}}}
`,
    );
    assert.equal(created.code, 0, created.stderr);
    assert.match(
      created.stderr,
      /Warning: groupsnapshot.storage.k8s.io\/v1beta1 VolumeGroupSnapshotClass is deprecated/,
    );
    for (const version of ["v1", "v1beta2", "v1beta1"]) {
      const got = await run([
        "get",
        `volumegroupsnapshots.${version}.groupsnapshot.storage.k8s.io`,
        "group",
        "-n",
        "default",
        "-o",
        "jsonpath={.apiVersion} {.spec.source.selector.matchLabels.app}",
      ]);
      assert.equal(got.code, 0, got.stderr);
      assert.equal(got.stdout, `groupsnapshot.storage.k8s.io/${version} db`);
    }
  });

  test("printer columns of every kind, as upstream prints them", async () => {
    const objects = await run(
      ["apply", "-f", "-"],
      `apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotContent
metadata: {name: content-1}
spec:
  driver: hostpath.csi.k8s.io
  deletionPolicy: Retain
  volumeSnapshotClassName: csi-hostpath-snapclass
  source: {snapshotHandle: snap-1}
  volumeSnapshotRef: {name: snap-1, namespace: default}
---
apiVersion: cbt.storage.k8s.io/v1beta1
kind: SnapshotMetadataService
metadata: {name: hostpath.csi.k8s.io}
spec: {address: "csi-snapshot-metadata.default:6443", audience: "005e2583-91a3-4850-bd47-4bf32990fd00", caCert: Y2E=}
`,
    );
    assert.equal(objects.code, 0, objects.stderr);
    const header = async (args: string[]) => {
      const result = await run(["get", ...args]);
      assert.equal(result.code, 0, result.stderr);
      // The preferred version (v1), not the deprecated v1beta1: no Warning.
      assert.equal(result.stderr, "");
      return result.stdout.split("\n")[0]?.split(/\s+/);
    };
    assert.deepEqual(await header(["vsc"]), [
      "NAME",
      "READYTOUSE",
      "RESTORESIZE",
      "DELETIONPOLICY",
      "DRIVER",
      "VOLUMESNAPSHOTCLASS",
      "VOLUMESNAPSHOT",
      "VOLUMESNAPSHOTNAMESPACE",
      "AGE",
    ]);
    assert.deepEqual(await header(["vgs", "-n", "default"]), [
      "NAME",
      "READYTOUSE",
      "VOLUMEGROUPSNAPSHOTCLASS",
      "VOLUMEGROUPSNAPSHOTCONTENT",
      "CREATIONTIME",
      "AGE",
    ]);
    assert.deepEqual(await header(["vgsc"]), [
      "NAME",
      "READYTOUSE",
      "DELETIONPOLICY",
      "DRIVER",
      "VOLUMEGROUPSNAPSHOTCLASS",
      "VOLUMEGROUPSNAPSHOTNAMESPACE",
      "VOLUMEGROUPSNAPSHOT",
      "AGE",
    ]);
    assert.deepEqual(await header(["vgsclass"]), ["NAME", "DRIVER", "DELETIONPOLICY", "AGE"]);
    assert.deepEqual(await header(["sms"]), ["NAME", "AGE"]);
    const row = await run(["get", "vsc", "content-1", "--no-headers"]);
    assert.match(
      row.stdout,
      /^content-1\s+Retain\s+hostpath.csi.k8s.io\s+csi-hostpath-snapclass\s+snap-1\s+default\s+\d+s\n$/,
    );
  });
});
