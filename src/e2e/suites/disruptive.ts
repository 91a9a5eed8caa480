// Upstream's disruptive suite (test/e2e/storage/testsuites/disruptive.go, with the steps of
// test/e2e/storage/utils): the node agent (kubelet) restarts or goes down under a pod using the
// volume. Data written before a restart is read back by the same pod after it; a pod deleted
// (gracefully or forcibly) while the agent is down is gone once it returns, its volume released —
// and, for the multi-pod tests, a second pod on the same node (started while the agent was down,
// with another SELinux level in the "different SELinux context" variants) then runs and reads the
// data. Upstream checks the release over SSH (the pod's mount, its block device symlinks); here
// it is checked through the cluster, as any driver's: the node no longer lists the volume in
// status.volumesInUse and its VolumeAttachment to the node is gone.

import { GVR, type Node, type PersistentVolume, type Pod, type VolumeAttachment } from "../../api/index.ts";
import { E2eCheckError, E2eSkip } from "../model.ts";
import type { TestNamespace, VolumeResource } from "../resources.ts";
import type { NodeProcesses, SuiteImplementation, TestBody, TestContext } from "../suite.ts";
import { expectData, locationOf, podVolume, randomContent, writeData } from "./checks.ts";

/** Upstream's e2epv.SELinuxLabel level, and the other level its "different context" pods use. */
const SELINUX_LEVEL = "s0:c0,c1";
const OTHER_SELINUX_LEVEL = "s0:c98,c99";

function processesOf(context: TestContext): NodeProcesses {
  // Upstream restarts the kubelet over SSH and skips where it cannot.
  if (context.processes === undefined)
    throw new E2eSkip(
      "No SSH Key for provider: csikit e2e stops and restarts node agents only on a cluster it started (csikit up)",
    );
  return context.processes;
}

const withSELinuxLevel =
  (level: string) =>
  (pod: Pod): void => {
    pod.spec = { ...pod.spec!, securityContext: { ...pod.spec?.securityContext, seLinuxOptions: { level } } };
  };

/** The pattern's volume (RWOP for the multi-pod tests) used by a running pod; returns the pod and node. */
async function startPod(
  namespace: TestNamespace,
  rwop = false,
): Promise<{ volume: VolumeResource; pod: string; node: string }> {
  const volume = await namespace.createVolume(rwop ? { claim: { accessModes: ["ReadWriteOncePod"] } } : {});
  const pod = await namespace.runPod({
    volumes: [podVolume(volume)],
    mutate: withSELinuxLevel(SELINUX_LEVEL),
  });
  const node = (await namespace.getPod(pod)).spec?.nodeName ?? "";
  return { volume, pod, node };
}

async function volumeOf(namespace: TestNamespace, volume: VolumeResource): Promise<PersistentVolume> {
  const claim = await namespace.getClaim(volume.claimName ?? "");
  return namespace.client.get<PersistentVolume>(GVR.persistentVolumes, claim.spec?.volumeName ?? "");
}

/** The name the node agent reports a CSI volume under (node status volumesInUse). */
const uniqueName = (volume: PersistentVolume): string =>
  `kubernetes.io/csi/${volume.spec?.csi?.driver ?? ""}^${volume.spec?.csi?.volumeHandle ?? ""}`;

async function inUse(namespace: TestNamespace, node: string, name: string): Promise<boolean> {
  const object = await namespace.client.get<Node>(GVR.nodes, node);
  return (object.status?.volumesInUse ?? []).includes(name);
}

/** The volume's VolumeAttachments to the node (none for a driver that needs no attach). */
async function attachments(namespace: TestNamespace, pv: string, node: string): Promise<string[]> {
  const list = await namespace.client.list<VolumeAttachment>(GVR.volumeAttachments);
  return list.items
    .filter((a) => a.spec?.source?.persistentVolumeName === pv && a.spec?.nodeName === node)
    .map((a) => a.metadata?.name ?? "");
}

/** Before the disruption: the node reports the volume in use (upstream: its mount is found). */
async function expectInUse(namespace: TestNamespace, node: string, volume: PersistentVolume): Promise<void> {
  const name = uniqueName(volume);
  await namespace.waitFor(`node ${node} to report ${name} in use`, "PodStart", () =>
    inUse(namespace, node, name),
  );
}

/**
 * After the pods are gone: the node agent released the volume — no longer in the node's
 * volumesInUse, its VolumeAttachment to the node deleted (upstream: no mount, no device symlinks).
 */
