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
