// The API server tried as a hostile local user or client: private state files, a kubeconfig
// that cannot be hijacked through predictable or symlinked names, regular expressions that
// cannot stall the server, the bearer scheme in any case, and Secret keys that are data.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  chmod,
  chown,
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  rm,
  symlink,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { connect, type ConnectionOptions } from "node:tls";
import { join } from "node:path";
import { writeKubeconfig } from "./transport/kubeconfig.ts";
import { raw, startTestServer, type TestServer } from "../../test/harness/apiserver.ts";

const isRoot = process.getuid?.() === 0;

describe("state directory and files", () => {
  test("a group/world-readable state directory of ours is made 0700; database files are 0600", async (t) => {
    const previous = process.umask(0o022);
    t.after(() => process.umask(previous));
    const dir = await mkdtemp(join(tmpdir(), "csikit-state-"));
    t.after(() => rm(dir, { recursive: true, force: true }));
    await chmod(dir, 0o755);
    const server = await startTestServer({}, dir);
    t.after(() => server.stop());
    // A write makes sure the WAL and shared-memory files exist.
    const created = await raw(server.handle, {
      method: "POST",
      path: "/api/v1/namespaces/default/secrets",
      body: JSON.stringify({ metadata: { name: "s" }, stringData: { password: "x" } }),
    });
    assert.equal(created.status, 201, created.text);
    assert.equal((await lstat(dir)).mode & 0o777, 0o700);
    const files = (await readdir(dir)).filter((name) => name.startsWith("apiserver.db"));
    assert.ok(files.includes("apiserver.db") && files.includes("apiserver.db-wal"), files.join(" "));
    for (const name of [...files, "kubeconfig"]) {
      assert.equal((await lstat(join(dir, name))).mode & 0o777, 0o600, name);
    }
  });

  test("existing database files left readable by others are tightened to 0600", async (t) => {
    const dir = await mkdtemp(join(tmpdir(), "csikit-state-"));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const first = await startTestServer({}, dir);
    await first.stop();
    for (const name of await readdir(dir))
      if (name.startsWith("apiserver.db")) await chmod(join(dir, name), 0o644);
    const second = await startTestServer({}, dir);
    t.after(() => second.stop());
    for (const name of await readdir(dir)) {
      if (name.startsWith("apiserver.db"))
        assert.equal((await lstat(join(dir, name))).mode & 0o777, 0o600, name);
    }
  });

  test("a resumed server tightens pki/ and the state dir's files that were loosened meanwhile", async (t) => {
    const dir = await mkdtemp(join(tmpdir(), "csikit-state-"));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const first = await startTestServer({}, dir);
    await first.stop();
    // As `cp -r` with a loose umask, a restore from a backup or a careless chmod leaves them.
    await chmod(join(dir, "pki"), 0o755);
    const keys = await readdir(join(dir, "pki"));
    assert.ok(
      keys.some((name) => name.endsWith(".key")),
      keys.join(" "),
    );
    for (const name of keys) await chmod(join(dir, "pki", name), 0o644);
    await chmod(join(dir, "kubeconfig"), 0o644);
    const second = await startTestServer({}, dir);
    t.after(() => second.stop());
    assert.equal((await lstat(join(dir, "pki"))).mode & 0o777, 0o700);
    for (const name of keys) assert.equal((await lstat(join(dir, "pki", name))).mode & 0o777, 0o600, name);
    assert.equal((await lstat(join(dir, "kubeconfig"))).mode & 0o777, 0o600);
  });

  test("a group/world-accessible state directory owned by another user is refused, saying why", async (t) => {
    if (!isRoot) {
      t.skip("needs root to give the directory to another user");
      return;
    }
    const parent = await mkdtemp(join(tmpdir(), "csikit-state-"));
    t.after(() => rm(parent, { recursive: true, force: true }));
    const dir = join(parent, "shared");
    await mkdir(dir, { mode: 0o755 });
    await chmod(dir, 0o755);
    await chown(dir, 65534, 65534);
    await assert.rejects(
      startTestServer({}, dir),
      /state directory .*shared is accessible to other users \(mode 0755\) and owned by uid 65534/,
    );
    assert.deepEqual(await readdir(dir), [], "nothing was written there");
  });
});