async function expectReleased(
  namespace: TestNamespace,
  node: string,
  volume: PersistentVolume,
): Promise<void> {
  const name = uniqueName(volume);
  const pv = volume.metadata?.name ?? "";
  await namespace
    .waitFor(`node ${node} to release ${name}`, "PodDelete", async () => {
      if (await inUse(namespace, node, name)) return false;
      return (await attachments(namespace, pv, node)).length === 0;
    })
    .catch(async (error: unknown) => {
      const still = (await inUse(namespace, node, name)) ? "still lists it in status.volumesInUse" : "";
      const left = await attachments(namespace, pv, node);
      throw new E2eCheckError(
        `volume ${pv} was not released on node ${node} after its pod was deleted while the kubelet was down: ${[
          still,
          left.length > 0 ? `VolumeAttachment ${left.join(", ")} remains` : "",
        ]
          .filter((s) => s !== "")
          .join("; ")} (${String(error)})`,
      );
    });
}

/** Upstream's TestKubeletRestartsAndRestoresMount / …Map: data written before a restart is read after it. */
const restartKeepsData: TestBody = async (context) => {
  const processes = processesOf(context);
  const { namespace } = context;
  const { volume, pod, node } = await startPod(namespace);
  const where = locationOf(volume);
  const content = randomContent();
  await writeData(namespace, pod, where, content);
  await processes.restartNodeAgent(node);
  // The restarted agent reports the node before it serves exec again (upstream waits too).
  await namespace.waitFor(`exec in pod ${pod} to be served again`, "PodStart", async () => {
    try {
      return (await namespace.exec(pod, "true")).code === 0;
    } catch {
      return false;
    }
  });
  await expectData(namespace, pod, where, content);
};

/**
 * Upstream's TestVolumeUnmountsFromDeletedPodWithForceOption / TestVolumeUnmapsFromDeletedPod…:
 * the pod is deleted while the node agent is down (a second pod, when given, is created then,
 * pinned to the node); once the agent is back the first pod is gone, the second runs and reads
 * what the first wrote, and after every pod is gone the volume is released on the node.
 */
function deletedWhileDown(options: { force: boolean; secondPod?: { seLinuxLevel: string } }): TestBody {
  return async (context) => {
    const processes = processesOf(context);
    const { namespace } = context;
    const { volume, pod, node } = await startPod(namespace, options.secondPod !== undefined);
    const pv = await volumeOf(namespace, volume);
    await expectInUse(namespace, node, pv);
    const where = locationOf(volume);
    const content = randomContent();
    await writeData(namespace, pod, where, content);

    await processes.stopNodeAgent(node);
    let second: string | undefined;
    try {
      if (options.secondPod !== undefined) {
        const level = options.secondPod.seLinuxLevel;
        const created = await namespace.createPod({
          volumes: [podVolume(volume)],
          mutate: (p) => {
            withSELinuxLevel(level)(p);
            p.spec = { ...p.spec!, nodeName: node };
          },
        });
        second = created.metadata?.name ?? "";
      }
      await namespace.deletePod(pod, { force: options.force, wait: false });
    } finally {
      await processes.startNodeAgent(node);
    }
    await namespace.waitGone(GVR.pods, pod, namespace.name);

    if (second !== undefined) {
      await namespace.waitRunning(second);
      await expectData(namespace, second, where, content);
      await namespace.deletePod(second);
    }
    await expectReleased(namespace, node, pv);
  };
}

export const disruptiveTests: SuiteImplementation = {
  suite: "disruptive",
  tests: {
    "Should test that pv written before kubelet restart is readable after restart.": restartKeepsData,
    "Should test that pv used in a pod that is deleted while the kubelet is down cleans up when the kubelet returns.":
      deletedWhileDown({ force: false }),
    "Should test that pv used in a pod that is force deleted while the kubelet is down cleans up when the kubelet returns.":
      deletedWhileDown({ force: true }),
    "Should test that pv used in a pod that is deleted while the kubelet is down is usable by a new pod when kubelet returns":
      deletedWhileDown({ force: false, secondPod: { seLinuxLevel: SELINUX_LEVEL } }),
    "Should test that pv used in a pod that is force deleted while the kubelet is down is usable by a new pod when kubelet returns":
      deletedWhileDown({ force: true, secondPod: { seLinuxLevel: SELINUX_LEVEL } }),
    "Should test that pv used in a pod that is deleted while the kubelet is down is usable by a new pod with a different SELinux context when kubelet returns":
      deletedWhileDown({ force: false, secondPod: { seLinuxLevel: OTHER_SELINUX_LEVEL } }),
    "Should test that pv used in a pod that is force deleted while the kubelet is down is usable by a new pod with a different SELinux context when kubelet returns":
      deletedWhileDown({ force: true, secondPod: { seLinuxLevel: OTHER_SELINUX_LEVEL } }),
  },
};
