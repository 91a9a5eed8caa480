// Requests kube-apiserver refuses and csikit once accepted: a JSON body that repeats a key under
// fieldValidation=Strict (named with the unknown fields in one strict decoding error, a warning
// under Warn), and a GET whose resourceVersion is no number.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { raw, startTestServer, type TestServer } from "../../../test/harness/apiserver.ts";

describe("strict requests", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.dispose());

  const configMapJson = (name: string): string =>
    `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"${name}","name":"${name}"},` +
    `"data":{"k":"1","k":"2"},"bogus":true}`;

  test("duplicate JSON keys fail fieldValidation=Strict with kube-apiserver's message", async () => {
    const response = await raw(server.handle, {
      method: "POST",
      path: "/api/v1/namespaces/default/configmaps?fieldValidation=Strict",
      body: configMapJson("dup"),
      headers: { "content-type": "application/json" },
    });
    assert.equal(response.status, 400, response.text);
    assert.equal(
      response.json().message,
      'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "metadata.name", duplicate field "data.k", unknown field "bogus"',
    );
  });

  test("under Warn they are warnings, and the last value wins as in Go", async () => {
    const response = await raw(server.handle, {
      method: "POST",
      path: "/api/v1/namespaces/default/configmaps?fieldValidation=Warn",
      body: configMapJson("dup-warn"),
      headers: { "content-type": "application/json" },
    });
    assert.equal(response.status, 201, response.text);
    const warnings = String(response.headers["warning"]);
    assert.match(warnings, /duplicate field \\"metadata\.name\\"/);
    assert.match(warnings, /duplicate field \\"data\.k\\"/);
    assert.deepEqual(response.json()["data"], { k: "2" });
  });

  test("an update under Strict is refused the same way", async () => {
    const response = await raw(server.handle, {
      method: "PUT",
      path: "/api/v1/namespaces/default/configmaps/dup-warn?fieldValidation=Strict",
      body: '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup-warn"},"data":{"k":"1","k":"3"}}',
      headers: { "content-type": "application/json" },
    });
    assert.equal(response.status, 400, response.text);
    assert.match(String(response.json().message), /strict decoding error: duplicate field "data\.k"$/);
  });

  test("GET with a resourceVersion that is no number is 400 with the storage layer's words", async () => {
    for (const path of [
      "/api/v1/namespaces/default/configmaps/dup-warn?resourceVersion=abc",
      "/api/v1/namespaces/default/configmaps?resourceVersion=abc",
    ]) {
      const response = await raw(server.handle, { path });
      assert.equal(response.status, 400, `${path}: ${response.text}`);
      assert.equal(
        response.json().message,
        'invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax',
      );
    }
    const tooBig = await raw(server.handle, {
      path: "/api/v1/namespaces/default/configmaps/dup-warn?resourceVersion=99999999999999999999",
    });
    assert.equal(tooBig.status, 400);
    assert.match(String(tooBig.json().message), /parsing "99999999999999999999": value out of range$/);
    const future = await raw(server.handle, {
      path: "/api/v1/namespaces/default/configmaps/dup-warn?resourceVersion=999999",
    });
    assert.equal(future.status, 504, future.text);
    const any = await raw(server.handle, {
      path: "/api/v1/namespaces/default/configmaps/dup-warn?resourceVersion=0",
    });
    assert.equal(any.status, 200, any.text);
  });
});