describe("kubeconfig writing", () => {
  const options = { server: "https://127.0.0.1:1", caCertPem: "ca", token: "secret-token" };

  test("pre-created predictable temp names and a symlink at the target are never written through", async (t) => {
    const dir = await mkdtemp(join(tmpdir(), "csikit-kubeconfig-"));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const out = join(dir, "kubeconfig");
    const victim = join(dir, "victim");
    await writeFile(victim, "victim\n", { mode: 0o644 });
    // What an attacker could pre-create when the temp name is `<out>.tmp-<pid>`.
    await symlink(victim, `${out}.tmp-${process.pid}`);
    await writeFile(`${out}.tmp-${process.pid + 1}`, "attacker\n", { mode: 0o666 });
    await writeKubeconfig(out, options);
    assert.equal(await readFile(victim, "utf8"), "victim\n", "the symlink target is untouched");
    const info = await lstat(out);
    assert.ok(info.isFile());
    assert.equal(info.mode & 0o777, 0o600);
    assert.match(await readFile(out, "utf8"), /token: secret-token/);

    // A symlink at the target itself is replaced, not followed.
    await rm(out);
    await symlink(victim, out);
    await writeKubeconfig(out, options);
    assert.ok((await lstat(out)).isFile());
    assert.equal(await readFile(victim, "utf8"), "victim\n");
    const leftovers = (await readdir(dir)).filter((name) => name.startsWith(".kubeconfig.tmp-"));
    assert.deepEqual(leftovers, [], "no temp file left behind");
  });

  test("the temp file is created 0600 even under a permissive umask", async (t) => {
    const previous = process.umask(0);
    t.after(() => process.umask(previous));
    const dir = await mkdtemp(join(tmpdir(), "csikit-kubeconfig-"));
    t.after(() => rm(dir, { recursive: true, force: true }));
    await writeKubeconfig(join(dir, "config"), options);
    assert.equal((await lstat(join(dir, "config"))).mode & 0o777, 0o600);
  });
});

describe("hostile requests", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.dispose());

  const crd = (pattern: string, rule?: string): string =>
    JSON.stringify({
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: { name: "regexes.example.com" },
      spec: {
        group: "example.com",
        scope: "Namespaced",
        names: { plural: "regexes", singular: "regex", kind: "Regex", listKind: "RegexList" },
        versions: [
          {
            name: "v1",
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: "object",
                properties: {
                  spec: {
                    type: "object",
                    properties: {
                      value: { type: "string", pattern },
                      other: {
                        type: "string",
                        ...(rule ? { "x-kubernetes-validations": [{ rule }] } : {}),
                      },
                    },
                  },
                },
              },
            },
          },
        ],
      },
    });

  test("a CRD pattern that is not RE2 syntax is refused at create (422)", async () => {
    const res = await raw(server.handle, {
      method: "POST",
      path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
      body: crd("(?=lookahead)"),
    });
    assert.equal(res.status, 422, res.text);
    assert.match(
      res.text,
      /spec\.versions\[0\]\.schema\.openAPIV3Schema\.properties\[spec\]\.properties\[value\]\.pattern: Invalid value: .*must be a valid regular expression/,
    );
  });

  test("catastrophic patterns (schema and CEL matches) run in linear time and the server keeps answering", async () => {
    const created = await raw(server.handle, {
      method: "POST",
      path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
      body: crd("^(a+)+$", "self.matches('^(a+)+$')"),
    });
    assert.equal(created.status, 201, created.text);
    // With a backtracking engine either value takes hours; RE2 answers at once.
    const evil = "a".repeat(48) + "!";
    const health = raw(server.handle, { path: "/healthz", token: null });
    const res = await raw(server.handle, {
      method: "POST",
      path: "/apis/example.com/v1/namespaces/default/regexes",
      body: JSON.stringify({
        apiVersion: "example.com/v1",
        kind: "Regex",
        metadata: { name: "r" },
        spec: { value: evil, other: evil },
      }),
    });
    assert.equal(res.status, 422, res.text);
    const message = String(res.json().message);
    assert.match(message, /spec\.value in body should match '\^\(a\+\)\+\$'/);
    assert.match(message, /spec\.other: Invalid value: "string": failed rule: self\.matches/);
    assert.equal((await health).status, 200);
  });

  test('"bearer" is accepted in any case; a malformed header is 401', async () => {
    for (const scheme of ["bearer", "BEARER", "Bearer"]) {
      const res = await raw(server.handle, {
        path: "/api/v1/namespaces",
        token: null,
        headers: { Authorization: `${scheme} ${server.handle.adminToken}` },
      });
      assert.equal(res.status, 200, scheme);
    }
    for (const header of [
      `Bearer  ${server.handle.adminToken}`,
      `Basic ${server.handle.adminToken}`,
      "Bearer",
    ]) {
      const res = await raw(server.handle, {
        path: "/api/v1/namespaces",
        token: null,
        headers: { Authorization: header },
      });
      assert.equal(res.status, 401, header);
    }
  });

  test('a Secret stringData "__proto__" key is stored as data', async () => {
    const res = await raw(server.handle, {
      method: "POST",
      path: "/api/v1/namespaces/default/secrets",
      body: '{"metadata":{"name":"proto"},"stringData":{"__proto__":"p","plain":"q"}}',
    });
    assert.equal(res.status, 201, res.text);
    const read = await raw(server.handle, { path: "/api/v1/namespaces/default/secrets/proto" });
    const data = (JSON.parse(read.text) as { data: Record<string, unknown> }).data;
    assert.equal(
      Object.getOwnPropertyDescriptor(data, "__proto__")?.value,
      Buffer.from("p").toString("base64"),
    );
    assert.equal(data.plain, Buffer.from("q").toString("base64"));
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });
});

