// Bound ServiceAccount tokens (TokenRequest with spec.boundObjectRef, what the kubelet asks for
// a CSI driver's tokenRequests): bound to a Pod (its node named too), a Secret or a Node; refused
// for other kinds or a mismatched uid; the user carries upstream's extra fields; the token stops
// authenticating once its pod is deleted.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { raw, startTestServer, type TestServer } from "../../../test/harness/apiserver.ts";

let server: TestServer;
before(async () => {
  server = await startTestServer({ authorizationMode: "AlwaysAllow" });
});
after(async () => {
  await server?.dispose();
});

async function create(path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await raw(server.handle, { method: "POST", path, body: JSON.stringify(body) });
  assert.equal(res.status, 201, res.text);
  return res.json();
}

function uidOf(object: Record<string, unknown>): string {
  return String((object.metadata as { uid: string }).uid);
}

async function requestToken(
  boundObjectRef: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await raw(server.handle, {
    method: "POST",
    path: "/api/v1/namespaces/default/serviceaccounts/driver/token",
    body: JSON.stringify({
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: { audiences: [], expirationSeconds: 3600, boundObjectRef },
    }),
  });
  return { status: res.status, body: res.json() };
}

async function whoami(
  token: string,
): Promise<{ status: number; user?: { username: string; extra?: Record<string, string[]> } }> {
  const res = await raw(server.handle, {
    method: "POST",
    path: "/apis/authentication.k8s.io/v1/selfsubjectreviews",
    token,
    body: JSON.stringify({ apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" }),
  });
  if (res.status !== 201) return { status: res.status };
  return { status: res.status, user: (res.json().status as { userInfo: never }).userInfo };
}

test("a pod-bound token names the pod and its node, and dies with the pod", async () => {
  await create("/api/v1/namespaces/default/serviceaccounts", { metadata: { name: "driver" } });
  const node = await create("/api/v1/nodes", { metadata: { name: "node-a" } });
  const pod = await create("/api/v1/namespaces/default/pods", {
    metadata: { name: "app" },
    spec: { nodeName: "node-a", containers: [{ name: "c", image: "busybox" }] },
  });
  const issued = await requestToken({ apiVersion: "v1", kind: "Pod", name: "app", uid: uidOf(pod) });
  assert.equal(issued.status, 201, JSON.stringify(issued.body));
  assert.deepEqual((issued.body.spec as { boundObjectRef: unknown }).boundObjectRef, {
    kind: "Pod",
    apiVersion: "v1",
    name: "app",
    uid: uidOf(pod),
  });
  const token = String((issued.body.status as { token: string }).token);
  const claims = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString("utf8")) as {
    "kubernetes.io": { pod: unknown; node: unknown };
  };
  assert.deepEqual(claims["kubernetes.io"].pod, { name: "app", uid: uidOf(pod) });
  assert.deepEqual(claims["kubernetes.io"].node, { name: "node-a", uid: uidOf(node) });

  const before = await whoami(token);
  assert.equal(before.status, 201);
  assert.equal(before.user?.username, "system:serviceaccount:default:driver");
  assert.deepEqual(before.user?.extra?.["authentication.kubernetes.io/pod-name"], ["app"]);
  assert.deepEqual(before.user?.extra?.["authentication.kubernetes.io/node-name"], ["node-a"]);

  const deleted = await raw(server.handle, {
    method: "DELETE",
    path: "/api/v1/namespaces/default/pods/app?gracePeriodSeconds=0",
  });
  assert.equal(deleted.status, 200, deleted.text);
  assert.equal((await whoami(token)).status, 401, "a token bound to a deleted pod no longer authenticates");
});

test("binding is refused for other kinds, a missing object or a mismatched uid; a secret may be bound", async () => {
  const kind = await requestToken({ apiVersion: "v1", kind: "ConfigMap", name: "x" });
  assert.equal(kind.status, 400);
  assert.match(String(kind.body.message), /cannot bind token for serviceaccount "driver" to object of kind/);
  const missing = await requestToken({ apiVersion: "v1", kind: "Pod", name: "nope" });
  assert.equal(missing.status, 400);
  assert.match(String(missing.body.message), /pods "nope" not found/);
  const secret = await create("/api/v1/namespaces/default/secrets", { metadata: { name: "s" } });
  const wrongUid = await requestToken({ apiVersion: "v1", kind: "Secret", name: "s", uid: "not-it" });
  assert.equal(wrongUid.status, 400);
  assert.match(String(wrongUid.body.message), /does not match the UID in record/);
  const bound = await requestToken({ apiVersion: "v1", kind: "Secret", name: "s", uid: uidOf(secret) });
  assert.equal(bound.status, 201, JSON.stringify(bound.body));
  assert.equal((await whoami(String((bound.body.status as { token: string }).token))).status, 201);
});
