// TokenReview with spec.audiences, as the snapshot-metadata sidecar sends it: a ServiceAccount
// token requested for an audience authenticates for that audience only (status.audiences
// names it), not for another and not against the API server itself; a review without
// audiences means the API server's own; the admin token is no token of a foreign audience.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { raw, startTestServer, type TestServer } from "../../../test/harness/apiserver.ts";

let server: TestServer;
before(async () => {
  server = await startTestServer({ authorizationMode: "AlwaysAllow" });
  const res = await raw(server.handle, {
    method: "POST",
    path: "/api/v1/namespaces/default/serviceaccounts",
    body: JSON.stringify({ metadata: { name: "backup" } }),
  });
  assert.equal(res.status, 201, res.text);
});
after(async () => {
  await server?.dispose();
});

async function tokenFor(audiences: string[]): Promise<string> {
  const res = await raw(server.handle, {
    method: "POST",
    path: "/api/v1/namespaces/default/serviceaccounts/backup/token",
    body: JSON.stringify({
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: { audiences },
    }),
  });
  assert.equal(res.status, 201, res.text);
  return String((res.json().status as { token: string }).token);
}

async function review(
  token: string,
  audiences?: string[],
): Promise<{ authenticated: boolean; audiences?: string[]; user?: { username?: string } }> {
  const res = await raw(server.handle, {
    method: "POST",
    path: "/apis/authentication.k8s.io/v1/tokenreviews",
    body: JSON.stringify({
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenReview",
      spec: { token, ...(audiences ? { audiences } : {}) },
    }),
  });
  assert.equal(res.status, 201, res.text);
  return res.json().status as never;
}

test("a token for an audience authenticates for it, and names it", async () => {
  const token = await tokenFor(["hostpath.csi.k8s.io"]);
  const status = await review(token, ["other", "hostpath.csi.k8s.io"]);
  assert.equal(status.authenticated, true);
  assert.deepEqual(status.audiences, ["hostpath.csi.k8s.io"]);
  assert.equal(status.user?.username, "system:serviceaccount:default:backup");
});

test("a token for one audience is refused for another and by the API server itself", async () => {
  const token = await tokenFor(["hostpath.csi.k8s.io"]);
  assert.equal((await review(token, ["wrong-audience"])).authenticated, false);
  assert.equal((await review(token)).authenticated, false);
  const res = await raw(server.handle, { method: "GET", path: "/api/v1/namespaces", token });
  assert.equal(res.status, 401);
});

test("a token for the API server does not pass a foreign audience; the admin token neither", async () => {
  const token = await tokenFor([]);
  assert.equal((await review(token)).authenticated, true);
  assert.equal((await review(token, ["hostpath.csi.k8s.io"])).authenticated, false);
  assert.equal((await review(server.handle.adminToken, ["hostpath.csi.k8s.io"])).authenticated, false);
});
