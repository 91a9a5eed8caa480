// Bodies whose values have the wrong type for a built-in kind's Go struct are refused with
// 400 BadRequest and upstream's decoding message, on create (POST), update (PUT) and as the
// result of a patch; well-typed manifests (examples/storage.yaml) still pass.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { raw, startTestServer, type TestServer } from "../../../test/harness/apiserver.ts";

const INT32 = "of type int32";

/** [collection path, body, expected message] */
const MISTYPED: [string, Record<string, unknown>, string][] = [
  [
    "/api/v1/namespaces/default/pods",
    {
      metadata: { name: "p" },
      spec: { containers: [{ name: "c", image: "busybox", ports: [{ containerPort: "80" }] }] },
    },
    `Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort ${INT32}`,
  ],
  [
    "/api/v1/namespaces/default/persistentvolumeclaims",
    {
      metadata: { name: "c" },
      spec: { accessModes: "ReadWriteOnce", resources: { requests: { storage: "1Gi" } } },
    },
    'PersistentVolumeClaim in version "v1" cannot be handled as a PersistentVolumeClaim: json: cannot unmarshal string into Go struct field PersistentVolumeClaimSpec.spec.accessModes of type []string',
  ],
  [
    "/api/v1/persistentvolumes",
    {
      metadata: { name: "pv" },
      spec: { capacity: { storage: "1Gi" }, csi: { driver: "d", volumeHandle: 5 } },
    },
    'PersistentVolume in version "v1" cannot be handled as a PersistentVolume: json: cannot unmarshal number into Go struct field CSIPersistentVolumeSource.spec.csi.volumeHandle of type string',
  ],
  [
    "/apis/storage.k8s.io/v1/storageclasses",
    { metadata: { name: "sc" }, provisioner: "d", allowVolumeExpansion: "true" },
    'StorageClass in version "v1" cannot be handled as a StorageClass: json: cannot unmarshal string into Go struct field StorageClass.allowVolumeExpansion of type bool',
  ],
  [
    "/apis/storage.k8s.io/v1/csidrivers",
    { metadata: { name: "d" }, spec: { attachRequired: "false" } },
    'CSIDriver in version "v1" cannot be handled as a CSIDriver: json: cannot unmarshal string into Go struct field CSIDriverSpec.spec.attachRequired of type bool',
  ],
  [
    "/apis/storage.k8s.io/v1/csinodes",
    { metadata: { name: "n" }, spec: { drivers: [{ name: "d", nodeID: "n", allocatable: { count: "3" } }] } },
    `CSINode in version "v1" cannot be handled as a CSINode: json: cannot unmarshal string into Go struct field VolumeNodeResources.spec.drivers.allocatable.count ${INT32}`,
  ],
  [
    "/apis/storage.k8s.io/v1/volumeattachments",
    {
      metadata: { name: "va" },
      spec: { attacher: "d", nodeName: "n", source: { persistentVolumeName: ["pv"] } },
    },
    'VolumeAttachment in version "v1" cannot be handled as a VolumeAttachment: json: cannot unmarshal array into Go struct field VolumeAttachmentSource.spec.source.persistentVolumeName of type string',
  ],
  [
    "/api/v1/nodes",
    { metadata: { name: "n" }, spec: { unschedulable: 1 } },
    'Node in version "v1" cannot be handled as a Node: json: cannot unmarshal number into Go struct field NodeSpec.spec.unschedulable of type bool',
  ],
  [
    "/api/v1/namespaces/default/configmaps",
    { metadata: { name: "cm" }, data: { a: 1 } },
    'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string',
  ],
  [
    "/api/v1/namespaces/default/secrets",
    { metadata: { name: "s" }, data: { a: "not base64!" } },
    'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3',
  ],
];

describe("type mismatches in built-in kinds", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server.dispose();
  });

  test("POST of a mistyped body is 400 BadRequest with upstream's decoding message, and nothing is stored", async () => {
    for (const [path, body, message] of MISTYPED) {
      const response = await raw(server.handle, { method: "POST", path, body: JSON.stringify(body) });
      assert.equal(response.status, 400, `${path}: ${response.text}`);
      const status = response.json();
      assert.equal(status.reason, "BadRequest", path);
      assert.equal(status.message, message, path);
      const name = (body.metadata as { name: string }).name;
      const read = await raw(server.handle, { path: `${path}/${name}` });
      assert.equal(read.status, 404, `${path}/${name} was stored`);
    }
  });

  test("PUT and the result of a merge or JSON patch are checked too", async () => {
    const path = "/api/v1/namespaces/default/configmaps";
    const created = await raw(server.handle, {
      method: "POST",
      path,
      body: JSON.stringify({ metadata: { name: "typed" }, data: { a: "1" } }),
    });
    assert.equal(created.status, 201, created.text);
    const message =
      'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal bool into Go struct field ConfigMap.data of type string';
    const put = await raw(server.handle, {
      method: "PUT",
      path: `${path}/typed`,
      body: JSON.stringify({ metadata: { name: "typed" }, data: { a: true } }),
    });
    assert.equal(put.status, 400, put.text);
    assert.equal(put.json().message, message);
    const merge = await raw(server.handle, {
      method: "PATCH",
      path: `${path}/typed`,
      headers: { "Content-Type": "application/merge-patch+json" },
      body: JSON.stringify({ data: { a: true } }),
    });
    assert.equal(merge.status, 400, merge.text);
    assert.equal(merge.json().message, message);
    const json = await raw(server.handle, {
      method: "PATCH",
      path: `${path}/typed`,
      headers: { "Content-Type": "application/json-patch+json" },
      body: JSON.stringify([{ op: "replace", path: "/data/a", value: true }]),
    });
    assert.equal(json.status, 400, json.text);
    assert.equal(json.json().message, message);
    const read = await raw(server.handle, { path: `${path}/typed` });
    assert.deepEqual((read.json() as { data?: unknown }).data, { a: "1" });
  });

  test("well-typed manifests pass: examples/storage.yaml, numeric quantities, IntOrString ports", async () => {
    const manifest = readFileSync(
      join(import.meta.dirname, "..", "..", "..", "examples", "storage.yaml"),
      "utf8",
    );
    const paths: Record<string, string> = {
      StorageClass: "/apis/storage.k8s.io/v1/storageclasses",
      PersistentVolumeClaim: "/api/v1/namespaces/default/persistentvolumeclaims",
      Pod: "/api/v1/namespaces/default/pods",
    };
    const docs = parseAllDocuments(manifest).map((doc) => doc.toJS() as { kind: string });
    assert.ok(docs.length >= 3);
    for (const doc of docs) {
      const path = paths[doc.kind];
      assert.ok(path !== undefined, `no path for ${doc.kind}`);
      const response = await raw(server.handle, { method: "POST", path, body: JSON.stringify(doc) });
      assert.equal(response.status, 201, `${doc.kind}: ${response.text}`);
    }
    const pod = await raw(server.handle, {
      method: "POST",
      path: "/api/v1/namespaces/default/pods",
      body: JSON.stringify({
        metadata: { name: "typed", labels: { a: "b" } },
        spec: {
          containers: [
            {
              name: "c",
              image: "busybox",
              ports: [{ containerPort: 80, name: "http" }],
              resources: { limits: { cpu: 1, memory: "64Mi" } },
              livenessProbe: { httpGet: { port: "http" } },
            },
          ],
        },
      }),
    });
    assert.equal(pod.status, 201, pod.text);
  });
});