describe("CEL rules on a real server", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.dispose());

  const crd = (rule: string): string =>
    JSON.stringify({
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: { name: "pools.example.com" },
      spec: {
        group: "example.com",
        scope: "Namespaced",
        names: { plural: "pools", singular: "pool", kind: "Pool", listKind: "PoolList" },
        versions: [
          {
            name: "v1",
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: "object",
                properties: {
                  spec: {
                    type: "object",
                    "x-kubernetes-validations": [{ rule, message: "every disk needs a size" }],
                    properties: {
                      disks: {
                        type: "array",
                        items: {
                          type: "object",
                          properties: { name: { type: "string" }, size: { type: "integer" } },
                        },
                      },
                    },
                  },
                },
              },
            },
          },
        ],
      },
    });

  test("a CRD whose rule does not compile is refused at create (422)", async () => {
    const res = await raw(server.handle, {
      method: "POST",
      path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
      body: crd("self.disks.all(d, frobnicate(d))"),
    });
    assert.equal(res.status, 422, res.text);
    assert.match(
      String(res.json().message),
      /spec\.versions\[0\]\.schema\.openAPIV3Schema\.properties\[spec\]\.x-kubernetes-validations\[0\]\.rule: Invalid value: .*compilation failed: .*frobnicate/,
    );
  });

  test("a macro rule (all) is enforced: 422 for an object that breaks it, 201 otherwise", async () => {
    const created = await raw(server.handle, {
      method: "POST",
      path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
      body: crd("self.disks.all(d, has(d.size) && d.size > 0)"),
    });
    assert.equal(created.status, 201, created.text);
    const post = (name: string, disks: unknown[]) =>
      raw(server.handle, {
        method: "POST",
        path: "/apis/example.com/v1/namespaces/default/pools",
        body: JSON.stringify({
          apiVersion: "example.com/v1",
          kind: "Pool",
          metadata: { name },
          spec: { disks },
        }),
      });
    const bad = await post("bad", [{ name: "a", size: 1 }, { name: "b" }]);
    assert.equal(bad.status, 422, bad.text);
    assert.match(String(bad.json().message), /spec: Invalid value: "object": every disk needs a size/);
    const good = await post("good", [{ name: "a", size: 1 }]);
    assert.equal(good.status, 201, good.text);
  });
});

test("TLS: a Node client with OpenSSL's defaults gets AES-128-GCM (Go's first choice) on TLS 1.3; TLS 1.2 still works", async (t) => {
  const server = await startTestServer();
  t.after(() => server.dispose());
  const { port, caCertPem: ca } = server.handle;
  const negotiate = (options: ConnectionOptions) =>
    new Promise<{ version: string | null; cipher: string }>((resolve, reject) => {
      const socket = connect({ host: "127.0.0.1", port, ca, servername: "localhost", ...options }, () => {
        resolve({ version: socket.getProtocol(), cipher: socket.getCipher().standardName });
        socket.destroy();
      });
      socket.once("error", reject);
    });
  assert.deepEqual(await negotiate({}), { version: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256" });
  const tls12 = await negotiate({ maxVersion: "TLSv1.2" });
  assert.equal(tls12.version, "TLSv1.2");
  assert.match(tls12.cipher, /^TLS_ECDHE_/);
});
