import { test } from "node:test";
import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { CSI_OPERATIONS_BUCKETS, CsiOperationMetrics, grpcCodeName } from "./metrics.ts";

test("gRPC codes print with Go's names", () => {
  assert.equal(grpcCodeName(0), "OK");
  assert.equal(grpcCodeName(4), "DeadlineExceeded");
  assert.equal(grpcCodeName(16), "Unauthenticated");
  assert.equal(grpcCodeName(99), "Code(99)");
  assert.equal(grpcCodeName("Aborted"), "Aborted");
});

test("histogram has upstream name, labels and buckets; driver name is unknown-driver until set", async () => {
  const registry = new Registry();
  const metrics = new CsiOperationMetrics({ registry });
  const observe = metrics.observer();
  observe("/csi.v1.Identity/GetPluginInfo", 0, 0.2);
  metrics.setDriverName("hostpath.csi.k8s.io");
  observe("/csi.v1.Controller/CreateVolume", 4, 12);
  const text = await registry.metrics();
  assert.match(text, /# TYPE csi_sidecar_operations_seconds histogram/);
  assert.match(
    text,
    /csi_sidecar_operations_seconds_bucket\{le="0.25",driver_name="unknown-driver",method_name="\/csi.v1.Identity\/GetPluginInfo",grpc_status_code="OK"\} 1/,
  );
  assert.match(
    text,
    /csi_sidecar_operations_seconds_bucket\{le="10",driver_name="hostpath.csi.k8s.io",method_name="\/csi.v1.Controller\/CreateVolume",grpc_status_code="DeadlineExceeded"\} 0/,
  );
  assert.match(
    text,
    /csi_sidecar_operations_seconds_bucket\{le="15",driver_name="hostpath.csi.k8s.io",method_name="\/csi.v1.Controller\/CreateVolume",grpc_status_code="DeadlineExceeded"\} 1/,
  );
  const les = [...text.matchAll(/_bucket\{le="([^"]+)",driver_name="unknown-driver"/g)].map((m) => m[1]);
  assert.deepEqual(les, [...CSI_OPERATIONS_BUCKETS.map(String), "+Inf"]);
});

test("the migrated label is there only when asked for", async () => {
  const registry = new Registry();
  const metrics = new CsiOperationMetrics({ registry, migratedLabel: true });
  metrics.observeCsiCall("/csi.v1.Controller/DeleteVolume", 0, 1, true);
  assert.match(await registry.metrics(), /grpc_status_code="OK",migrated="true"\} 1/);
});
