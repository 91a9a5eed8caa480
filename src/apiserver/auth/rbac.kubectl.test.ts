// Identities and RBAC through the machine's kubectl: static users from a --token-auth-file, a
// ServiceAccount token from `kubectl create token`, `kubectl auth whoami`, `kubectl auth can-i`,
// a denied and an allowed identity with upstream's 403 text, ClusterRole aggregation, and the
// apps/v1 kinds applied from a manifest. Skipped when kubectl is not installed.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseTokenAuthFile } from "./authn.ts";
import { raw, startTestServer, type TestServer } from "../../../test/harness/apiserver.ts";
import { kubectl, kubectlMissing } from "../../../test/harness/kubectl.ts";

const skip = kubectlMissing();

const TOKENS = `alice-token,alice,uid-alice
bob-token,bob,uid-bob,"readers,devs"
carol-token,carol,uid-carol
`;

const POLICY = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: reader
rules:
  - apiGroups: [""]
    resources: [configmaps, pods]
    verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: readers
  namespace: default
subjects:
  - kind: Group
    name: readers
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: reader
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: aggregated
aggregationRule:
  clusterRoleSelectors:
    - matchLabels:
        rbac.example.com/aggregate-to-aggregated: "true"
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: secret-reader
  labels:
    rbac.example.com/aggregate-to-aggregated: "true"
rules:
  - apiGroups: [""]
    resources: [secrets]
    verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: carol-aggregated
subjects:
  - kind: User
    name: carol
    apiGroup: rbac.authorization.k8s.io
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: aggregated
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: alice-ghost
subjects:
  - kind: User
    name: alice
    apiGroup: rbac.authorization.k8s.io
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: ghost
`;

const DEPLOYMENT = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: csi-controller
  namespace: default
spec:
  replicas: 1
  selector:
    matchLabels: {app: csi-controller}
  template:
    metadata:
      labels: {app: csi-controller}
    spec:
      serviceAccountName: robot
      containers:
        - name: csi-provisioner
          image: registry.k8s.io/sig-storage/csi-provisioner:v5.2.0
          args: ["--csi-address=/csi/csi.sock"]
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: csi-node
  namespace: default
spec:
  selector:
    matchLabels: {app: csi-node}
  template:
    metadata:
      labels: {app: csi-node}
    spec:
      containers:
        - name: node-driver-registrar
          image: registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.13.0
`;

test("token auth file: kube-apiserver's CSV format, groups quoted, short records refused", () => {
  const warnings: string[] = [];
  const tokens = parseTokenAuthFile(`${TOKENS},empty,uid\nbob-token,bob2,uid2\n`, "/tokens.csv", (w) =>
    warnings.push(w),
  );
  assert.deepEqual(
    tokens.map((t) => [t.token, t.user.username, t.user.uid, t.user.groups]),
    [
      ["alice-token", "alice", "uid-alice", []],
      ["bob-token", "bob2", "uid2", []],
      ["carol-token", "carol", "uid-carol", []],
    ],
  );
  assert.deepEqual(warnings, [
    "empty token has been found in token file '/tokens.csv', record number '4'",
    "duplicate token has been found in token file '/tokens.csv', record number '5'",
  ]);
  assert.deepEqual(parseTokenAuthFile(TOKENS, "t")[1]?.user.groups, ["readers", "devs"]);
  assert.throws(
    () => parseTokenAuthFile("only,two\n", "/short.csv"),
    /token file '\/short\.csv' must have at least 3 columns \(token, user name, user uid\), found 2/,
  );
});

