// The OpenAPI documents name the release the server acts as: every /openapi/v3 document's
// info.version is the gitVersion /version reports (kube-apiserver fills info.version from its
// own version), at 1.33 as at the default 1.37. /openapi/v2 is not served (see openapi.ts).

import { test } from "node:test";
import assert from "node:assert/strict";
import { kubeRelease, type KubernetesMinor } from "../../api/index.ts";
import { raw, startTestServer } from "../../../test/harness/apiserver.ts";

for (const minor of ["1.33", "1.37"] satisfies KubernetesMinor[]) {
  test(`at ${minor}: every /openapi/v3 document's info.version is /version's gitVersion`, async (t) => {
    const server = await startTestServer({ release: kubeRelease(minor) });
    t.after(() => server.dispose());
    const version = await raw(server.handle, { path: "/version" });
    assert.equal(version.status, 200, version.text);
    const gitVersion = String(version.json().gitVersion);
    assert.match(gitVersion, new RegExp(`^v${minor.replace(".", "\\.")}\\.\\d+\\+csikit$`));

    const root = await raw(server.handle, { path: "/openapi/v3" });
    assert.equal(root.status, 200, root.text);
    const paths = root.json().paths as Record<string, { serverRelativeURL: string }>;
    for (const key of ["api/v1", "apis/storage.k8s.io/v1"]) {
      const url = paths[key]?.serverRelativeURL;
      assert.ok(url, `${key} listed`);
      const document = await raw(server.handle, { path: url });
      assert.equal(document.status, 200, document.text);
      assert.deepEqual(document.json().info, { title: "Kubernetes", version: gitVersion }, key);
    }
    assert.equal((await raw(server.handle, { path: "/openapi/v2" })).status, 404);
  });
}

// kubectl fetches /openapi/v3 and the documents it checks on every invocation, through an HTTP
// cache (~/.kube/cache/http): the documents carry entity tags, a hashed URL may be kept for good,
// and a revalidation with the tag is answered 304 without a body.
test("/openapi/v3 answers carry an ETag, hashed URLs are immutable, If-None-Match gets 304", async (t) => {
  const server = await startTestServer({});
  t.after(() => server.dispose());
  const root = await raw(server.handle, { path: "/openapi/v3" });
  assert.equal(root.status, 200, root.text);
  assert.match(String(root.headers.etag), /^"[0-9A-F]+"$/);
  assert.equal(root.headers["cache-control"], "no-cache, private");
  const rootAgain = await raw(server.handle, {
    path: "/openapi/v3",
    headers: { "If-None-Match": String(root.headers.etag) },
  });
  assert.equal(rootAgain.status, 304);
  assert.equal(rootAgain.text, "");

  const url = (root.json().paths as Record<string, { serverRelativeURL: string }>)["api/v1"]
    ?.serverRelativeURL;
  assert.ok(url);
  const hash = new URL(url, "https://x").searchParams.get("hash");
  const document = await raw(server.handle, { path: url });
  assert.equal(document.status, 200);
  assert.equal(document.headers.etag, `"${hash}"`);
  assert.equal(document.headers["cache-control"], "public, immutable");
  assert.equal(document.json().openapi, "3.0.0");
  const unhashed = await raw(server.handle, { path: "/openapi/v3/api/v1" });
  assert.equal(unhashed.headers["cache-control"], "no-cache, private");
  assert.equal(unhashed.text, document.text);
  const stale = await raw(server.handle, { path: "/openapi/v3/api/v1?hash=0123" });
  assert.equal(stale.headers["cache-control"], "no-cache, private");
  const revalidated = await raw(server.handle, {
    path: url,
    headers: { "If-None-Match": `W/"0", "${hash}"` },
  });
  assert.equal(revalidated.status, 304);
  assert.equal((await raw(server.handle, { path: "/openapi/v3/apis/nope/v1" })).status, 404);
});
