// Byte compatibility with upstream's protobuf encoder and decoder, using the machine's real
// kubectl (client-go inside): kubectl's typed clients send protobuf bodies for the kinds it
// creates and accept protobuf answers. A recording HTTP proxy in front of the server captures
// the bodies both ways; each captured request must decode to the object the server stored and
// re-encode byte for byte, and kubectl must succeed on our protobuf answers. `kubectl events
// --watch` reads a protobuf watch stream with client-go's own framer and decoder.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import { request as httpsRequest } from "node:https";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { raw, startTestServer, type TestServer } from "../../../test/harness/apiserver.ts";
import { decodeEnvelope, decodeProtobufObject, protobufType } from "./protobuf.ts";
import { kubectl } from "../../../test/harness/kubectl.ts";
import { until } from "../../../test/harness/until.ts";

const PB = "application/vnd.kubernetes.protobuf";

interface Exchange {
  method: string;
  path: string;
  contentType: string;
  accept: string;
  body: Buffer;
  status: number;
  responseType: string;
  response: Buffer;
}

let server: TestServer;
let proxy: Server;
let dir: string;
let kubeconfig: string;
const exchanges: Exchange[] = [];

before(async () => {
  server = await startTestServer();
  dir = await mkdtemp(join(tmpdir(), "csikit-pb-kubectl-"));
  proxy = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      // The proxy authenticates (kubectl keeps its token for TLS servers).
      const headers = {
        ...req.headers,
        host: new URL(server.handle.url).host,
        authorization: `Bearer ${server.handle.adminToken}`,
      };
      const upstream = httpsRequest(
        `${server.handle.url}${req.url ?? "/"}`,
        { method: req.method, headers, ca: server.handle.caCertPem },
        (answer) => {
          const parts: Buffer[] = [];
          answer.on("data", (chunk: Buffer) => parts.push(chunk));
          answer.on("end", () => {
            const response = Buffer.concat(parts);
            exchanges.push({
              method: req.method ?? "",
              path: req.url ?? "",
              contentType: String(req.headers["content-type"] ?? ""),
              accept: String(req.headers.accept ?? ""),
              body,
              status: answer.statusCode ?? 0,
              responseType: String(answer.headers["content-type"] ?? ""),
              response,
            });
            const { "transfer-encoding": _te, "content-length": _cl, ...rest } = answer.headers;
            res.writeHead(answer.statusCode ?? 502, { ...rest, "content-length": response.length });
            res.end(response);
          });
        },
      );
      upstream.on("error", () => res.destroy());
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const address = proxy.address();
  const port = typeof address === "object" && address ? address.port : 0;
  kubeconfig = join(dir, "kubeconfig");
  await writeFile(
    kubeconfig,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "c", cluster: { server: `http://127.0.0.1:${port}` } }],
      users: [{ name: "u", user: {} }],
      contexts: [{ name: "x", context: { cluster: "c", user: "u", namespace: "default" } }],
      "current-context": "x",
    }),
  );
});

