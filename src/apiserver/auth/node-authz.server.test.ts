// The Node authorizer and NodeRestriction through the real server with real node tokens
// (--authorization-mode=Node,RBAC, --enable-admission-plugins=NodeRestriction, static tokens
// of system:node:node-1 and system:node:node-2 in system:nodes): every path a node agent uses
// is allowed for its own node; every other one is 403 with kube-apiserver's reason.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { raw, startTestServer, type RawRequest, type TestServer } from "../../../test/harness/apiserver.ts";
import { admissionChain } from "../admission/admission.ts";
import { parseAuthorizationModes } from "./authz.ts";

const TOKENS = `node-1-token,system:node:node-1,uid-n1,"system:nodes"
node-2-token,system:node:node-2,uid-n2,"system:nodes"
`;

const NODE1 = "node-1-token";
const NODE2 = "node-2-token";

let server: TestServer;
let dir: string;
let podUid = "";

function call(token: string | undefined, method: string, path: string, body?: unknown, type?: string) {
  const request: RawRequest = { method, path };
  if (token !== undefined) request.token = token;
  if (body !== undefined) {
    request.body = JSON.stringify(body);
    request.headers = { "Content-Type": type ?? "application/json" };
  }
  return raw(server.handle, request);
}

const admin = (method: string, path: string, body?: unknown) => call(undefined, method, path, body);
const MERGE = "application/merge-patch+json";

async function created(method: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await admin(method, path, body);
  assert.ok(response.status < 300, `${method} ${path}: ${response.status} ${response.text}`);
  return response.json();
}

async function allowed(token: string, method: string, path: string, body?: unknown, type?: string) {
  const response = await call(token, method, path, body, type);
  assert.ok(
    response.status < 300,
    `${method} ${path} should be allowed: ${response.status} ${response.text}`,
  );
  return response;
}

async function refused(
  token: string,
  method: string,
  path: string,
  message: string,
  body?: unknown,
  type?: string,
): Promise<void> {
  const response = await call(token, method, path, body, type);
  assert.equal(response.status, 403, `${method} ${path}: ${response.text}`);
  assert.equal(response.json().reason, "Forbidden");
  assert.equal(response.json().message, message);
}

const NS = "/api/v1/namespaces/default";

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "csikit-nodeauth-"));
  await writeFile(join(dir, "tokens.csv"), TOKENS, { mode: 0o600 });
  server = await startTestServer({
    authorizationMode: "Node,RBAC",
    admission: admissionChain({ enable: ["NodeRestriction"] }),
    tokenAuthFile: join(dir, "tokens.csv"),
  });
  for (const name of ["pod-secret", "stage-secret", "other-secret", "pull-secret"])
    await created("POST", `${NS}/secrets`, { metadata: { name }, data: { k: "dg==" } });
  await created("POST", `${NS}/configmaps`, { metadata: { name: "pod-config" }, data: { a: "b" } });
  await created("POST", `${NS}/serviceaccounts`, { metadata: { name: "app" } });
  await created("POST", `${NS}/persistentvolumeclaims`, {
    metadata: { name: "data" },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Gi" } },
      storageClassName: "",
    },
  });
  const pv = (name: string, claim: string) => ({
    metadata: { name },
    spec: {
      capacity: { storage: "1Gi" },
      accessModes: ["ReadWriteOnce"],
      claimRef: { namespace: "default", name: claim },
      csi: {
        driver: "hostpath.csi.k8s.io",
        volumeHandle: name,
        nodeStageSecretRef: { namespace: "default", name: "stage-secret" },
      },
    },
  });
  await created("POST", "/api/v1/persistentvolumes", pv("pv-data", "data"));
  await created("POST", "/api/v1/persistentvolumes", pv("pv-other", "other"));
  for (const [name, nodeName] of [
    ["va-1", "node-1"],
    ["va-2", "node-2"],
  ] as const) {
    await created("POST", "/apis/storage.k8s.io/v1/volumeattachments", {
      metadata: { name },
      spec: { attacher: "hostpath.csi.k8s.io", nodeName, source: { persistentVolumeName: "pv-data" } },
    });
  }
  const pod = await created("POST", `${NS}/pods`, {
    metadata: { name: "app", labels: { app: "x" } },
    spec: {
      nodeName: "node-1",
      serviceAccountName: "app",
      imagePullSecrets: [{ name: "pull-secret" }],
      containers: [{ name: "c", image: "busybox", envFrom: [{ configMapRef: { name: "pod-config" } }] }],
      volumes: [
        { name: "s", secret: { secretName: "pod-secret" } },
        { name: "d", persistentVolumeClaim: { claimName: "data" } },
      ],
    },
  });
  podUid = String((pod.metadata as Record<string, unknown>).uid);
  // Each node registers its own Node, as a kubelet does.
  for (const [token, name] of [
    [NODE1, "node-1"],
    [NODE2, "node-2"],
  ] as const) {
    await allowed(token, "POST", "/api/v1/nodes", {
      metadata: { name, labels: { "kubernetes.io/hostname": name } },
    });
  }
});

