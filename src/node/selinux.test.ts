// The SELinux mount label decision (selinux.ts) as a table: host, gates, driver opt-in,
// access mode, change policy, and the containers' options.

import assert from "node:assert/strict";
import { test } from "node:test";
import { kubeRelease, type CSIDriver, type Pod } from "../api/index.ts";
import { fileLabel, seLinuxMountLabel, withSELinuxMountOption } from "./selinux.ts";

const gates137 = kubeRelease("1.37").gates;
const optedIn: CSIDriver = { metadata: { name: "d" }, spec: { seLinuxMount: true } };

function podWith(
  containers: { options?: Record<string, string>; mounts: boolean }[],
  podOptions?: Record<string, string>,
): Pod {
  return {
    metadata: { name: "p", namespace: "default" },
    spec: {
      ...(podOptions ? { securityContext: { seLinuxOptions: podOptions } } : {}),
      containers: containers.map((c, i) => ({
        name: `c${i}`,
        ...(c.options ? { securityContext: { seLinuxOptions: c.options } } : {}),
        ...(c.mounts ? { volumeMounts: [{ name: "data", mountPath: "/data" }] } : {}),
      })),
    },
  };
}

test("seLinuxMountLabel: host, gates, driver, containers", () => {
  const context = { gates: gates137, hostEnabled: true };
  const one = podWith([{ mounts: true }], { level: "s0:c1,c2" });
  assert.equal(
    seLinuxMountLabel(one, "data", ["ReadWriteOnce"], optedIn, context),
    "system_u:object_r:container_file_t:s0:c1,c2",
  );
  assert.equal(
    seLinuxMountLabel(one, "data", ["ReadWriteOnce"], optedIn, { ...context, hostEnabled: false }),
    "",
    "no SELinux on the host",
  );
  assert.equal(
    seLinuxMountLabel(one, "data", ["ReadWriteOnce"], { metadata: { name: "d" }, spec: {} }, context),
    "",
    "driver not opted in",
  );
  assert.equal(
    seLinuxMountLabel(one, "other", ["ReadWriteOnce"], optedIn, context),
    "",
    "no container mounts the volume",
  );
  assert.equal(
    seLinuxMountLabel(
      podWith([{ mounts: true }], { type: "spc_t" }),
      "data",
      ["ReadWriteOnce"],
      optedIn,
      context,
    ),
    "",
    "no level: unknown",
  );
  // The container's options replace the pod's as a whole.
  const own = podWith([{ mounts: true, options: { user: "user_u", level: "s0:c5" } }], { level: "s0:c1" });
  assert.equal(
    seLinuxMountLabel(own, "data", ["ReadWriteOnce"], optedIn, context),
    "user_u:object_r:container_file_t:s0:c5",
  );
  const conflict = podWith([{ mounts: true, options: { level: "s0:c5" } }, { mounts: true }], {
    level: "s0:c1",
  });
  assert.throws(
    () => seLinuxMountLabel(conflict, "data", ["ReadWriteOnce"], optedIn, context),
    /multiple SELinux labels found/,
  );
  const off = kubeRelease("1.37", { SELinuxMount: "false" }).gates;
  assert.equal(
    seLinuxMountLabel(one, "data", ["ReadWriteOnce"], optedIn, { gates: off, hostEnabled: true }),
    "",
  );
  assert.notEqual(
    seLinuxMountLabel(one, "data", ["ReadWriteOncePod"], optedIn, { gates: off, hostEnabled: true }),
    "",
  );
});

test("withSELinuxMountOption quotes the label as the kubelet does", () => {
  assert.deepEqual(withSELinuxMountOption(["ro"], fileLabel({ level: "s0:c1,c2" })), [
    "ro",
    'context="system_u:object_r:container_file_t:s0:c1,c2"',
  ]);
  assert.deepEqual(withSELinuxMountOption(["ro"], ""), ["ro"]);
});
