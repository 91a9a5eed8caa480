// runE2e on an existing cluster (--kubeconfig) — the embedded API server — with bodies of its
// own for two of upstream's tests: each test gets a fresh namespace and a class from the driver's
// class source and the pattern, both gone afterwards; a failed check makes the exit code 1; a line
// per test, the matrix and the JUnit report are written.

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { GVR, type Namespace, type StorageClass } from "../api/index.ts";
import { KubeClient, loadKubeConfig } from "../kube/index.ts";
import { startTestServer } from "../../test/harness/apiserver.ts";
import { defer, tempDir } from "../../test/harness/cleanup.ts";
import { E2eCheckError, parseTestDriver, runE2e, type TestBody } from "./index.ts";

const DRIVER = parseTestDriver(
  [
    "StorageClass: {FromName: true}",
    "DriverInfo:",
    "  Name: x.csi.example.com",
    "  SupportedFsType: ['', ext4]",
    "  Capabilities: {persistence: true, exec: true}",
  ].join("\n"),
).definition;

test("runE2e --kubeconfig: namespaces and classes per test, cleaned up; a failure exits 1", async (t) => {
  const server = await startTestServer();
  defer(t, () => server.dispose());
  const dir = await tempDir(t);
  const kubeconfig = server.handle.kubeconfigPath;
  const client = new KubeClient({ kubeConfig: loadKubeConfig({ kubeconfig }) });
  defer(t, () => client.close());
  const seen: string[] = [];
  const bodies: Record<string, TestBody> = {
    "should store data": async ({ namespace, driver, pattern }) => {
      const made = await namespace.createClass({ mountOptions: ["noatime"] });
      assert.equal(made.provisioner, driver.DriverInfo.Name);
      assert.deepEqual(made.mountOptions, ["noatime"]);
      assert.equal(made.allowVolumeExpansion, false);
      if (pattern.fsType === "ext4") assert.equal(made.parameters?.["csi.storage.k8s.io/fstype"], "ext4");
      seen.push(namespace.name, made.metadata?.name ?? "");
    },
    "should allow exec of files on the volume": async ({ namespace }) => {
      seen.push(namespace.name);
      throw new E2eCheckError("the data read back differs");
    },
  };
  const lines: string[] = [];
  const junit = join(dir, "junit.xml");
  const code = await runE2e(
    {
      driver: DRIVER,
      kubeconfig,
      cliMain: "unused: no csikit up with --kubeconfig",
      focus: /\[Testpattern: Dynamic PV \((default fs|ext4)\)\] volumes /,
      junit,
      parallel: 2,
      timeoutScale: 0.1,
      clusterNodes: 1,
      image: "busybox",
      print: (line) => lines.push(line),
      body: (planned) => bodies[planned.test.title],
    },
    AbortSignal.timeout(60_000),
  );
  const output = lines.join("\n");
  assert.equal(code, 1, output);
  assert.match(output, /^4 tests selected for driver x\.csi\.example\.com: 4 to run, 0 skipped$/m);
  assert.match(output, /^✓ .*\[Testpattern: Dynamic PV \(ext4\)\] volumes should store data$/m);
  assert.match(
    output,
    /^✗ .* volumes should allow exec of files on the volume — the data read back differs$/m,
  );
  assert.match(output, /^volumes +Dynamic PV \(default fs\) +1 +1 +0$/m);
  assert.match(output, /^volumes +Dynamic PV \(ext4\) +1 +1 +0$/m);
  assert.equal(seen.length, 6);
  const namespaces = new Set(seen.filter((name) => /^e2e-volumes-[0-9a-f]{5}$/.test(name)));
  assert.equal(namespaces.size, 4, "a namespace per test");
  const listed = await client.list<Namespace>(GVR.namespaces);
  assert.deepEqual(
    listed.items.map((n) => n.metadata?.name).filter((n) => n?.startsWith("e2e-")),
    [],
    "the test namespaces are deleted",
  );
  const classes = await client.list<StorageClass>(GVR.storageClasses);
  assert.ok(
    !classes.items.some((c) => c.metadata?.name?.startsWith("e2e-")),
    "the tests' classes are deleted",
  );
  assert.match(await readFile(junit, "utf8"), /failures="2" skipped="0"/);
});
