import assert from "node:assert/strict";
import { test } from "node:test";
import type { PersistentVolume, PersistentVolumeClaim, Pod } from "../api/index.ts";
import { computeDesiredState } from "./desired-state.ts";

test("a volume used in the wrong mode (Block as a mount, Filesystem as a device) is the pod's problem, not a volume to publish", () => {
  const pv = (name: string, volumeMode: "Block" | "Filesystem"): PersistentVolume => ({
    metadata: { name },
    spec: { volumeMode, claimRef: { uid: `uid-${name}` }, csi: { driver: "d", volumeHandle: `h-${name}` } },
  });
  const claim = (name: string): PersistentVolumeClaim => ({
    metadata: { name, namespace: "ns", uid: `uid-${name}` },
    spec: { volumeName: name },
    status: { phase: "Bound" },
  });
  const pod = (name: string, claimName: string, use: "mount" | "device"): Pod => ({
    metadata: { name, namespace: "ns", uid: `uid-pod-${name}` },
    spec: {
      containers: [
        {
          name: "c",
          ...(use === "mount"
            ? { volumeMounts: [{ name: "v", mountPath: "/v" }] }
            : { volumeDevices: [{ name: "v", devicePath: "/v" }] }),
        },
      ],
      volumes: [{ name: "v", persistentVolumeClaim: { claimName } }],
    },
  });
  const volumes: Record<string, PersistentVolume> = { blk: pv("blk", "Block"), fs: pv("fs", "Filesystem") };
  const state = computeDesiredState(
    [pod("a", "blk", "mount"), pod("b", "fs", "device"), pod("c", "blk", "device"), pod("d", "fs", "mount")],
    {
      claim: (_namespace, name) => claim(name),
      volume: (name) => volumes[name],
      csiDriver: () => undefined,
    },
  );
  assert.deepEqual(state.problems.get("uid-pod-a"), [
    "volume v has volumeMode Block, but is specified in volumeMounts",
  ]);
  assert.deepEqual(state.problems.get("uid-pod-b"), [
    "volume v has volumeMode Filesystem, but is specified in volumeDevices",
  ]);
  assert.deepEqual([...state.volumes.keys()].sort(), ["uid-pod-c/blk", "uid-pod-d/fs"]);
});
