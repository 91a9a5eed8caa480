// Secret type rules and data size limits as upstream's ValidateSecret / ValidateConfigMap:
// registry payloads must be JSON objects (Go's own error quoted, the payload redacted), the
// required keys of each type, and sizes counted in bytes of the decoded data.

import { test } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../rest/resource.ts";
import { configMaps, secrets } from "./config.ts";

function secret(type: string, stringData: Record<string, string>): KubeObject {
  const object: KubeObject = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "s", namespace: "default" },
    type,
    stringData,
  };
  secrets.applyDefaults(object);
  return object;
}

function errors(object: KubeObject, def = secrets): string[] {
  return def.validateCreate(object).map((cause) => `${cause.field}: ${cause.message}`);
}

test("a dockerconfigjson or dockercfg payload must be a JSON object", () => {
  assert.deepEqual(
    errors(secret("kubernetes.io/dockerconfigjson", { ".dockerconfigjson": '{"auths":{}}' })),
    [],
  );
  assert.deepEqual(errors(secret("kubernetes.io/dockerconfigjson", { ".dockerconfigjson": "not json" })), [
    `data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": invalid character 'o' in literal null (expecting 'u')`,
  ]);
  assert.deepEqual(errors(secret("kubernetes.io/dockercfg", { ".dockercfg": '["a"]' })), [
    `data[.dockercfg]: Invalid value: "<secret contents redacted>": json: cannot unmarshal array into Go value of type map[string]interface {}`,
  ]);
  assert.deepEqual(errors(secret("kubernetes.io/dockercfg", {})), ["data[.dockercfg]: Required value"]);
  const leaked = errors(
    secret("kubernetes.io/dockerconfigjson", { ".dockerconfigjson": '{"auth":"s3cr3t"' }),
  );
  assert.equal(leaked.length, 1);
  assert.ok(!leaked[0]!.includes("s3cr3t"));
});

test("basic-auth, ssh-auth and tls need their keys", () => {
  assert.deepEqual(errors(secret("kubernetes.io/basic-auth", {})), [
    "data[username]: Required value",
    "data[password]: Required value",
  ]);
  assert.deepEqual(errors(secret("kubernetes.io/basic-auth", { password: "" })), []);
  assert.deepEqual(errors(secret("kubernetes.io/ssh-auth", { "ssh-privatekey": "" })), [
    "data[ssh-privatekey]: Required value",
  ]);
  assert.deepEqual(errors(secret("kubernetes.io/tls", { "tls.crt": "c", "tls.key": "" })), []);
});

test("data size is counted in decoded bytes, as upstream counts it", () => {
  // 900 KiB of data is 1.2 MB of base64: under the 1 MiB limit.
  const big = "x".repeat(900 * 1024);
  assert.deepEqual(errors(secret("Opaque", { big })), []);
  assert.deepEqual(errors(secret("Opaque", { big: "x".repeat(1024 * 1024 + 1) })), [
    "data: Too long: may not be more than 1048576 bytes",
  ]);
  // A ConfigMap's text counts in UTF-8 bytes: 600 Ki two-byte characters are over the limit.
  const configMap: KubeObject = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "c", namespace: "default" },
    data: { text: "é".repeat(600 * 1024) },
  };
  assert.equal(errors(configMap, configMaps).length, 1);
});
