// The /scale subresource (autoscaling/v1 Scale) of statefulsets, deployments and replicasets
// through the machine's kubectl and raw requests: `kubectl scale` on each kind, its
// --current-replicas and --resource-version preconditions, the Scale's shape in JSON and
// protobuf, a PUT/PATCH changing only spec.replicas (status kept, generation bumped),
// validation and uid/resourceVersion conflicts, discovery in both forms, and RBAC on
// `<resource>/scale`. No controller runs here: the replica counts are the user's writes.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { raw, startTestServer, type TestServer } from "../../../test/harness/apiserver.ts";
import { kubectl, kubectlMissing } from "../../../test/harness/kubectl.ts";
import { decodeProtobufObject, encodeProtobufObject, PROTOBUF_MEDIA_TYPE } from "../encoding/protobuf.ts";

const TOKENS = `scaler-token,scaler,uid-scaler
viewer-token,viewer,uid-viewer
`;

const template = (app: string) => `
  selector:
    matchLabels: {app: ${app}}
    matchExpressions:
      - {key: tier, operator: In, values: [web, edge]}
  template:
    metadata:
      labels: {app: ${app}, tier: web}
    spec:
      containers:
        - name: c
          image: busybox`;

const MANIFEST = `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web, namespace: default}
spec:
  replicas: 1
  serviceName: web${template("web")}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: front, namespace: default}
spec:
  replicas: 2${template("front")}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: back, namespace: default}
spec:
  replicas: 0${template("back")}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: scaler, namespace: default}
rules:
  - apiGroups: [apps]
    resources: [statefulsets, statefulsets/scale]
    verbs: [get, list, update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: viewer, namespace: default}
rules:
  - apiGroups: [apps]
    resources: [statefulsets, statefulsets/scale]
    verbs: [get, list]
  - apiGroups: [apps]
    resources: [statefulsets]
    verbs: [update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: scaler, namespace: default}
subjects: [{kind: User, name: scaler, apiGroup: rbac.authorization.k8s.io}]
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: scaler}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: viewer, namespace: default}
subjects: [{kind: User, name: viewer, apiGroup: rbac.authorization.k8s.io}]
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: viewer}
`;

const SCALE_PATH = "/apis/apps/v1/namespaces/default/statefulsets/web/scale";

type Obj = Record<string, unknown> & {
  metadata?: Record<string, unknown>;
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
};

