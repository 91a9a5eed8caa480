import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CsikitError } from "../base/index.ts";
import { KubeClient, loadKubeConfig, podNamespace } from "./client.ts";

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), "csikit-kube-client-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const kubeconfig = (server: string, token = "tok"): string => `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: ${server}
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    token: ${token}
contexts:
- name: ctx
  context:
    cluster: c
    user: u
    namespace: team-a
current-context: ctx
`;

test("--kubeconfig is loaded; a missing file is an error naming the flag and path", (t) => {
  const dir = tempDir(t);
  const path = join(dir, "config");
  writeFileSync(path, kubeconfig("https://10.0.0.1:6443"));
  const config = loadKubeConfig({ kubeconfig: path, env: {} });
  assert.equal(config.server, "https://10.0.0.1:6443");
  assert.throws(
    () => loadKubeConfig({ kubeconfig: join(dir, "nope") }),
    (error: unknown) =>
      error instanceof CsikitError && /-kubeconfig: file .*nope does not exist/.test(error.message),
  );
});

test("--master overrides the server of the loaded config and keeps its credentials", async (t) => {
  const dir = tempDir(t);
  const path = join(dir, "config");
  writeFileSync(path, kubeconfig("https://10.0.0.1:6443", "secret-token"));
  const config = loadKubeConfig({ kubeconfig: path, master: "https://127.0.0.1:9443", env: {} });
  assert.equal(config.server, "https://127.0.0.1:9443");
  assert.equal((await config.auth.credentials()).headers.authorization, "Bearer secret-token");
  assert.equal(config.namespace, "team-a");
  const alone = loadKubeConfig({
    master: "http://127.0.0.1:8080",
    env: {},
    homeDir: dir,
    serviceAccountDir: dir,
  });
  assert.equal(alone.server, "http://127.0.0.1:8080");
});

test("in-cluster service account is used when KUBERNETES_SERVICE_HOST/PORT and the token exist", (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, "token"), "sa-token");
  writeFileSync(join(dir, "ca.crt"), "");
  writeFileSync(join(dir, "namespace"), "kube-system\n");
  const env = { KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "443" };
  const config = loadKubeConfig({ env, serviceAccountDir: dir, homeDir: dir });
  assert.equal(config.server, "https://[fd00::1]:443");
  assert.equal(config.namespace, "kube-system");
  assert.equal(podNamespace({}, dir), "kube-system");
  assert.equal(podNamespace({ POD_NAMESPACE: "mine" }, dir), "mine");
  assert.equal(podNamespace({}, join(dir, "none")), "default");
});

test("falls back to $KUBECONFIG (its existing files), then ~/.kube/config", (t) => {
  const dir = tempDir(t);
  const path = join(dir, "second");
  writeFileSync(path, kubeconfig("https://second:6443"));
  const viaEnv = loadKubeConfig({
    env: { KUBECONFIG: `${join(dir, "first")}:${path}` },
    serviceAccountDir: dir,
  });
  assert.equal(viaEnv.server, "https://second:6443");
  mkdirSync(join(dir, ".kube"));
  writeFileSync(join(dir, ".kube", "config"), kubeconfig("https://home:6443"));
  const viaHome = loadKubeConfig({ env: {}, serviceAccountDir: dir, homeDir: dir });
  assert.equal(viaHome.server, "https://home:6443");
});

test("nothing found: the error lists everything tried", (t) => {
  const dir = tempDir(t);
  assert.throws(
    () => loadKubeConfig({ env: {}, serviceAccountDir: dir, homeDir: dir }),
    (error: unknown) =>
      error instanceof CsikitError &&
      /give -kubeconfig or -master/.test(error.message) &&
      /in-cluster service account \(KUBERNETES_SERVICE_HOST\/PORT unset/.test(error.message) &&
      error.message.includes(join(dir, ".kube", "config")),
  );
});

test("resource paths for core and grouped, namespaced and cluster-scoped resources", () => {
  const config = loadKubeConfig({ master: "https://127.0.0.1:1/", env: {}, homeDir: "/nonexistent" });
  const client = new KubeClient({ kubeConfig: config });
  assert.equal(client.server, "https://127.0.0.1:1");
  const pvc = { group: "", version: "v1", resource: "persistentvolumeclaims" };
  const lease = { group: "coordination.k8s.io", version: "v1", resource: "leases" };
  assert.equal(client.resourcePath(pvc, {}), "/api/v1/persistentvolumeclaims");
  assert.equal(
    client.resourcePath(pvc, { namespace: "ns", name: "c", subresource: "status" }),
    "/api/v1/namespaces/ns/persistentvolumeclaims/c/status",
  );
  assert.equal(
    client.resourcePath(lease, { namespace: "kube-system", name: "x" }),
    "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x",
  );
});
