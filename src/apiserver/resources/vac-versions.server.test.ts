// VolumeAttributesClass is served at storage.k8s.io/v1 and v1beta1 (what external-resizer v1.13
// and external-provisioner v5.2 read): one set of objects, each version's apiVersion on the way
// out, both in discovery with v1 preferred, and a watch at v1beta1 sees writes made at v1.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { raw, startTestServer, type TestServer } from "../../../test/harness/apiserver.ts";

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.dispose());

const V1 = "/apis/storage.k8s.io/v1/volumeattributesclasses";
const V1BETA1 = "/apis/storage.k8s.io/v1beta1/volumeattributesclasses";

test("one VolumeAttributesClass, read and written at v1 and v1beta1", async () => {
  const created = await raw(server.handle, {
    method: "POST",
    path: V1BETA1,
    body: JSON.stringify({
      apiVersion: "storage.k8s.io/v1beta1",
      kind: "VolumeAttributesClass",
      metadata: { name: "gold" },
      driverName: "hostpath.csi.k8s.io",
      parameters: { iops: "3000" },
    }),
  });
  assert.equal(created.status, 201, created.text);
  assert.equal(created.json().apiVersion, "storage.k8s.io/v1beta1");
  const atV1 = await raw(server.handle, { path: `${V1}/gold` });
  assert.equal(atV1.status, 200, atV1.text);
  assert.equal(atV1.json().apiVersion, "storage.k8s.io/v1");
  assert.deepEqual(atV1.json().parameters, { iops: "3000" });
  // Immutable parameters hold whichever version the update comes in.
  const changed = await raw(server.handle, {
    method: "PUT",
    path: `${V1}/gold`,
    body: JSON.stringify({ ...atV1.json(), parameters: { iops: "9000" } }),
  });
  assert.equal(changed.status, 422, changed.text);
  assert.match(changed.text, /updates to parameters are forbidden/);

  const list = await raw(server.handle, { path: V1BETA1 });
  assert.equal(list.status, 200, list.text);
  const items = list.json().items as { metadata: { name: string } }[];
  assert.deepEqual(
    items.map((item) => item.metadata.name),
    ["gold"],
  );
  assert.equal(list.json().apiVersion, "storage.k8s.io/v1beta1");
});

test("discovery lists both versions with v1 preferred", async () => {
  const group = await raw(server.handle, { path: "/apis/storage.k8s.io" });
  const body = group.json() as { versions: { version: string }[]; preferredVersion: { version: string } };
  assert.ok(body.versions.some((v) => v.version === "v1beta1"));
  assert.equal(body.preferredVersion.version, "v1");
  const resources = await raw(server.handle, { path: "/apis/storage.k8s.io/v1beta1" });
  assert.equal(resources.status, 200, resources.text);
  const names = (resources.json().resources as { name: string }[]).map((r) => r.name);
  assert.deepEqual(names, ["volumeattributesclasses"], "v1beta1 serves only VolumeAttributesClass");
});

test("a watch at v1beta1 sees a class created at v1", async () => {
  const listed = await raw(server.handle, { path: V1BETA1 });
  const resourceVersion = (listed.json().metadata as { resourceVersion: string }).resourceVersion;
  const created = await raw(server.handle, {
    method: "POST",
    path: V1,
    body: JSON.stringify({
      apiVersion: "storage.k8s.io/v1",
      kind: "VolumeAttributesClass",
      metadata: { name: "silver" },
      driverName: "hostpath.csi.k8s.io",
      parameters: { iops: "1000" },
    }),
  });
  assert.equal(created.status, 201, created.text);
  // timeoutSeconds bounds the watch: the answer ends by itself, holding the ADDED event.
  const watched = await raw(server.handle, {
    path: `${V1BETA1}?watch=true&resourceVersion=${resourceVersion}&timeoutSeconds=1`,
  });
  const events = watched.text
    .split("\n")
    .filter((line) => line !== "")
    .map(
      (line) =>
        JSON.parse(line) as { type: string; object: { apiVersion: string; metadata: { name: string } } },
    );
  const added = events.find((event) => event.type === "ADDED" && event.object.metadata.name === "silver");
  assert.ok(added, watched.text);
  assert.equal(added.object.apiVersion, "storage.k8s.io/v1beta1");
});
