// The node's share of CSI migration: its CSINode announces the in-tree plugins it migrated in
// `storage.alpha.kubernetes.io/migrated-plugins` from the moment it exists (so controllers never
// see a CSINode without it), and a kubelet restarted with other gates rewrites it.

import assert from "node:assert/strict";
import { test } from "node:test";
import { GVR, type CSINode } from "../api/index.ts";
import { MIGRATED_PLUGINS_ANNOTATION, resolveFeatureGates } from "../migration/index.ts";
import { runNode, tempDir, testServer } from "./fixture.test.ts";

const ALL = [
  "kubernetes.io/aws-ebs",
  "kubernetes.io/azure-disk",
  "kubernetes.io/azure-file",
  "kubernetes.io/cinder",
  "kubernetes.io/gce-pd",
  "kubernetes.io/portworx-volume",
  "kubernetes.io/vsphere-volume",
];

test("CSINode carries migrated-plugins from its creation; a restart with Portworx migration off drops it", async (t) => {
  const api = await testServer(t);
  const client = api.client();
  const root = await tempDir(t);
  const first = await runNode(t, client, { nodeName: "node-m", rootDir: root });
  const created = await client.get<CSINode>(GVR.csiNodes, "node-m");
  assert.equal(created.metadata?.annotations?.[MIGRATED_PLUGINS_ANNOTATION], ALL.join(","));
  await first.stop();

  await runNode(t, client, {
    nodeName: "node-m",
    rootDir: root,
    featureGates: resolveFeatureGates({ CSIMigrationPortworx: false }),
  });
  const updated = await client.get<CSINode>(GVR.csiNodes, "node-m");
  assert.equal(
    updated.metadata?.annotations?.[MIGRATED_PLUGINS_ANNOTATION],
    ALL.filter((p) => p !== "kubernetes.io/portworx-volume").join(","),
  );
});