after(async () => {
  await server?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test("--authorization-mode takes kube-apiserver's comma list", () => {
  assert.deepEqual(parseAuthorizationModes("Node,RBAC"), ["Node", "RBAC"]);
  assert.throws(
    () => parseAuthorizationModes("Node,Bogus"),
    /authorization-mode "Bogus" is not a valid mode/,
  );
  assert.throws(() => parseAuthorizationModes("RBAC,RBAC"), /"RBAC" has mode specified more than once/);
});

describe("a node reads only what its pods use", () => {
  test("its pod's secrets, configmap, claim, volume, volume secrets, attachment and token", async () => {
    for (const secret of ["pod-secret", "pull-secret", "stage-secret"])
      await allowed(NODE1, "GET", `${NS}/secrets/${secret}`);
    await allowed(NODE1, "GET", `${NS}/secrets?fieldSelector=metadata.name%3Dpod-secret`);
    await allowed(NODE1, "GET", `${NS}/configmaps/pod-config`);
    await allowed(NODE1, "GET", `${NS}/persistentvolumeclaims/data`);
    await allowed(NODE1, "GET", "/api/v1/persistentvolumes/pv-data");
    await allowed(NODE1, "GET", "/apis/storage.k8s.io/v1/volumeattachments/va-1");
    await allowed(NODE1, "GET", `${NS}/pods/app`);
    await allowed(NODE1, "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1");
    await allowed(NODE1, "GET", "/apis/storage.k8s.io/v1/csidrivers");
    const token = await allowed(NODE1, "POST", `${NS}/serviceaccounts/app/token`, {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: { audiences: ["x"], boundObjectRef: { apiVersion: "v1", kind: "Pod", name: "app", uid: podUid } },
    });
    assert.ok(typeof (token.json().status as Record<string, unknown>).token === "string");
  });

  test("another node's secret is 403 with the node authorizer's reason", async () => {
    await refused(
      NODE2,
      "GET",
      `${NS}/secrets/pod-secret`,
      `secrets "pod-secret" is forbidden: User "system:node:node-2" cannot get resource "secrets" in API group "" in the namespace "default": no relationship found between node 'node-2' and this object`,
    );
    await refused(
      NODE2,
      "GET",
      `${NS}/secrets/stage-secret`,
      `secrets "stage-secret" is forbidden: User "system:node:node-2" cannot get resource "secrets" in API group "" in the namespace "default": no relationship found between node 'node-2' and this object`,
    );
    await refused(
      NODE1,
      "GET",
      `${NS}/secrets/other-secret`,
      `secrets "other-secret" is forbidden: User "system:node:node-1" cannot get resource "secrets" in API group "" in the namespace "default": no relationship found between node 'node-1' and this object`,
    );
    await refused(
      NODE1,
      "GET",
      `${NS}/secrets`,
      `secrets is forbidden: User "system:node:node-1" cannot list resource "secrets" in API group "" in the namespace "default": No Object name found`,
    );
    await refused(
      NODE1,
      "POST",
      `${NS}/secrets`,
      `secrets is forbidden: User "system:node:node-1" cannot create resource "secrets" in API group "" in the namespace "default": can only read resources of this type`,
      { metadata: { name: "mine" } },
    );
  });

  test("a volume, claim or attachment not of its pods is 403; claims and volumes are get-only", async () => {
    await refused(
      NODE1,
      "GET",
      "/api/v1/persistentvolumes/pv-other",
      `persistentvolumes "pv-other" is forbidden: User "system:node:node-1" cannot get resource "persistentvolumes" in API group "" at the cluster scope: no relationship found between node 'node-1' and this object`,
    );
    await refused(
      NODE2,
      "GET",
      `${NS}/persistentvolumeclaims/data`,
      `persistentvolumeclaims "data" is forbidden: User "system:node:node-2" cannot get resource "persistentvolumeclaims" in API group "" in the namespace "default": no relationship found between node 'node-2' and this object`,
    );
    await refused(
      NODE1,
      "GET",
      "/apis/storage.k8s.io/v1/volumeattachments/va-2",
      `volumeattachments.storage.k8s.io "va-2" is forbidden: User "system:node:node-1" cannot get resource "volumeattachments" in API group "storage.k8s.io" at the cluster scope: no relationship found between node 'node-1' and this object`,
    );
    await refused(
      NODE1,
      "GET",
      "/api/v1/persistentvolumeclaims",
      `persistentvolumeclaims is forbidden: User "system:node:node-1" cannot list resource "persistentvolumeclaims" in API group "" at the cluster scope: can only get individual resources of this type`,
    );
    await refused(
      NODE1,
      "GET",
      "/api/v1/pods",
      `pods is forbidden: User "system:node:node-1" cannot list resource "pods" in API group "" at the cluster scope: can only list/watch pods with spec.nodeName field selector`,
    );
    await refused(
      NODE1,
      "GET",
      "/api/v1/nodes/node-2",
      `nodes "node-2" is forbidden: User "system:node:node-1" cannot get resource "nodes" in API group "" at the cluster scope: node 'node-1' cannot read 'node-2', only its own Node object`,
    );
  });

  test("tokens only for its pods' ServiceAccounts, bound to such a pod", async () => {
    await refused(
      NODE2,
      "POST",
      `${NS}/serviceaccounts/app/token`,
      `serviceaccounts "app" is forbidden: User "system:node:node-2" cannot create resource "serviceaccounts/token" in API group "" in the namespace "default": no relationship found between node 'node-2' and this object`,
      { spec: { boundObjectRef: { apiVersion: "v1", kind: "Pod", name: "app", uid: podUid } } },
    );
    await refused(
      NODE1,
      "POST",
      `${NS}/serviceaccounts/app/token`,
      `serviceaccounts "app" is forbidden: node requested token not bound to a pod`,
      {
        spec: { audiences: ["x"] },
      },
    );
  });

  test("RBAC still decides after the Node authorizer (Node,RBAC)", async () => {
    await created("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", {
      metadata: { name: "pv-reader" },
      rules: [{ apiGroups: [""], resources: ["persistentvolumes"], verbs: ["get"] }],
    });
    await created("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
      metadata: { name: "node-2-pv-reader" },
      subjects: [{ kind: "User", name: "system:node:node-2" }],
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "pv-reader" },
    });
    await allowed(NODE2, "GET", "/api/v1/persistentvolumes/pv-other");
  });
});

