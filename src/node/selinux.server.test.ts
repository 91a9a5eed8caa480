// KEP-1710 SELinuxMount at the CSI level: the mount_flags of NodeStageVolume and
// NodePublishVolume as the node sends them over real gRPC (a scripted node plugin records every
// request, so this runs unprivileged too), with the node acting as 1.37 (SELinuxMount GA: any
// access mode gets `context="<label>"`) and as 1.36 (SELinuxMount beta and off: only
// ReadWriteOncePod volumes do). The node is told the host has SELinux (options.seLinux).

import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import {
  GVR,
  kubeRelease,
  type KubernetesMinor,
  type PersistentVolumeAccessMode,
  type Pod,
} from "../api/index.ts";
import {
  boundClaim,
  csiDriver,
  persistentVolume,
  pod,
  podRunning,
  runNode,
  runRealRegistrar,
  serveScriptedNode,
  testServer,
  type RecordedCall,
} from "../../test/harness/node.ts";
import { until } from "../../test/harness/until.ts";
import { tempDir } from "../../test/harness/cleanup.ts";

const DRIVER = "scripted.csi.k8s.io";
const NODE = "node-a";
const NS = "default";
const LABEL_OPTION = 'context="system_u:object_r:container_file_t:s0:c1,c2"';

interface Case {
  name: string;
  accessMode: PersistentVolumeAccessMode;
  policy?: "Recursive" | "MountOption";
  /** Whether the option is expected at 1.37 and at 1.36. */
  want: Record<"1.37" | "1.36", boolean>;
}

const CASES: Case[] = [
  { name: "rwo", accessMode: "ReadWriteOnce", want: { "1.37": true, "1.36": false } },
  { name: "rwx", accessMode: "ReadWriteMany", policy: "MountOption", want: { "1.37": true, "1.36": false } },
  { name: "rwop", accessMode: "ReadWriteOncePod", want: { "1.37": true, "1.36": true } },
  {
    name: "rwop-recursive",
    accessMode: "ReadWriteOncePod",
    policy: "Recursive",
    want: { "1.37": false, "1.36": false },
  },
];

function flagsOf(call: RecordedCall | undefined): string[] {
  const capability = call?.request.volumeCapability as { mount?: { mountFlags?: string[] } } | undefined;
  return capability?.mount?.mountFlags ?? [];
}

for (const minor of ["1.37", "1.36"] as const satisfies readonly KubernetesMinor[]) {
  test(`SELinuxMount at --kubernetes-version ${minor}: context= in stage and publish mount_flags ${minor === "1.37" ? "for every access mode" : "for ReadWriteOncePod only"}; never with seLinuxChangePolicy Recursive`, async (t) => {
    const api = await testServer(t);
    const client = api.client();
    const root = await tempDir(t);
    const dir = await tempDir(t, "csikit-node-driver-");
    const endpoint = join(dir, "csi.sock");
    const scripted = await serveScriptedNode(t, {
      endpoint,
      nodeId: "scripted-a",
      capabilities: ["STAGE_UNSTAGE_VOLUME"],
    });
    await client.create(GVR.csiDrivers, csiDriver(DRIVER, { attachRequired: false, seLinuxMount: true }));
    await runNode(t, client, {
      nodeName: NODE,
      rootDir: root,
      seLinux: true,
      featureGates: kubeRelease(minor).gates,
    });
    await runRealRegistrar(t, client, { rootDir: root, nodeName: NODE, csiAddress: endpoint });
    for (const c of CASES) {
      const pv = persistentVolume(`pv-${c.name}`, {
        driver: DRIVER,
        handle: `vol-${c.name}`,
        accessModes: [c.accessMode],
        csi: {},
      });
      pv.spec!.mountOptions = ["noatime"];
      await boundClaim(client, NS, `data-${c.name}`, pv);
      const spec: Pod = pod(NS, `app-${c.name}`, {
        nodeName: NODE,
        volumes: [{ name: "data", persistentVolumeClaim: { claimName: `data-${c.name}` } }],
      });
      spec.spec!.securityContext = {
        seLinuxOptions: { level: "s0:c1,c2" },
        ...(c.policy ? { seLinuxChangePolicy: c.policy } : {}),
      };
      spec.spec!.containers[0]!.volumeMounts = [{ name: "data", mountPath: "/data" }];
      await client.create(GVR.pods, spec);
    }
    for (const c of CASES) {
      await until(() => podRunning(client, NS, `app-${c.name}`), `pod app-${c.name} Running`);
      const ofVolume = (method: string) =>
        scripted.callsOf(method).find((call) => call.request.volumeId === `vol-${c.name}`);
      const expected = c.want[minor] ? ["noatime", LABEL_OPTION] : ["noatime"];
      assert.deepEqual(
        flagsOf(ofVolume("NodeStageVolume")),
        expected,
        `${c.name}: NodeStageVolume mount_flags`,
      );
      assert.deepEqual(
        flagsOf(ofVolume("NodePublishVolume")),
        expected,
        `${c.name}: NodePublishVolume mount_flags`,
      );
    }
  });
}
