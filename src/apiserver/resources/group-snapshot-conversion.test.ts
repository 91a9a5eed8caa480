// The in-process snapshot-conversion-webhook without kubectl: v1 ↔ v1beta2 changes nothing but
// the version, v1beta2 → v1beta1 → v1beta2 restores every member field through the annotation,
// a v1beta1 pair list without it is renamed, creationTime changes shape, bad input is refused.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { KubeObject } from "../rest/resource.ts";
import { convertGroupSnapshot, VOLUME_SNAPSHOT_INFO_ANNOTATION } from "./group-snapshot-conversion.ts";

const G = "groupsnapshot.storage.k8s.io";

function content(status: Record<string, unknown>, annotations?: Record<string, string>): KubeObject {
  return {
    apiVersion: `${G}/v1beta2`,
    kind: "VolumeGroupSnapshotContent",
    metadata: { name: "c", ...(annotations ? { annotations } : {}) },
    spec: { driver: "d" },
    status,
  };
}

test("v1beta2 → v1beta1 → v1beta2 keeps every member field; v1 is v1beta2's shape", () => {
  const infos = [
    {
      volumeHandle: "v",
      snapshotHandle: "s",
      creationTime: 1767225600000000000,
      readyToUse: true,
      restoreSize: 5,
    },
  ];
  const stored = content({ creationTime: "2026-01-01T00:00:00Z", volumeSnapshotInfoList: infos });
  const beta1 = convertGroupSnapshot(stored, `${G}/v1beta2`, `${G}/v1beta1`) as KubeObject & {
    status: Record<string, unknown>;
  };
  assert.deepEqual(beta1.status, {
    creationTime: 1767225600000000000,
    volumeSnapshotHandlePairList: [{ volumeHandle: "v", snapshotHandle: "s" }],
  });
  assert.equal(
    (beta1.metadata?.annotations as Record<string, string> | undefined)?.[VOLUME_SNAPSHOT_INFO_ANNOTATION],
    '[{"creationTime":1767225600000000000,"readyToUse":true,"restoreSize":5,"snapshotHandle":"s","volumeHandle":"v"}]',
  );
  const back = convertGroupSnapshot(beta1, `${G}/v1beta1`, `${G}/v1beta2`);
  assert.deepEqual(back.status, stored.status);
  assert.equal(back.metadata?.annotations, undefined);
  assert.deepEqual(convertGroupSnapshot(stored, `${G}/v1beta2`, `${G}/v1`).status, stored.status);
  assert.deepEqual(
    stored.status,
    { creationTime: "2026-01-01T00:00:00Z", volumeSnapshotInfoList: infos },
    "input unchanged",
  );
});

test("a v1beta1 pair list without the annotation is renamed; other kinds pass through; bad input refused", () => {
  const written = content({ volumeSnapshotHandlePairList: [{ volumeHandle: "v", snapshotHandle: "s" }] });
  assert.deepEqual(convertGroupSnapshot(written, `${G}/v1beta1`, `${G}/v1`).status, {
    volumeSnapshotInfoList: [{ volumeHandle: "v", snapshotHandle: "s" }],
  });
  const group = {
    apiVersion: `${G}/v1beta1`,
    kind: "VolumeGroupSnapshot",
    metadata: { name: "g" },
    status: { creationTime: "x" },
  };
  assert.deepEqual(convertGroupSnapshot(group as KubeObject, `${G}/v1beta1`, `${G}/v1`), group);
  assert.throws(
    () => convertGroupSnapshot(written, `${G}/v1alpha1`, `${G}/v1`),
    /unexpected conversion version "groupsnapshot.storage.k8s.io\/v1alpha1"/,
  );
  const broken = content({}, { [VOLUME_SNAPSHOT_INFO_ANNOTATION]: "{" });
  assert.throws(
    () => convertGroupSnapshot(broken, `${G}/v1beta1`, `${G}/v1`),
    /unable to deserialize annotation/,
  );
});