describe("a node writes only its own objects (NodeRestriction)", () => {
  test("its Node, Lease, CSINode, pod status, claim status and pod deletion", async () => {
    await allowed(
      NODE1,
      "PATCH",
      "/api/v1/nodes/node-1",
      { metadata: { labels: { "node.kubernetes.io/pool": "a" } } },
      MERGE,
    );
    await allowed(NODE1, "PATCH", "/api/v1/nodes/node-1/status", { status: { phase: "Running" } }, MERGE);
    await allowed(NODE1, "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", {
      metadata: { name: "node-1" },
      spec: { holderIdentity: "node-1" },
    });
    await allowed(
      NODE1,
      "PATCH",
      "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-1",
      { spec: { leaseDurationSeconds: 40 } },
      MERGE,
    );
    await allowed(NODE1, "POST", "/apis/storage.k8s.io/v1/csinodes", {
      metadata: { name: "node-1" },
      spec: { drivers: [] },
    });
    await allowed(NODE1, "PATCH", `${NS}/pods/app/status`, { status: { phase: "Running" } }, MERGE);
    await allowed(
      NODE1,
      "PATCH",
      `${NS}/persistentvolumeclaims/data/status`,
      {
        status: {
          capacity: { storage: "1Gi" },
          allocatedResourceStatuses: { storage: "NodeResizeInProgress" },
        },
      },
      MERGE,
    );
    await allowed(NODE1, "POST", `${NS}/events`, {
      metadata: { name: "app.1" },
      involvedObject: { kind: "Pod", namespace: "default", name: "app" },
      reason: "Mounted",
      message: "m",
      type: "Normal",
    });
  });

  test("another node's Node, Lease, CSINode or pods are 403 with NodeRestriction's reason", async () => {
    await refused(
      NODE2,
      "PATCH",
      "/api/v1/nodes/node-1",
      `nodes "node-1" is forbidden: node "node-2" is not allowed to modify node "node-1"`,
      { metadata: { labels: { evil: "yes" } } },
      MERGE,
    );
    await refused(
      NODE2,
      "POST",
      "/api/v1/nodes",
      `nodes "node-3" is forbidden: node "node-2" is not allowed to modify node "node-3"`,
      { metadata: { name: "node-3" } },
    );
    await refused(
      NODE2,
      "PATCH",
      "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-1",
      `leases.coordination.k8s.io "node-1" is forbidden: User "system:node:node-2" cannot patch resource "leases" in API group "coordination.k8s.io" in the namespace "kube-node-lease": can only access node lease with the same name as the requesting node`,
      { spec: {} },
      MERGE,
    );
    await refused(
      NODE2,
      "POST",
      "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
      `leases.coordination.k8s.io "node-1" is forbidden: can only access node lease with the same name as the requesting node`,
      { metadata: { name: "node-1" }, spec: {} },
    );
    await refused(
      NODE2,
      "POST",
      "/apis/storage.k8s.io/v1/csinodes",
      `csinodes.storage.k8s.io "node-1" is forbidden: can only access CSINode with the same name as the requesting node`,
      { metadata: { name: "node-1" }, spec: { drivers: [] } },
    );
    await refused(
      NODE2,
      "PATCH",
      `${NS}/pods/app/status`,
      `pods "app" is forbidden: node "node-2" can only update pod status for pods with spec.nodeName set to itself`,
      { status: { phase: "Failed" } },
      MERGE,
    );
    await refused(
      NODE2,
      "DELETE",
      `${NS}/pods/app`,
      `pods "app" is forbidden: node "node-2" can only delete pods with spec.nodeName set to itself`,
    );
    await refused(
      NODE2,
      "POST",
      `${NS}/pods`,
      `pods "rogue" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "node-2" can only create mirror pods`,
      { metadata: { name: "rogue" }, spec: { nodeName: "node-2", containers: [{ name: "c", image: "x" }] } },
    );
  });

  test("its own restricted labels, taints, pod specs and claim fields stay out of reach", async () => {
    await refused(
      NODE1,
      "PATCH",
      "/api/v1/nodes/node-1",
      `nodes "node-1" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/trusted`,
      { metadata: { labels: { "node-restriction.kubernetes.io/trusted": "yes" } } },
      MERGE,
    );
    await refused(
      NODE1,
      "PATCH",
      "/api/v1/nodes/node-1",
      `nodes "node-1" is forbidden: is not allowed to modify labels: kubernetes.io/role`,
      { metadata: { labels: { "kubernetes.io/role": "master" } } },
      MERGE,
    );
    await refused(
      NODE1,
      "PATCH",
      "/api/v1/nodes/node-1",
      `nodes "node-1" is forbidden: node "node-1" is not allowed to modify taints`,
      { spec: { taints: [{ key: "k", effect: "NoSchedule" }] } },
      MERGE,
    );
    await refused(
      NODE2,
      "POST",
      "/api/v1/nodes",
      `nodes "node-2" is forbidden: node "node-2" is not allowed to set the following labels: node-restriction.kubernetes.io/x`,
      { metadata: { name: "node-2", labels: { "node-restriction.kubernetes.io/x": "y" } } },
    );
    await refused(
      NODE1,
      "PATCH",
      `${NS}/pods/app/status`,
      `pods "app" is forbidden: node "node-1" cannot update labels through pod status`,
      { metadata: { labels: { app: "y" } } },
      MERGE,
    );
    await refused(
      NODE1,
      "PATCH",
      `${NS}/pods/app`,
      `pods "app" is forbidden: User "system:node:node-1" cannot patch resource "pods" in API group "" in the namespace "default"`,
      { metadata: { labels: { app: "y" } } },
      MERGE,
    );
    await refused(
      NODE1,
      "PATCH",
      `${NS}/persistentvolumeclaims/data/status`,
      `persistentvolumeclaims "data" is forbidden: node "node-1" is not allowed to update fields other than status.capacity and status.conditions: status.phase`,
      { status: { phase: "Lost" } },
      MERGE,
    );
    await refused(
      NODE1,
      "PATCH",
      `${NS}/persistentvolumeclaims/data`,
      `persistentvolumeclaims "data" is forbidden: User "system:node:node-1" cannot patch resource "persistentvolumeclaims" in API group "" in the namespace "default": can only get individual resources of this type`,
      { metadata: { labels: { a: "b" } } },
      MERGE,
    );
  });

  test("its own pod it may delete", async () => {
    await allowed(NODE1, "DELETE", `${NS}/pods/app`, {
      apiVersion: "v1",
      kind: "DeleteOptions",
      gracePeriodSeconds: 0,
    });
  });
});