describe("the scale subresource via kubectl", { skip: kubectlMissing() }, () => {
  let server: TestServer;
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "csikit-scale-"));
    await writeFile(join(dir, "tokens.csv"), TOKENS, { mode: 0o600 });
    server = await startTestServer({ authorizationMode: "RBAC", tokenAuthFile: join(dir, "tokens.csv") });
    const applied = await run(["apply", "-f", "-"], MANIFEST);
    assert.equal(applied.code, 0, applied.stderr);
  });
  after(async () => {
    await server?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  const run = (args: string[], stdin?: string) =>
    kubectl(args, { kubeconfig: server.handle.kubeconfigPath, stdin });
  const as = (token: string, args: string[]) => run([`--token=${token}`, ...args]);
  const getJson = async (path: string): Promise<Obj> => {
    const res = await raw(server.handle, { path });
    assert.equal(res.status, 200, res.text);
    return res.json();
  };

  test("kubectl scale sets spec.replicas of a statefulset, a deployment and a replicaset", async () => {
    for (const [kind, name, resource] of [
      ["statefulset", "web", "statefulsets"],
      ["deployment", "front", "deployments"],
      ["replicaset", "back", "replicasets"],
    ] as const) {
      const before = await getJson(`/apis/apps/v1/namespaces/default/${resource}/${name}`);
      const scaled = await run(["scale", kind, name, "--replicas=3"]);
      assert.equal(scaled.code, 0, scaled.stderr);
      assert.equal(scaled.stdout.trim(), `${kind}.apps/${name} scaled`);
      const after = await getJson(`/apis/apps/v1/namespaces/default/${resource}/${name}`);
      assert.equal(after.spec?.replicas, 3, kind);
      assert.equal(
        after.metadata?.generation,
        Number(before.metadata?.generation) + 1,
        `${kind}: a scale is a spec change`,
      );
      const scale = await getJson(`/apis/apps/v1/namespaces/default/${resource}/${name}/scale`);
      assert.deepEqual(scale, {
        kind: "Scale",
        apiVersion: "autoscaling/v1",
        metadata: {
          name,
          namespace: "default",
          uid: after.metadata?.uid,
          resourceVersion: after.metadata?.resourceVersion,
          creationTimestamp: after.metadata?.creationTimestamp,
        },
        spec: { replicas: 3 },
        // labels.Selector's string: requirements sorted by key, set values sorted.
        status: { replicas: 0, selector: `app=${name},tier in (edge,web)` },
      });
    }
  });

  test("kubectl scale preconditions: --current-replicas and --resource-version", async () => {
    const wrongCount = await run(["scale", "statefulset", "web", "--current-replicas=7", "--replicas=2"]);
    assert.equal(wrongCount.code, 1);
    assert.match(wrongCount.stderr, /Expected replicas to be 7, was 3/);
    // kubectl compares both against the Scale it read (the server's own 409 is the PUT test's).
    const stale = await run(["scale", "statefulset", "web", "--resource-version=1", "--replicas=2"]);
    assert.equal(stale.code, 1);
    assert.match(stale.stderr, /Expected resource version to be 1, was \d+/);
    const current = await getJson(SCALE_PATH);
    const ok = await run([
      "scale",
      "statefulset",
      "web",
      "--current-replicas=3",
      `--resource-version=${String(current.metadata?.resourceVersion)}`,
      "--replicas=2",
    ]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal((await getJson(SCALE_PATH)).spec?.replicas, 2);
  });

  test("a PUT changes only spec.replicas and keeps the status; bad Scales are refused as upstream", async () => {
    // The status belongs to the controller: a scale write leaves it as it was.
    const set = await getJson("/apis/apps/v1/namespaces/default/statefulsets/web");
    const withStatus = await raw(server.handle, {
      method: "PUT",
      path: "/apis/apps/v1/namespaces/default/statefulsets/web/status",
      body: JSON.stringify({ ...set, status: { replicas: 2, availableReplicas: 0 } }),
    });
    assert.equal(withStatus.status, 200, withStatus.text);
    const scale = await getJson(SCALE_PATH);
    assert.deepEqual(scale.status, { replicas: 2, selector: "app=web,tier in (edge,web)" });
    const put = await raw(server.handle, {
      method: "PUT",
      path: SCALE_PATH,
      body: JSON.stringify({ ...scale, spec: { replicas: 5 }, status: { replicas: 99 } }),
    });
    assert.equal(put.status, 200, put.text);
    const answered = put.json() as Obj;
    assert.equal(answered.kind, "Scale");
    assert.deepEqual(answered.spec, { replicas: 5 });
    assert.equal(answered.status?.replicas, 2, "the status is not the client's to set");
    const stored = await getJson("/apis/apps/v1/namespaces/default/statefulsets/web");
    assert.equal(stored.spec?.replicas, 5);
    assert.equal((stored.status as Obj).replicas, 2);
    assert.equal(stored.spec?.serviceName, "web", "the rest of the spec is untouched");

    const stale = await raw(server.handle, {
      method: "PUT",
      path: SCALE_PATH,
      body: JSON.stringify({ ...scale, spec: { replicas: 1 } }),
    });
    assert.equal(stale.status, 409, stale.text);
    assert.equal(
      stale.json().message,
      'Operation cannot be fulfilled on statefulsets.apps "web": the object has been modified; please apply your changes to the latest version and try again',
    );
    const negative = await raw(server.handle, {
      method: "PATCH",
      path: SCALE_PATH,
      headers: { "Content-Type": "application/merge-patch+json" },
      body: '{"spec":{"replicas":-1}}',
    });
    assert.equal(negative.status, 422, negative.text);
    assert.equal(
      negative.json().message,
      'Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0',
    );
    const otherUid = await raw(server.handle, {
      method: "PUT",
      path: SCALE_PATH,
      body: JSON.stringify({ metadata: { name: "web", uid: "not-the-uid" }, spec: { replicas: 1 } }),
    });
    assert.equal(otherUid.status, 409, otherUid.text);
    assert.match(String(otherUid.json().message), /Precondition failed: UID in precondition: not-the-uid/);
    const wrongName = await raw(server.handle, {
      method: "PUT",
      path: SCALE_PATH,
      body: JSON.stringify({ metadata: { name: "other" }, spec: { replicas: 1 } }),
    });
    assert.equal(wrongName.status, 400, wrongName.text);
    const wrongKind = await raw(server.handle, {
      method: "PUT",
      path: SCALE_PATH,
      body: JSON.stringify({ kind: "StatefulSet", metadata: { name: "web" }, spec: { replicas: 1 } }),
    });
    assert.equal(wrongKind.status, 400, wrongKind.text);
    const missing = await raw(server.handle, {
      path: "/apis/apps/v1/namespaces/default/statefulsets/nobody/scale",
    });
    assert.equal(missing.status, 404, missing.text);
    assert.equal(missing.json().message, 'statefulsets.apps "nobody" not found');
    const notScalable = await raw(server.handle, {
      path: "/apis/apps/v1/namespaces/default/daemonsets/any/scale",
    });
    assert.equal(notScalable.status, 404, "daemonsets have no scale subresource");
    const jsonPatch = await raw(server.handle, {
      method: "PATCH",
      path: SCALE_PATH,
      headers: { "Content-Type": "application/json-patch+json" },
      body: '[{"op":"replace","path":"/spec/replicas","value":4}]',
    });
    assert.equal(jsonPatch.status, 200, jsonPatch.text);
    assert.equal((jsonPatch.json() as Obj).spec?.replicas, 4);
  });

  test("protobuf: the Scale is served and taken as autoscaling/v1 Scale", async () => {
    const res = await raw(server.handle, { path: SCALE_PATH, headers: { Accept: PROTOBUF_MEDIA_TYPE } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers["content-type"], PROTOBUF_MEDIA_TYPE);
    const scale = decodeProtobufObject(res.bytes) as Obj;
    assert.equal(scale.kind, "Scale");
    assert.equal(scale.apiVersion, "autoscaling/v1");
    assert.equal(scale.status?.selector, "app=web,tier in (edge,web)");
    const body = encodeProtobufObject({ ...scale, spec: { replicas: 6 } });
    const put = await raw(server.handle, {
      method: "PUT",
      path: SCALE_PATH,
      body,
      headers: { "Content-Type": PROTOBUF_MEDIA_TYPE, Accept: PROTOBUF_MEDIA_TYPE },
    });
    assert.equal(put.status, 200, put.text);
    assert.deepEqual((decodeProtobufObject(put.bytes) as Obj).spec, { replicas: 6 });
  });

  test("discovery lists <resource>/scale as autoscaling/v1 Scale in both forms", async () => {
    const legacy = (await getJson("/apis/apps/v1")) as { resources?: Obj[] };
    const entries = (legacy.resources ?? []).filter((r) => String(r.name).endsWith("/scale"));
    assert.deepEqual(entries.map((r) => r.name).sort(), [
      "deployments/scale",
      "replicasets/scale",
      "statefulsets/scale",
    ]);
    for (const entry of entries) {
      assert.equal(entry.kind, "Scale");
      assert.equal(entry.group, "autoscaling");
      assert.equal(entry.version, "v1");
      assert.deepEqual(entry.verbs, ["get", "patch", "update"]);
    }
    const aggregated = await raw(server.handle, {
      path: "/apis",
      headers: { Accept: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" },
    });
    const groups = (aggregated.json() as { items: Obj[] }).items;
    const apps = groups.find((g) => g.metadata?.name === "apps") as {
      versions: { resources: { resource: string; subresources?: Obj[] }[] }[];
    };
    const sts = apps.versions[0]!.resources.find((r) => r.resource === "statefulsets");
    assert.deepEqual(
      sts?.subresources?.find((s) => s.subresource === "scale"),
      {
        subresource: "scale",
        responseKind: { group: "autoscaling", version: "v1", kind: "Scale" },
        verbs: ["get", "patch", "update"],
      },
    );
  });

  test("RBAC: scaling needs update/patch on statefulsets/scale, not on statefulsets", async () => {
    const denied = await as("viewer-token", ["scale", "statefulset", "web", "--replicas=1"]);
    assert.equal(denied.code, 1);
    assert.match(
      denied.stderr,
      /statefulsets\.apps "web" is forbidden: User "viewer" cannot patch resource "statefulsets\/scale" in API group "apps" in the namespace "default"/,
    );
    const allowed = await as("scaler-token", ["scale", "statefulset", "web", "--replicas=1"]);
    assert.equal(allowed.code, 0, allowed.stderr);
    assert.equal((await getJson(SCALE_PATH)).spec?.replicas, 1);
    const cannot = await as("viewer-token", [
      "auth",
      "can-i",
      "update",
      "statefulsets",
      "--subresource=scale",
    ]);
    assert.equal(cannot.stdout.trim(), "no");
    const can = await as("scaler-token", ["auth", "can-i", "update", "statefulsets", "--subresource=scale"]);
    assert.equal(can.stdout.trim(), "yes");
  });
});
