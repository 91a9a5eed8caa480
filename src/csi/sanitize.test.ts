import assert from "node:assert/strict";
import { test } from "node:test";
import { sanitizeRequest } from "./index.ts";

const SECRET = "s3cr3t-password";

test("CreateVolumeRequest: the secrets map is replaced whole, as upstream; other fields survive", () => {
  const request = {
    name: "pvc-1",
    capacityRange: { requiredBytes: "1048576", limitBytes: "0" },
    volumeCapabilities: [
      { mount: { fsType: "ext4", mountFlags: [] }, accessMode: { mode: "SINGLE_NODE_WRITER" } },
    ],
    parameters: { type: "fast" },
    secrets: { password: SECRET, user: "admin" },
    mutableParameters: {},
  };
  const sanitized = sanitizeRequest("csi.v1.CreateVolumeRequest", request);
  assert.deepEqual(sanitized, {
    ...request,
    secrets: "***stripped***",
  });
  assert.equal(request.secrets.password, SECRET, "the input is not modified");
  assert.notEqual((sanitized as { parameters: unknown }).parameters, request.parameters, "a deep copy");
});

test("NodeStage, NodePublish, ControllerPublish and CreateSnapshot secrets are stripped", () => {
  for (const type of [
    "csi.v1.NodeStageVolumeRequest",
    "csi.v1.NodePublishVolumeRequest",
    "csi.v1.ControllerPublishVolumeRequest",
    "csi.v1.CreateSnapshotRequest",
    "csi.v1.NodeExpandVolumeRequest",
    "csi.v1.CreateVolumeGroupSnapshotRequest",
    "csi.v1.GetMetadataDeltaRequest",
  ]) {
    const request = { volumeId: "vol-1", volumeContext: { a: "b" }, secrets: { key: SECRET } };
    const sanitized = sanitizeRequest(type, request);
    assert.ok(!JSON.stringify(sanitized).includes(SECRET), type);
    assert.deepEqual(sanitized, {
      volumeId: "vol-1",
      volumeContext: { a: "b" },
      secrets: "***stripped***",
    });
  }
});

test("types without secrets are copied unchanged; empty secrets stay empty", () => {
  const volume = {
    volumeId: "v",
    capacityBytes: "9223372036854775807",
    volumeContext: { secrets: "not-a-secret-field" },
  };
  assert.deepEqual(sanitizeRequest("csi.v1.Volume", volume), volume);
  assert.deepEqual(sanitizeRequest("csi.v1.DeleteVolumeRequest", { volumeId: "v", secrets: {} }), {
    volumeId: "v",
    secrets: {},
  });
  assert.equal(sanitizeRequest("csi.v1.ProbeRequest", undefined), undefined);
});

test("the ServiceAccount tokens the kubelet puts into volume_context are stripped; other entries stay", () => {
  const request = {
    volumeId: "v",
    targetPath: "/t",
    volumeContext: {
      "csi.storage.k8s.io/pod.name": "app",
      "csi.storage.k8s.io/serviceAccount.tokens": '{"":{"token":"eyJsecret","expirationTimestamp":"x"}}',
    },
  };
  const sanitized = sanitizeRequest("csi.v1.NodePublishVolumeRequest", request) as typeof request;
  assert.deepEqual(sanitized.volumeContext, {
    "csi.storage.k8s.io/pod.name": "app",
    "csi.storage.k8s.io/serviceAccount.tokens": "***stripped***",
  });
  assert.ok(!JSON.stringify(sanitized).includes("eyJsecret"));
  assert.equal(request.volumeContext["csi.storage.k8s.io/serviceAccount.tokens"].includes("eyJsecret"), true);
});
