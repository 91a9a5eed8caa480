// `csikit migrate` in a real child process: multi-document YAML through stdin and -f, both
// directions (the CSI output fed back gives the in-tree PV again), notes on stderr, and clear
// errors with exit code 1 (bad object) or 2 (bad flag).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { parseAllDocuments } from "yaml";

const MAIN = join(import.meta.dirname, "main.ts");

function migrate(args: string[], input = "") {
  return spawnSync(process.execPath, [MAIN, "migrate", ...args], {
    input,
    encoding: "utf8",
    timeout: 60_000,
  });
}

function docs(text: string): Record<string, unknown>[] {
  return parseAllDocuments(text).map((d) => d.toJS() as Record<string, unknown>);
}

const MANIFEST = `apiVersion: v1
kind: PersistentVolume
metadata:
  name: pd
  labels: {topology.kubernetes.io/zone: us-central1-a, topology.kubernetes.io/region: us-central1}
spec:
  accessModes: [ReadWriteOnce]
  gcePersistentDisk: {pdName: data, fsType: ext4}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: topology.kubernetes.io/zone, operator: In, values: [us-central1-a]}
        - {key: topology.kubernetes.io/region, operator: In, values: [us-central1]}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: standard}
provisioner: kubernetes.io/gce-pd
parameters: {type: pd-ssd, zone: us-central1-a}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  template:
    spec:
      containers: [{name: c, image: x}]
      volumes: [{name: files, azureFile: {secretName: azure-storage-account-acct-secret, shareName: share}}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: untouched}
data: {a: b}
`;

test("--to csi translates PVs, classes and inline volumes; --to in-tree brings the PV back", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "csikit-migrate-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, "in.yaml");
  await writeFile(file, MANIFEST);

  const toCSI = migrate(["--to", "csi", "-f", file]);
  assert.equal(toCSI.status, 0, toCSI.stderr);
  const out = docs(toCSI.stdout);
  assert.deepEqual(
    out.map((d) => d.kind),
    ["PersistentVolume", "StorageClass", "Deployment", "PersistentVolume", "ConfigMap"],
  );
  const pv = out[0] as {
    spec: { csi: { driver: string; volumeHandle: string }; gcePersistentDisk?: unknown };
  };
  assert.equal(pv.spec.csi.driver, "pd.csi.storage.gke.io");
  assert.equal(pv.spec.csi.volumeHandle, "projects/UNSPECIFIED/zones/us-central1-a/disks/data");
  assert.equal(pv.spec.gcePersistentDisk, undefined);
  assert.deepEqual(out[1], {
    apiVersion: "storage.k8s.io/v1",
    kind: "StorageClass",
    metadata: { name: "standard" },
    provisioner: "pd.csi.storage.gke.io",
    parameters: { type: "pd-ssd" },
    allowedTopologies: [
      { matchLabelExpressions: [{ key: "topology.gke.io/zone", values: ["us-central1-a"] }] },
    ],
  });
  const inline = out[3] as {
    metadata: { name: string };
    spec: { csi: { volumeHandle: string; nodeStageSecretRef: unknown } };
  };
  assert.equal(inline.metadata.name, "file.csi.azure.com-share");
  assert.equal(inline.spec.csi.volumeHandle, "#acct#share##shop");
  assert.deepEqual(inline.spec.csi.nodeStageSecretRef, {
    name: "azure-storage-account-acct-secret",
    namespace: "shop",
  });
  assert.match(toCSI.stdout, /# inline volume "files" of Deployment "shop\/web"/);
  assert.deepEqual(out[4], docs(MANIFEST)[3]);

  // Back through stdin: the PV is the original again; the class has no reverse (a note says so).
  const back = migrate(["--to", "in-tree"], toCSI.stdout);
  assert.equal(back.status, 0, back.stderr);
  assert.deepEqual(docs(back.stdout)[0], docs(MANIFEST)[0]);
  assert.match(
    back.stderr,
    /StorageClass "standard": left unchanged: upstream has no CSI → in-tree StorageClass translation/,
  );
});

test("bad input is a clear error", () => {
  const noTo = migrate(["-f", "-"], "");
  assert.equal(noTo.status, 2);
  assert.match(noTo.stderr, /flag -to is required and must be csi or in-tree/);
  const bad = migrate(
    ["--to", "csi"],
    "kind: PersistentVolume\nmetadata: {name: broken}\nspec: {gcePersistentDisk: {fsType: ext4}}\n",
  );
  assert.equal(bad.status, 1);
  assert.match(
    bad.stderr,
    /stdin: document 1 \(PersistentVolume "broken"\): PersistentVolume "broken" \(gcePersistentDisk\): pdName is required/,
  );
  const syntax = migrate(["--to", "csi"], "kind: [unclosed\n");
  assert.equal(syntax.status, 1);
  assert.match(syntax.stderr, /stdin: document 1:/);
  const missing = migrate(["--to", "csi", "-f", "/nonexistent/x.yaml"]);
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /\/nonexistent\/x.yaml: ENOENT/);
});