describe("RBAC via kubectl", { skip }, () => {
  let server: TestServer;
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "csikit-rbac-"));
    await writeFile(join(dir, "tokens.csv"), TOKENS, { mode: 0o600 });
    server = await startTestServer({ authorizationMode: "RBAC", tokenAuthFile: join(dir, "tokens.csv") });
    const applied = await kubectl(["apply", "-f", "-"], {
      kubeconfig: server.handle.kubeconfigPath,
      stdin: POLICY,
    });
    assert.equal(applied.code, 0, applied.stderr);
    const cm = await kubectl(["create", "configmap", "settings", "--from-literal=a=b"], {
      kubeconfig: server.handle.kubeconfigPath,
    });
    assert.equal(cm.code, 0, cm.stderr);
  });
  after(async () => {
    await server?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  const as = (token: string, args: string[]) =>
    kubectl([`--token=${token}`, ...args], { kubeconfig: server.handle.kubeconfigPath });

  test("a denied identity gets upstream's 403; an allowed one is served", async () => {
    const denied = await as("alice-token", ["get", "configmaps"]);
    assert.equal(denied.code, 1);
    assert.match(
      denied.stderr,
      /Error from server \(Forbidden\): configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "default": RBAC: clusterrole\.rbac\.authorization\.k8s\.io "ghost" not found/,
    );
    const allowed = await as("bob-token", ["get", "configmaps", "settings", "-o", "name"]);
    assert.equal(allowed.code, 0, allowed.stderr);
    assert.equal(allowed.stdout.trim(), "configmap/settings");
    const write = await as("bob-token", ["delete", "configmap", "settings"]);
    assert.equal(write.code, 1);
    assert.match(
      write.stderr,
      /configmaps "settings" is forbidden: User "bob" cannot delete resource "configmaps" in API group "" in the namespace "default"/,
    );
    const cluster = await as("bob-token", ["get", "storageclasses"]);
    assert.match(
      cluster.stderr,
      /storageclasses\.storage\.k8s\.io is forbidden: User "bob" cannot list resource "storageclasses" in API group "storage\.k8s\.io" at the cluster scope/,
    );
    const unknownToken = await as("nobody", ["get", "configmaps"]);
    assert.equal(unknownToken.code, 1);
    assert.match(unknownToken.stderr, /Unauthorized/);
  });

  test("kubectl auth can-i answers yes and no; the admin can do anything", async () => {
    const yes = await as("bob-token", ["auth", "can-i", "list", "pods"]);
    assert.equal(yes.code, 0, yes.stderr);
    assert.equal(yes.stdout.trim(), "yes");
    const no = await as("bob-token", ["auth", "can-i", "create", "pods"]);
    assert.equal(no.code, 1);
    assert.equal(no.stdout.trim(), "no");
    const other = await as("bob-token", ["auth", "can-i", "list", "pods", "--namespace=kube-system"]);
    assert.equal(other.stdout.trim(), "no");
    const admin = await kubectl(["auth", "can-i", "delete", "nodes"], {
      kubeconfig: server.handle.kubeconfigPath,
    });
    assert.equal(admin.stdout.trim(), "yes", admin.stderr);
    const aggregated = await as("carol-token", ["auth", "can-i", "get", "secrets", "--all-namespaces"]);
    assert.equal(aggregated.stdout.trim(), "yes", "aggregated ClusterRole carries the selected rules");
    const notAggregated = await as("carol-token", ["auth", "can-i", "list", "secrets"]);
    assert.equal(notAggregated.stdout.trim(), "no");
  });

  test("SubjectAccessReview asks for another user (admin only)", async () => {
    const body = JSON.stringify({
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      spec: {
        user: "bob",
        groups: ["readers"],
        resourceAttributes: { namespace: "default", verb: "get", resource: "pods" },
      },
    });
    const res = await raw(server.handle, {
      method: "POST",
      path: "/apis/authorization.k8s.io/v1/subjectaccessreviews",
      body,
    });
    assert.equal(res.status, 201, res.text);
    assert.equal((res.json().status as { allowed: boolean }).allowed, true);
    const denied = await raw(server.handle, {
      method: "POST",
      path: "/apis/authorization.k8s.io/v1/subjectaccessreviews",
      body,
      token: "bob-token",
    });
    assert.equal(denied.status, 403, denied.text);
    const neither = await raw(server.handle, {
      method: "POST",
      path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
      body: '{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{}}',
    });
    assert.equal(neither.status, 422, neither.text);
    assert.equal(
      neither.json().message,
      'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Required value: one of resourceAttributes or nonResourceAttributes must be specified',
    );
  });

  test("kubectl --as/--as-group: impersonation needs the impersonate verb on each thing asked for", async () => {
    // The admin (system:masters) may impersonate anyone; the impersonated user's rights apply.
    const asBob = await kubectl(["--as=bob", "--as-group=readers", "auth", "whoami", "-o", "json"], {
      kubeconfig: server.handle.kubeconfigPath,
    });
    assert.equal(asBob.code, 0, asBob.stderr);
    const info = (
      JSON.parse(asBob.stdout) as { status: { userInfo: { username: string; groups: string[] } } }
    ).status.userInfo;
    assert.deepEqual([info.username, info.groups], ["bob", ["readers", "system:authenticated"]]);
    const readsAsReader = await kubectl(["--as=bob", "--as-group=readers", "get", "configmaps"], {
      kubeconfig: server.handle.kubeconfigPath,
    });
    assert.equal(readsAsReader.code, 0, readsAsReader.stderr);
    const noGroup = await kubectl(["--as=bob", "get", "configmaps"], {
      kubeconfig: server.handle.kubeconfigPath,
    });
    assert.match(noGroup.stderr, /User "bob" cannot list resource "configmaps"/);
    // A ServiceAccount impersonated without groups gets its fixed groups.
    const asRobot = await kubectl(
      [
        "--as=system:serviceaccount:default:someone",
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.groups}",
      ],
      { kubeconfig: server.handle.kubeconfigPath },
    );
    assert.equal(
      asRobot.stdout,
      '["system:serviceaccounts","system:serviceaccounts:default","system:authenticated"]',
    );
    // alice may not impersonate: upstream's 403 names the verb and the resource.
    const denied = await as("alice-token", ["--as=bob", "get", "pods"]);
    assert.equal(denied.code, 1);
    assert.match(
      denied.stderr,
      /users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope/,
    );
    // Groups without a user: a clear 400.
    const groupsOnly = await raw(server.handle, {
      path: "/api/v1/namespaces/default/configmaps",
      headers: { "Impersonate-Group": "readers" },
    });
    assert.equal(groupsOnly.status, 400, groupsOnly.text);
    assert.match(groupsOnly.text, /without impersonating a user/);
  });

  test("kubectl auth whoami, for a static user, the admin and a ServiceAccount token from kubectl create token", async () => {
    const bob = await as("bob-token", ["auth", "whoami", "-o", "json"]);
    assert.equal(bob.code, 0, bob.stderr);
    const info = (
      JSON.parse(bob.stdout) as { status: { userInfo: { username: string; uid: string; groups: string[] } } }
    ).status.userInfo;
    assert.deepEqual(info, {
      username: "bob",
      uid: "uid-bob",
      groups: ["readers", "devs", "system:authenticated"],
    });
    const admin = await kubectl(["auth", "whoami"], { kubeconfig: server.handle.kubeconfigPath });
    assert.equal(admin.code, 0, admin.stderr);
    assert.match(admin.stdout, /csikit-admin/);
    assert.match(admin.stdout, /system:masters/);

    assert.equal(
      (await kubectl(["create", "serviceaccount", "robot"], { kubeconfig: server.handle.kubeconfigPath }))
        .code,
      0,
    );
    const created = await kubectl(["create", "token", "robot", "--duration=15m"], {
      kubeconfig: server.handle.kubeconfigPath,
    });
    assert.equal(created.code, 0, created.stderr);
    const token = created.stdout.trim();
    assert.equal(token.split(".").length, 3, "a JWT");
    const whoami = await as(token, ["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"]);
    assert.equal(whoami.stdout, "system:serviceaccount:default:robot", whoami.stderr);
    const before = await as(token, ["get", "pods"]);
    assert.match(before.stderr, /User "system:serviceaccount:default:robot" cannot list resource "pods"/);
    const bound = await kubectl(
      ["create", "rolebinding", "robot-reader", "--clusterrole=reader", "--serviceaccount=default:robot"],
      { kubeconfig: server.handle.kubeconfigPath },
    );
    assert.equal(bound.code, 0, bound.stderr);
    const afterBinding = await as(token, ["get", "pods"]);
    assert.equal(afterBinding.code, 0, afterBinding.stderr);
    const short = await kubectl(["create", "token", "robot", "--duration=1m"], {
      kubeconfig: server.handle.kubeconfigPath,
    });
    assert.equal(short.code, 1);
    assert.match(short.stderr, /may not specify a duration less than 10 minutes/);
    // A deleted ServiceAccount's tokens stop working.
    assert.equal(
      (await kubectl(["delete", "serviceaccount", "robot"], { kubeconfig: server.handle.kubeconfigPath }))
        .code,
      0,
    );
    const gone = await as(token, ["get", "pods"]);
    assert.match(gone.stderr, /Unauthorized/);
  });

  test("apps/v1 kinds apply from a manifest, list with their columns, and are validated", async () => {
    const applied = await kubectl(["apply", "-f", "-"], {
      kubeconfig: server.handle.kubeconfigPath,
      stdin: DEPLOYMENT,
    });
    assert.equal(applied.code, 0, applied.stderr);
    assert.match(applied.stdout, /deployment\.apps\/csi-controller created/);
    assert.match(applied.stdout, /daemonset\.apps\/csi-node created/);
    const listed = await kubectl(["get", "deployments"], { kubeconfig: server.handle.kubeconfigPath });
    assert.match(listed.stdout, /^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE$/m);
    assert.match(listed.stdout, /^csi-controller\s+0\/1\s+0\s+0\s+/m);
    const yaml = await kubectl(
      [
        "get",
        "deployment",
        "csi-controller",
        "-o",
        "jsonpath={.spec.strategy.type} {.spec.template.spec.restartPolicy} {.metadata.generation}",
      ],
      { kubeconfig: server.handle.kubeconfigPath },
    );
    assert.equal(yaml.stdout, "RollingUpdate Always 1");
    const bad = await kubectl(["apply", "-f", "-"], {
      kubeconfig: server.handle.kubeconfigPath,
      stdin: DEPLOYMENT.split("---")[0]!
        .replace("name: csi-controller\n  namespace", "name: mismatched\n  namespace")
        .replace("labels: {app: csi-controller}", "labels: {app: other}"),
    });
    assert.equal(bad.code, 1);
    assert.match(
      bad.stderr,
      /spec\.template\.metadata\.labels: Invalid value: .*`selector` does not match template `labels`/,
    );
  });
});

test("AlwaysAllow stays the default: any authenticated user may do anything", { skip }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "csikit-rbac-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, "tokens.csv"), TOKENS, { mode: 0o600 });
  const server = await startTestServer({ tokenAuthFile: join(dir, "tokens.csv") });
  t.after(() => server.dispose());
  const res = await raw(server.handle, { path: "/api/v1/namespaces/default/secrets", token: "alice-token" });
  assert.equal(res.status, 200, res.text);
  const canI = await kubectl(["--token=alice-token", "auth", "can-i", "delete", "nodes"], {
    kubeconfig: server.handle.kubeconfigPath,
  });
  assert.equal(canI.stdout.trim(), "yes");
});
