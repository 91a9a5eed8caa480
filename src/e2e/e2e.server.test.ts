// runE2e on an existing cluster (--kubeconfig) — the embedded API server — with suites of its
// own: each test gets a fresh namespace and class that are gone afterwards, a failed check makes
// the exit code 1, a line per test, the matrix and the JUnit report are written.

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { GVR, type Namespace, type StorageClass } from "../api/index.ts";
import { KubeClient, loadKubeConfig } from "../kube/index.ts";
import { startTestServer } from "../../test/harness/apiserver.ts";
import { defer, tempDir } from "../../test/harness/cleanup.ts";
import { DYNAMIC_PV_DEFAULT_FS, E2eCheckError, hostpathDriver, runE2e, type Suite } from "./index.ts";

test("runE2e --kubeconfig: namespaces and classes per test, cleaned up; a failure exits 1", async (t) => {
  const server = await startTestServer();
  defer(t, () => server.dispose());
  const dir = await tempDir(t);
  const kubeconfig = server.handle.kubeconfigPath;
  const client = new KubeClient({ kubeConfig: loadKubeConfig({ kubeconfig }) });
  defer(t, () => client.close());
  const seen: string[] = [];
  const suite: Suite = {
    name: "demo",
    patterns: [DYNAMIC_PV_DEFAULT_FS],
    tests: [
      {
        name: "makes a class",
        async run({ namespace, driver }) {
          const made = await namespace.createClass({ mountOptions: ["noatime"] });
          assert.equal(made.provisioner, driver.name);
          assert.deepEqual(made.mountOptions, ["noatime"]);
          seen.push(namespace.name, made.metadata?.name ?? "");
        },
      },
      {
        name: "fails a check",
        async run({ namespace }) {
          seen.push(namespace.name);
          throw new E2eCheckError("the data read back differs");
        },
      },
    ],
  };
  const lines: string[] = [];
  const junit = join(dir, "junit.xml");
  const code = await runE2e(
    {
      driver: hostpathDriver("x.csi.example.com"),
      kubeconfig,
      cliMain: "unused: no csikit up with --kubeconfig",
      junit,
      parallel: 2,
      timeoutScale: 0.1,
      clusterNodes: 1,
      image: "busybox",
      print: (line) => lines.push(line),
      suites: [suite],
    },
    AbortSignal.timeout(60_000),
  );
  const output = lines.join("\n");
  assert.equal(code, 1, output);
  assert.match(output, /^✓ .* demo makes a class$/m);
  assert.match(output, /^✗ .* demo fails a check — the data read back differs$/m);
  assert.match(output, /^demo +Dynamic PV \(default fs\) +1 +1 +0$/m);
  const [firstNamespace, className, secondNamespace] = seen;
  assert.match(firstNamespace!, /^e2e-demo-[0-9a-f]{5}$/);
  assert.notEqual(firstNamespace, secondNamespace);
  const namespaces = await client.list<Namespace>(GVR.namespaces);
  assert.deepEqual(
    namespaces.items.map((n) => n.metadata?.name).filter((n) => n?.startsWith("e2e-")),
    [],
    "the test namespaces are deleted",
  );
  const classes = await client.list<StorageClass>(GVR.storageClasses);
  assert.ok(!classes.items.some((c) => c.metadata?.name === className), "the test's class is deleted");
  assert.match(await readFile(junit, "utf8"), /failures="1" skipped="0"/);
});
