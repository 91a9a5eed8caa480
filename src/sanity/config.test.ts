// Tests of the sanity run's configuration loaders: byte quantities, csi-test secrets files,
// CreateVolume parameter files.

import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { loadParametersFile, loadSecretsFile, parseByteQuantity } from "./config.ts";

test("parseByteQuantity reads plain bytes and Kubernetes quantities", () => {
  assert.equal(parseByteQuantity("10485760", "size"), 10 * 1024 * 1024);
  assert.equal(parseByteQuantity("10Mi", "size"), 10 * 1024 * 1024);
  assert.equal(parseByteQuantity("1Gi", "size"), 2 ** 30);
  assert.equal(parseByteQuantity("1.5Ki", "size"), 1536);
  assert.equal(parseByteQuantity("100M", "size"), 100_000_000);
  assert.throws(
    () => parseByteQuantity("ten", "--test-volume-size"),
    /--test-volume-size: "ten" is not a byte quantity/,
  );
  assert.throws(() => parseByteQuantity("0", "--test-volume-size"), /out of range/);
  assert.throws(() => parseByteQuantity("-1Mi", "--test-volume-size"), /not a byte quantity/);
});

test("loadSecretsFile reads csi-test's format, rejects unknown keys, never quotes values", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "csikit-sanity-config-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const good = join(dir, "secrets.yaml");
  await writeFile(
    good,
    "CreateVolumeSecret:\n  username: bob\n  pin: 1234\nNodeStageVolumeSecret: {password: hunter2}\n",
  );
  assert.deepEqual(await loadSecretsFile(good), {
    CreateVolumeSecret: { username: "bob", pin: "1234" },
    NodeStageVolumeSecret: { password: "hunter2" },
  });
  const json = join(dir, "secrets.json");
  await writeFile(json, JSON.stringify({ DeleteVolumeSecret: { token: "abc" } }));
  assert.deepEqual(await loadSecretsFile(json), { DeleteVolumeSecret: { token: "abc" } });
  const unknown = join(dir, "unknown.yaml");
  await writeFile(unknown, "CreateVolumeSecrets:\n  password: s3cr3t-value\n");
  await assert.rejects(loadSecretsFile(unknown), (error: Error) => {
    assert.match(error.message, /unknown key "CreateVolumeSecrets"/);
    assert.doesNotMatch(error.message, /s3cr3t-value/);
    return true;
  });
  const broken = join(dir, "broken.yaml");
  await writeFile(broken, "CreateVolumeSecret: {password: 's3cr3t-value\n");
  await assert.rejects(loadSecretsFile(broken), (error: Error) => {
    assert.match(error.message, /not valid YAML or JSON/);
    assert.doesNotMatch(error.message, /s3cr3t-value/);
    return true;
  });
  await assert.rejects(
    loadSecretsFile(join(dir, "missing.yaml")),
    /secrets file .*missing\.yaml: cannot read/,
  );
});

test("loadParametersFile turns scalars into strings and rejects nested values", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "csikit-sanity-config-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const good = join(dir, "params.yaml");
  await writeFile(good, "kind: fast\nreplicas: 3\nencrypted: true\n");
  assert.deepEqual(await loadParametersFile(good), { kind: "fast", replicas: "3", encrypted: "true" });
  const nested = join(dir, "nested.yaml");
  await writeFile(nested, "pool:\n  name: a\n");
  await assert.rejects(loadParametersFile(nested), /value of "pool" is not a string/);
});
