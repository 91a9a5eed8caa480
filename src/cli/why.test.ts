// `csikit why` as a user runs it: a real child process with a kubeconfig against the embedded API
// server. Text and `-o json` for a claim stuck on a missing StorageClass (exit code 1), a volume
// that is done (exit code 0), flags after the name, and clear errors: a bad kind or output format
// (exit code 2), a kubeconfig that does not exist (exit code 3).

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { GVR, type PersistentVolume } from "../api/index.ts";
import { startCluster } from "../../test/harness/provisioner.ts";

const MAIN = join(import.meta.dirname, "main.ts");

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `csikit why ...args` without blocking this process (its API server must keep answering). */
function why(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MAIN, "why", ...args],
      { timeout: 60_000, encoding: "utf8" },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

test("csikit why: text and json for a stuck claim and a done volume, exit codes, flags after the name", async (t) => {
  const cluster = await startCluster(t);
  const kubeconfig = `--kubeconfig=${cluster.kubeconfig}`;
  await cluster.client.create(GVR.namespaces, {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: "team-a" },
  });
  await cluster.client.create(GVR.persistentVolumeClaims, {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name: "data", namespace: "team-a" },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Gi" } },
      storageClassName: "gold",
    },
  });

  const text = await why(["pvc", "data", "-n", "team-a", kubeconfig]);
  assert.equal(text.code, 1, text.stderr);
  assert.match(text.stdout, /^pvc team-a\/data: Pending\n/);
  assert.match(text.stdout, /✓ claim/);
  assert.match(text.stdout, /✗ class .*StorageClass "gold" does not exist/);
  assert.match(text.stdout, /cause: +storageclass\.storage\.k8s\.io "gold" not found/);
  assert.match(text.stdout, /next: +kubectl get storageclass/);

  const json = await why([kubeconfig, "-o", "json", "persistentvolumeclaim", "data", "--namespace=team-a"]);
  assert.equal(json.code, 1, json.stderr);
  const diagnosis = JSON.parse(json.stdout) as {
    target: { kind: string; namespace: string; name: string };
    done: boolean;
    phase: string;
    links: { step: string; state: string; cause?: string }[];
  };
  assert.deepEqual(diagnosis.target, { kind: "pvc", name: "data", namespace: "team-a" });
  assert.equal(diagnosis.done, false);
  assert.equal(diagnosis.phase, "Pending");
  assert.deepEqual(
    diagnosis.links.map((l) => [l.step, l.state]),
    [
      ["claim", "done"],
      ["class", "failed"],
    ],
  );

  // A volume nobody claims is Available: nothing waits, exit code 0.
  await cluster.client.create<PersistentVolume>(GVR.persistentVolumes, {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name: "spare" },
    spec: {
      capacity: { storage: "1Gi" },
      accessModes: ["ReadWriteOnce"],
      csi: { driver: "hostpath.csi.k8s.io", volumeHandle: "spare" },
    },
  });
  const spare = await cluster.client.get<PersistentVolume>(GVR.persistentVolumes, "spare");
  await cluster.client.updateStatus(GVR.persistentVolumes, { ...spare, status: { phase: "Available" } });
  const done = await why(["pv", "spare", kubeconfig]);
  assert.equal(done.code, 0, done.stdout + done.stderr);
  assert.match(done.stdout, /✓ bind +the volume is Available/);
  assert.match(done.stdout, /every link is done/);

  const missing = await why(["pod", "nope", kubeconfig]);
  assert.equal(missing.code, 1);
  assert.match(missing.stdout, /pods "nope" not found in namespace default/);
});

test("csikit why: bad kind, bad output, missing name and unreadable kubeconfig are clear errors", async () => {
  const badKind = await why(["deployment", "x"]);
  assert.equal(badKind.code, 2);
  assert.match(
    badKind.stderr,
    /unknown kind "deployment": want one of pod, pvc, pv, volumeattachment, volumesnapshot/,
  );
  const badOutput = await why(["pvc", "x", "-o", "yaml"]);
  assert.equal(badOutput.code, 2);
  assert.match(badOutput.stderr, /invalid value "yaml" for flag -o: want text or json/);
  const noName = await why(["pvc"]);
  assert.equal(noName.code, 2);
  assert.match(noName.stderr, /want a kind and a name/);
  const noConfig = await why(["pvc", "x", "--kubeconfig=/nonexistent/kubeconfig"]);
  assert.equal(noConfig.code, 3);
  assert.match(noConfig.stderr, /kubeconfig: file \/nonexistent\/kubeconfig does not exist/);
});
