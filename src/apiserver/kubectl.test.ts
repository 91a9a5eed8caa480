// The API server driven by the machine's kubectl, as a user would: apply of a StorageClass +
// PVC + Pod manifest, get across kinds (server-side Table columns), -o yaml, describe, the
// three patch types, label, annotate, delete (with finalizers and --wait=false), wait
// --for=delete. One server for the whole file; skipped when kubectl is not installed.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import { startTestServer, type TestServer } from "../../test/harness/apiserver.ts";
import { kubectl, kubectlMissing } from "../../test/harness/kubectl.ts";

const skip = kubectlMissing();

const MANIFEST = `
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fast
provisioner: hostpath.csi.k8s.io
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  namespace: default
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: fast
  resources:
    requests:
      storage: 1Gi
---
apiVersion: v1
kind: Pod
metadata:
  name: app
  namespace: default
spec:
  containers:
  - name: app
    image: busybox
    volumeMounts:
    - name: data
      mountPath: /data
  volumes:
  - name: data
    persistentVolumeClaim:
      claimName: data
`;

const CRD_MANIFEST = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, shortNames: [gd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
`;

const GADGET = `
apiVersion: example.com/v1
kind: Gadget
metadata: {name: g1, namespace: default}
spec: {size: 3}
`;

describe("kubectl against the embedded API server", { skip }, () => {
  let server: TestServer;
  const run = async (args: string[], input?: string): Promise<string> => {
    const result = await kubectl(args, { kubeconfig: server.handle.kubeconfigPath, stdin: input });
    assert.equal(result.code, 0, `kubectl ${args.join(" ")} failed: ${result.stderr}`);
    return result.stdout;
  };
  const runFailing = async (args: string[]): Promise<string> => {
    const result = await kubectl(args, { kubeconfig: server.handle.kubeconfigPath });
    assert.notEqual(result.code, 0, `kubectl ${args.join(" ")} should fail`);
    return result.stderr;
  };

  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server.dispose();
  });

  test("apply -f creates, re-apply is unchanged, a changed manifest is configured", async () => {
    const created = await run(["apply", "-f", "-"], MANIFEST);
    assert.deepEqual(created.trim().split("\n"), [
      "storageclass.storage.k8s.io/fast created",
      "persistentvolumeclaim/data created",
      "pod/app created",
    ]);
    const again = await run(["apply", "-f", "-"], MANIFEST);
    assert.match(again, /storageclass.storage.k8s.io\/fast unchanged/);
    assert.match(again, /pod\/app unchanged/);
    const changed = await run(["apply", "-f", "-"], MANIFEST.replace("image: busybox", "image: nginx"));
    assert.match(changed, /pod\/app configured/);
    const image = await run(["get", "pod", "app", "-o", "jsonpath={.spec.containers[0].image}"]);
    assert.equal(image, "nginx");
  });

  test("get across kinds with -A resolves short and plural names", async () => {
    const out = await run(["get", "pv,pvc,sc,volumeattachments,csinodes,csidrivers", "-A"]);
    assert.match(
      out,
      /storageclass.storage.k8s.io\/fast\s+hostpath.csi.k8s.io\s+Delete\s+WaitForFirstConsumer\s+false/,
    );
    assert.match(out, /default\s+persistentvolumeclaim\/data\s+Pending/);
  });

  test("server-side columns for pvc and sc", async () => {
    const pvcs = await run(["get", "pvc"]);
    assert.match(
      pvcs.split("\n")[0]!,
      /^NAME\s+STATUS\s+VOLUME\s+CAPACITY\s+ACCESS MODES\s+STORAGECLASS\s+VOLUMEATTRIBUTESCLASS\s+AGE/,
    );
    const classes = await run(["get", "sc"]);
    assert.match(
      classes.split("\n")[0]!,
      /^NAME\s+PROVISIONER\s+RECLAIMPOLICY\s+VOLUMEBINDINGMODE\s+ALLOWVOLUMEEXPANSION\s+AGE/,
    );
  });

  test("get -o yaml shows defaults and server metadata", async () => {
    const sc = parseYaml(await run(["get", "sc", "fast", "-o", "yaml"])) as Record<string, unknown>;
    assert.equal(sc.reclaimPolicy, "Delete");
    assert.equal(sc.kind, "StorageClass");
    const meta = sc.metadata as Record<string, unknown>;
    assert.match(String(meta.uid), /^[0-9a-f-]{36}$/);
    assert.match(String(meta.resourceVersion), /^\d+$/);
  });

  test("describe pvc", async () => {
    const out = await run(["describe", "pvc", "data"]);
    assert.match(out, /Name:\s+data/);
    assert.match(out, /StorageClass:\s+fast/);
    assert.match(out, /Status:\s+Pending/);
  });

  test("patch --type=merge, --type=json, strategic; label; annotate", async () => {
    await run(["patch", "pvc", "data", "--type=merge", "-p", '{"metadata":{"labels":{"tier":"gold"}}}']);
    await run([
      "patch",
      "pvc",
      "data",
      "--type=json",
      "-p",
      '[{"op":"add","path":"/metadata/annotations","value":{"a":"1"}}]',
    ]);
    await run(["patch", "pod", "app", "-p", '{"spec":{"containers":[{"name":"app","image":"busybox:2"}]}}']);
    await run(["label", "pvc", "data", "team=storage"]);
    await run(["annotate", "pvc", "data", "note=hello"]);
    const pvc = JSON.parse(await run(["get", "pvc", "data", "-o", "json"])) as {
      metadata: { labels: Record<string, string>; annotations: Record<string, string> };
    };
    assert.equal(pvc.metadata.labels.tier, "gold");
    assert.equal(pvc.metadata.labels.team, "storage");
    assert.equal(pvc.metadata.annotations.a, "1");
    assert.equal(pvc.metadata.annotations.note, "hello");
    const pod = JSON.parse(await run(["get", "pod", "app", "-o", "json"])) as {
      spec: { containers: { name: string; image: string }[] };
    };
    assert.deepEqual(
      pod.spec.containers.map((c) => `${c.name}=${c.image}`),
      ["app=busybox:2"],
    );
    const selected = await run(["get", "pvc", "-l", "team=storage,tier in (gold)", "-o", "name"]);
    assert.equal(selected.trim(), "persistentvolumeclaim/data");
    const rejected = await runFailing([
      "patch",
      "pvc",
      "data",
      "--type=merge",
      "-p",
      '{"spec":{"storageClassName":"other"}}',
    ]);
    assert.match(rejected, /is invalid/);
  });

  test("delete --wait=false with a finalizer, then wait --for=delete once it is removed", async () => {
    await run([
      "patch",
      "pvc",
      "data",
      "--type=merge",
      "-p",
      '{"metadata":{"finalizers":["kubernetes.io/pvc-protection"]}}',
    ]);
    await run(["delete", "pvc", "data", "--wait=false"]);
    const held = JSON.parse(await run(["get", "pvc", "data", "-o", "json"])) as {
      metadata: { deletionTimestamp?: string };
    };
    assert.ok(held.metadata.deletionTimestamp, "still there, marked for deletion");
    const waiting = kubectl(["wait", "--for=delete", "pvc/data", "--timeout=30s"], {
      kubeconfig: server.handle.kubeconfigPath,
    });
    await run([
      "patch",
      "pvc",
      "data",
      "--type=json",
      "-p",
      '[{"op":"remove","path":"/metadata/finalizers"}]',
    ]);
    const waited = await waiting;
    assert.equal(waited.code, 0, waited.stderr);
    const gone = await runFailing(["get", "pvc", "data"]);
    assert.match(gone, /persistentvolumeclaims "data" not found/);
  });

  test("create namespace/configmap/secret/serviceaccount (kubectl sends these as protobuf)", async () => {
    await run(["create", "namespace", "made"]);
    await run(["-n", "made", "create", "configmap", "cm1", "--from-literal=a=b"]);
    await run(["-n", "made", "create", "secret", "generic", "s1", "--from-literal=p=q"]);
    await run(["-n", "made", "create", "serviceaccount", "sa1"]);
    const secret = JSON.parse(await run(["-n", "made", "get", "secret", "s1", "-o", "json"])) as {
      type: string;
      data: Record<string, string>;
    };
    assert.equal(secret.type, "Opaque");
    assert.equal(Buffer.from(secret.data.p!, "base64").toString(), "q");
    assert.equal(await run(["-n", "made", "get", "cm", "cm1", "-o", "jsonpath={.data.a}"]), "b");
    await run(["delete", "namespace", "made"]);
    const gone = await runFailing(["get", "namespace", "made"]);
    assert.match(gone, /namespaces "made" not found/);
  });

  test("a CRD applied with kubectl is served: wait established, apply a custom object, printer columns", async () => {
    await run(["apply", "-f", "-"], CRD_MANIFEST);
    await run(["wait", "--for", "condition=established", "crd/gadgets.example.com", "--timeout=20s"]);
    assert.match(await run(["apply", "-f", "-"], GADGET), /gadget.example.com\/g1 created/);
    assert.match(
      await run(["apply", "-f", "-"], GADGET.replace("size: 3", "size: 4")),
      /gadget.example.com\/g1 configured/,
    );
    const table = await run(["get", "gd"]);
    assert.match(table.split("\n")[0]!, /^NAME\s+SIZE\s+AGE/);
    assert.match(table.split("\n")[1]!, /^g1\s+4\s+/);
    await run(["delete", "crd", "gadgets.example.com"]);
    const gone = await runFailing(["get", "gadgets"]);
    // With kubectl's discovery cache still listing the kind, the list itself answers 404.
    assert.match(
      gone,
      /the server doesn't have a resource type "gadgets"|Resource=gadgets": the server could not find/,
    );
  });

  test("delete and conflicts as kubectl reports them", async () => {
    await run(["delete", "pod", "app"]);
    await run(["delete", "sc", "fast"]);
    const missing = await runFailing(["delete", "sc", "fast"]);
    assert.match(missing, /storageclasses.storage.k8s.io "fast" not found/);
  });
});
