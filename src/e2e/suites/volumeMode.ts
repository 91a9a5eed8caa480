// Upstream's volumeMode suite (test/e2e/storage/testsuites/volumemode.go), the tests on a
// dynamically provisioned volume: a pod that uses a Filesystem claim as a device
// (volumeDevices), or a Block claim as a mount (volumeMounts), never starts — the node agent
// reports the mismatch in a FailedMount event and the pod stays Pending; and a volume a pod
// declares but no container uses is neither mounted nor mapped. Upstream lists the pod's volume
// directories on the node over SSH; here the cluster's view is checked instead: the container
// sees nothing at the path, the node does not report the volume in use, and no VolumeAttachment
// of it exists to the node.

import { GVR, type Node, type VolumeAttachment } from "../../api/index.ts";
import type { CoreEvent } from "../../kube/index.ts";
import { E2eCheckError } from "../model.ts";
import { MOUNT_PATH } from "../resources.ts";
import type { SuiteImplementation } from "../suite.ts";

/** How long upstream's check leans on the event before it looks at the phase anyway. */
const EVENT_WAIT_MS = 60_000;

export const volumeModeTests: SuiteImplementation = {
  suite: "volumeMode",
  tests: {
    "should fail to use a volume in a pod with mismatched mode": async ({ namespace, client }) => {
      const volume = await namespace.createVolume();
      // A Block claim as a mount, a Filesystem one as a device.
      const pod = await namespace.createPod({ volumes: [{ source: volume.source, block: !volume.block }] });
      const name = pod.metadata?.name ?? "";
      const want = volume.block
        ? "has volumeMode Block, but is specified in volumeMounts"
        : "has volumeMode Filesystem, but is specified in volumeDevices";
      // Events are a hint only (upstream's words): their absence is not a failure, the phase is.
      await namespace
        .waitFor(`a FailedMount event of pod ${name} saying "${want}"`, EVENT_WAIT_MS, async () => {
          const events = await client.list<CoreEvent>(GVR.events, {
            namespace: namespace.name,
            fieldSelector: `involvedObject.kind=Pod,involvedObject.name=${name},reason=FailedMount`,
          });
          return events.items.some((event) => (event.message ?? "").includes(want)) ? true : undefined;
        })
        .catch(() => undefined);
      const phase = (await namespace.getPod(name)).status?.phase;
      if (phase !== "Pending")
        throw new E2eCheckError(`pod ${name} using a volume in the wrong mode is ${phase}, want Pending`);
    },
    "should not mount / map unused volumes in a pod [LinuxOnly]": async ({ namespace, client }) => {
      const volume = await namespace.createVolume();
      const pod = await namespace.createPod({
        volumes: [{ source: volume.source, block: volume.block }],
        mutate: (p) => {
          for (const container of p.spec?.containers ?? []) {
            delete container.volumeMounts;
            delete container.volumeDevices;
          }
        },
      });
      const name = pod.metadata?.name ?? "";
      const running = await namespace.waitRunning(name);
      const node = running.spec?.nodeName ?? "";
      const seen = await namespace.execOk(
        name,
        `if [ -e ${MOUNT_PATH} ]; then echo present; fi; grep -c ' ${MOUNT_PATH} ' /proc/self/mountinfo || true`,
      );
      if (seen.includes("present") || seen.trim().split("\n").pop() !== "0")
        throw new E2eCheckError(
          `the unused volume is visible in pod ${name} at ${MOUNT_PATH}: ${seen.trim()}`,
        );
      if (volume.claimName === undefined) return;
      const pv = await namespace.waitBound(volume.claimName);
      const unique = `kubernetes.io/csi/${pv.spec?.csi?.driver ?? ""}^${pv.spec?.csi?.volumeHandle ?? ""}`;
      const inUse = (await client.get<Node>(GVR.nodes, node)).status?.volumesInUse ?? [];
      if (inUse.includes(unique))
        throw new E2eCheckError(`node ${node} reports the unused volume ${unique} in use by pod ${name}`);
      const attachments = await client.list<VolumeAttachment>(GVR.volumeAttachments);
      const attached = attachments.items.find(
        (a) => a.spec?.nodeName === node && a.spec?.source?.persistentVolumeName === pv.metadata?.name,
      );
      if (attached)
        throw new E2eCheckError(
          `the unused volume ${pv.metadata?.name} is attached to node ${node} (VolumeAttachment ${attached.metadata?.name})`,
        );
    },
  },
};
