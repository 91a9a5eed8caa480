// firstServedVersion against the real embedded API server: the preferred version when it is
// served, the next one when the preferred group version is unknown (404), none when the
// resource is missing from every candidate — how the provisioner picks the
// VolumeAttributesClass API (v1, else v1beta1, else the feature off).

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { GVR } from "../api/index.ts";
import { startTestServer, type TestServer } from "../../test/harness/kube-server.ts";
import { firstServedVersion } from "./served-version.ts";

let env: TestServer;
before(async () => {
  env = await startTestServer();
});
after(async () => {
  await env.stop();
});

const at = (version: string, resource = GVR.volumeAttributesClasses.resource) => ({
  ...GVR.volumeAttributesClasses,
  version,
  resource,
});

test("the first served candidate wins; an unknown group version falls through; nothing served is undefined", async () => {
  const client = env.client();
  assert.equal((await firstServedVersion(client, [at("v1"), at("v1beta1")]))?.version, "v1");
  // A server without storage.k8s.io/v9 (as a 1.33 server lacks v1 VolumeAttributesClass).
  assert.equal((await firstServedVersion(client, [at("v9"), at("v1beta1")]))?.version, "v1beta1");
  assert.equal(await firstServedVersion(client, [at("v9"), at("v1", "nosuchresources")]), undefined);
});
