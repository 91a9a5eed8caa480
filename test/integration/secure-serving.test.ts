// The secure port as kube-controller-manager and the kubelet serve it, against the real API
// server with RBAC: TLS with a self-signed certificate, /healthz open to anyone, /metrics only to
// a token the API server's TokenReview knows and whose user SubjectAccessReview allows
// (non-resource path for the controller manager, nodes/metrics for the kubelet); unknown token
// 401, known but not allowed 403, no token 403 (anonymous).

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { silentLogger } from "../../src/base/index.ts";
import { startApiServer } from "../../src/apiserver/index.ts";
import { GVR } from "../../src/api/index.ts";
import {
  Counter,
  KubeClient,
  Registry,
  kubeletAttributes,
  loadKubeConfig,
  nonResourceAttributes,
  startSecureServing,
} from "../../src/kube/index.ts";
import { requestServiceAccountToken } from "../../src/cluster/identities.ts";
import { scrape } from "../harness/https-get.ts";
import { freePort } from "../../src/cluster/ports.ts";

test("a secure port serves /metrics to allowed tokens only, with kube-controller-manager's and the kubelet's attributes", async (t) => {
  const stateDir = await mkdtemp(join(tmpdir(), "csikit-secure-"));
  const stop = new AbortController();
  t.after(async () => {
    stop.abort();
    await rm(stateDir, { recursive: true, force: true });
  });
  const server = await startApiServer(
    { stateDir, port: 0, logger: silentLogger, authorizationMode: "RBAC" },
    stop.signal,
  );
  t.after(() => server.stopped);
  const admin = new KubeClient({ kubeConfig: loadKubeConfig({ kubeconfig: server.kubeconfigPath }) });
  t.after(() => admin.close());

  // The component's own identity: allowed to create the reviews, nothing else.
  const rbac = "rbac.authorization.k8s.io/v1";
  const account = (name: string) =>
    admin.create(GVR.serviceAccounts, { metadata: { name, namespace: "default" } });
  await account("component");
  await account("scraper");
  await account("stranger");
  const bind = async (name: string, rules: unknown[]) => {
    await admin.create(GVR.clusterRoles, {
      apiVersion: rbac,
      kind: "ClusterRole",
      metadata: { name },
      rules,
    });
    await admin.create(GVR.clusterRoleBindings, {
      apiVersion: rbac,
      kind: "ClusterRoleBinding",
      metadata: { name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
      subjects: [{ kind: "ServiceAccount", name, namespace: "default" }],
    });
  };
  await bind("component", [
    { apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"] },
    { apiGroups: ["authorization.k8s.io"], resources: ["subjectaccessreviews"], verbs: ["create"] },
  ]);
  await bind("scraper", [
    { nonResourceURLs: ["/metrics"], verbs: ["get"] },
    { apiGroups: [""], resources: ["nodes/metrics"], verbs: ["get"] },
  ]);
  const tokens = {
    component: await requestServiceAccountToken(admin, "default", "component"),
    scraper: await requestServiceAccountToken(admin, "default", "scraper"),
    stranger: await requestServiceAccountToken(admin, "default", "stranger"),
  };
  // The component's kubeconfig: the admin's server and CA, the component's own token.
  const adminConfig = await readFile(server.kubeconfigPath, "utf8");
  const componentKubeconfig = join(stateDir, "component.kubeconfig");
  await writeFile(componentKubeconfig, adminConfig.replace(/token: .*/, `token: ${tokens.component}`), {
    mode: 0o600,
  });
  const componentClient = new KubeClient({ kubeConfig: loadKubeConfig({ kubeconfig: componentKubeconfig }) });
  t.after(() => componentClient.close());

  const registry = new Registry();
  new Counter({ name: "csikit_test_total", help: "a metric to find", registers: [registry] }).inc();
  const cases = [
    {
      name: "kube-controller-manager",
      attributes: nonResourceAttributes,
      stranger: 'cannot get path "/metrics"',
    },
    { name: "kubelet", attributes: kubeletAttributes("node-1"), stranger: 'subresource "metrics"' },
  ];
  for (const { name, attributes, stranger } of cases) {
    const endpoint = await startSecureServing(
      {
        bindAddress: "127.0.0.1",
        port: await freePort(),
        certFile: "",
        keyFile: "",
        alwaysAllowPaths: ["/healthz"],
        auth: { client: componentClient, attributes },
        registry,
        healthChecks: { ping: () => undefined },
        host: name,
        logger: silentLogger,
      },
      stop.signal,
    );
    assert.ok(endpoint, name);
    assert.match(endpoint.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const metrics = `${endpoint.url}/metrics`;
    const allowed = await scrape(metrics, tokens.scraper);
    assert.equal(allowed.status, 200, `${name}: ${allowed.body}`);
    assert.match(allowed.body, /^csikit_test_total 1$/m);
    const refused = await scrape(metrics, tokens.stranger);
    assert.equal(refused.status, 403, `${name}: ${refused.body}`);
    assert.match(refused.body, /system:serviceaccount:default:stranger/);
    assert.ok(refused.body.includes(stranger), refused.body);
    assert.equal((await scrape(metrics, "no-such-token")).status, 401);
    const anonymous = await scrape(metrics, undefined);
    assert.equal(anonymous.status, 403);
    assert.match(anonymous.body, /system:anonymous/);
    assert.equal((await scrape(`${endpoint.url}/healthz`, undefined)).status, 200);
  }
});

test("a secure port refuses a certificate without its key, naming both flags", async () => {
  await assert.rejects(
    startSecureServing(
      {
        bindAddress: "127.0.0.1",
        port: await freePort(),
        certFile: "/nonexistent.crt",
        keyFile: "",
        alwaysAllowPaths: [],
        registry: new Registry(),
        host: "x",
        logger: silentLogger,
      },
      AbortSignal.abort(),
    ),
    /--tls-cert-file and --tls-private-key-file must be given together/,
  );
});

test("TokenReview answers who a token is, never echoing the token", async (t) => {
  const stateDir = await mkdtemp(join(tmpdir(), "csikit-tokenreview-"));
  const stop = new AbortController();
  t.after(async () => {
    stop.abort();
    await rm(stateDir, { recursive: true, force: true });
  });
  const server = await startApiServer({ stateDir, port: 0, logger: silentLogger }, stop.signal);
  t.after(() => server.stopped);
  const admin = new KubeClient({ kubeConfig: loadKubeConfig({ kubeconfig: server.kubeconfigPath }) });
  t.after(() => admin.close());
  const token = /token: (.*)/.exec(await readFile(server.kubeconfigPath, "utf8"))![1]!.trim();
  const reviews = {
    group: "authentication.k8s.io",
    version: "v1",
    resource: "tokenreviews",
    namespaced: false,
  };
  const known = (await admin.create(reviews, {
    apiVersion: "authentication.k8s.io/v1",
    kind: "TokenReview",
    metadata: {},
    spec: { token },
  } as never)) as {
    spec?: { token?: string };
    status?: { authenticated?: boolean; user?: { username?: string; groups?: string[] } };
  };
  assert.equal(known.status?.authenticated, true);
  assert.equal(known.status?.user?.username, "csikit-admin");
  assert.ok(known.status?.user?.groups?.includes("system:masters"));
  assert.equal(known.spec?.token, undefined);
  assert.ok(!JSON.stringify(known).includes(token));
  const unknown = (await admin.create(reviews, {
    apiVersion: "authentication.k8s.io/v1",
    kind: "TokenReview",
    metadata: {},
    spec: { token: "not-a-token" },
  } as never)) as { status?: { authenticated?: boolean } };
  assert.equal(unknown.status?.authenticated, false);
});
