import { test } from "node:test";
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadOrCreateCredentials } from "./pki.ts";
import { raw, startTestServer } from "../../../test/harness/apiserver.ts";

test("credentials: generated once, reused, serving cert reissued by the same CA for a new address", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "csikit-pki-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const now = Date.now();
  const first = await loadOrCreateCredentials(dir, { now });
  const ca = new X509Certificate(first.caCertPem);
  const serving = new X509Certificate(first.serverCertPem);
  assert.ok(serving.verify(ca.publicKey), "signed by the CA");
  assert.equal(serving.checkHost("localhost"), "localhost");
  assert.equal(serving.checkIP("127.0.0.1"), "127.0.0.1");
  assert.equal(serving.checkIP("::1"), "::1");
  assert.equal(serving.checkIP("10.1.2.3"), undefined);
  for (const file of ["ca.key", "apiserver.key", "admin.token"]) {
    assert.equal((await stat(join(dir, file))).mode & 0o077, 0, `${file} is private`);
  }
  assert.deepEqual(await loadOrCreateCredentials(dir, { now }), first, "reused as is");
  const widened = await loadOrCreateCredentials(dir, { now, extraIPs: ["10.1.2.3", "0.0.0.0x"] });
  assert.equal(widened.caCertPem, first.caCertPem, "same CA");
  assert.equal(widened.adminToken, first.adminToken, "same token");
  const reissued = new X509Certificate(widened.serverCertPem);
  assert.equal(reissued.checkIP("10.1.2.3"), "10.1.2.3");
  assert.ok(reissued.verify(ca.publicKey));
  assert.deepEqual(await loadOrCreateCredentials(dir, { now, extraIPs: ["10.1.2.3"] }), widened);
});

test("a server asked to listen on another address serves a certificate naming it", async (t) => {
  const server = await startTestServer({ bindAddress: "127.0.0.2" });
  t.after(() => server.dispose());
  assert.match(server.handle.url, /^https:\/\/127\.0\.0\.2:\d+$/);
  const res = await raw(server.handle, { path: "/api/v1/namespaces/default" });
  assert.equal(res.status, 200, "TLS verified against the CA with the address as SAN");
});