after(async () => {
  await new Promise<void>((resolve) => (proxy ? proxy.close(() => resolve()) : resolve()));
  await server?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test("kubectl's protobuf bodies decode to what is stored; our protobuf answers satisfy kubectl", async () => {
  const commands = [
    ["create", "namespace", "kp"],
    ["-n", "kp", "create", "configmap", "cm", "--from-literal=a=b"],
    ["-n", "kp", "create", "secret", "generic", "s", "--from-literal=p=q"],
    ["-n", "kp", "create", "serviceaccount", "sa"],
    ["-n", "kp", "create", "role", "r", "--verb=get,list", "--resource=pods,persistentvolumeclaims"],
    ["create", "clusterrole", "cr", "--verb=get", "--resource=persistentvolumes", "--resource-name=pv1"],
    ["-n", "kp", "create", "rolebinding", "rb", "--role=r", "--serviceaccount=kp:sa"],
    ["create", "clusterrolebinding", "crb", "--clusterrole=cr", "--user=alice", "--group=team"],
    ["-n", "kp", "create", "token", "sa", "--audience=csi", "--duration=10m"],
    ["auth", "can-i", "list", "persistentvolumes"],
    ["auth", "whoami"],
  ];
  for (const args of commands) {
    const result = await kubectl(args, { kubeconfig });
    assert.equal(result.code, 0, `kubectl ${args.join(" ")}: ${result.stderr}`);
  }
  const sent = exchanges.filter((e) => e.contentType === PB);
  const kinds = sent.map((e) => decodeEnvelope(e.body).kind);
  for (const kind of [
    "Namespace",
    "ConfigMap",
    "Secret",
    "ServiceAccount",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "TokenRequest",
    "SelfSubjectAccessReview",
    "SelfSubjectReview",
  ]) {
    assert.ok(kinds.includes(kind), `kubectl sent a protobuf ${kind} (sent: ${kinds.join(", ")})`);
  }
  for (const exchange of sent) {
    const envelope = decodeEnvelope(exchange.body);
    const type = protobufType(envelope.apiVersion, envelope.kind)!;
    // Upstream's encoder and ours agree on every field number and wire type.
    assert.equal(
      Buffer.from(type.encode(type.decode(envelope.raw)).finish()).toString("hex"),
      Buffer.from(envelope.raw).toString("hex"),
      `${envelope.kind} re-encodes byte for byte`,
    );
    // kubectl asked for protobuf and got it (and then succeeded, so it decoded it).
    assert.match(exchange.accept, /application\/vnd\.kubernetes\.protobuf/);
    assert.equal(exchange.responseType, PB, `${exchange.method} ${exchange.path}`);
    const answer = decodeProtobufObject(exchange.response)!;
    assert.equal(answer.kind, envelope.kind === "TokenRequest" ? "TokenRequest" : envelope.kind);
  }
  // Stored objects are what kubectl's bodies say.
  const decodedRole = decodeProtobufObject(sent.find((e) => decodeEnvelope(e.body).kind === "Role")!.body)!;
  assert.deepEqual(decodedRole.rules, [
    { verbs: ["get", "list"], apiGroups: [""], resources: ["pods", "persistentvolumeclaims"] },
  ]);
  const stored = await raw(server.handle, {
    path: "/apis/rbac.authorization.k8s.io/v1/namespaces/kp/roles/r",
  });
  assert.deepEqual(stored.json().rules, decodedRole.rules);
  const secret = await raw(server.handle, { path: "/api/v1/namespaces/kp/secrets/s" });
  assert.equal(
    Buffer.from(String((secret.json().data as Record<string, string>).p), "base64").toString(),
    "q",
  );
  const crb = decodeProtobufObject(
    sent.find((e) => decodeEnvelope(e.body).kind === "ClusterRoleBinding")!.body,
  )!;
  assert.deepEqual(crb.subjects, [
    { kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "alice" },
    { kind: "Group", apiGroup: "rbac.authorization.k8s.io", name: "team" },
  ]);
});

test("kubectl delete and get -o yaml through protobuf-speaking paths", async () => {
  const deleted = await kubectl(["-n", "kp", "delete", "configmap", "cm"], { kubeconfig });
  assert.equal(deleted.code, 0, deleted.stderr);
  const yaml = await kubectl(["-n", "kp", "get", "secret", "s", "-o", "yaml"], { kubeconfig });
  assert.equal(yaml.code, 0, yaml.stderr);
  assert.match(yaml.stdout, /kind: Secret/);
});

test("kubectl events --watch prints events from a protobuf watch stream (client-go's decoder)", async (t) => {
  const post = async (path: string, object: Record<string, unknown>): Promise<void> => {
    const created = await raw(server.handle, { method: "POST", path, body: JSON.stringify(object) });
    assert.equal(created.status, 201, created.text);
  };
  const event = (name: string, message: string): Record<string, unknown> => ({
    apiVersion: "v1",
    kind: "Event",
    metadata: { name, namespace: "kw" },
    involvedObject: { kind: "Pod", name: "p1", namespace: "kw" },
    reason: "Testing",
    message,
    type: "Normal",
    firstTimestamp: "2026-11-27T15:00:00Z",
    lastTimestamp: "2026-11-27T15:00:00Z",
  });
  await post("/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: "kw" } });
  await post("/api/v1/namespaces/kw/events", event("e1", "present-before-the-watch"));
  // The server's own kubeconfig: the recording proxy above buffers whole answers, not streams.
  const child = spawn(
    "kubectl",
    [
      "--kubeconfig",
      server.handle.kubeconfigPath,
      "--cache-dir",
      join(dir, "events-cache"),
      "-n",
      "kw",
      "events",
      "--watch",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  t.after(() => child.kill("SIGKILL"));
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const printed = (text: string) => () =>
    stdout.includes(text) || (child.exitCode !== null && `exited: ${stderr}`);
  assert.equal(
    await until(printed("present-before-the-watch"), "the initial event", { timeoutMs: 20_000 }),
    true,
    stderr,
  );
  await post("/api/v1/namespaces/kw/events", event("e2", "written-during-the-watch"));
  assert.equal(
    await until(printed("written-during-the-watch"), "the live event", { timeoutMs: 20_000 }),
    true,
    stderr,
  );
  assert.doesNotMatch(stderr, /unable to decode|illegal wireType/);
});
