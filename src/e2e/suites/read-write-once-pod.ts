// Upstream's read-write-once-pod suite (test/e2e/storage/testsuites/readwriteoncepod.go): a
// ReadWriteOncePod claim is used by one pod at a time. The scheduler preempts a lower-priority
// pod holding it for a higher-priority one (and keeps the low one unschedulable while the high
// one runs); a second pod placed straight on the node (spec.nodeName, no scheduler) is refused by
// the node agent — a FailedMount event saying the volume is in use by another pod, the pod left
// in ContainerCreating — and starts once the first pod is gone.

import { GVR, type CoreEvent, type GroupVersionKindResource, type Pod } from "../../api/index.ts";
import { firstServedVersion, isNotFound } from "../../kube/index.ts";
import { E2eCheckError, E2eSkip } from "../model.ts";
import type { TestNamespace, VolumeResource } from "../resources.ts";
import type { SuiteImplementation } from "../suite.ts";
import { podVolume } from "./checks.ts";

const PRIORITY_CLASSES: GroupVersionKindResource = {
  group: "scheduling.k8s.io",
  version: "v1",
  resource: "priorityclasses",
  kind: "PriorityClass",
  namespaced: false,
};

/** What the kubelet says of a second pod of an in-use ReadWriteOncePod volume. */
const IN_USE = "volume uses the ReadWriteOncePod access mode and is already in use by another pod";

async function rwopVolume(namespace: TestNamespace): Promise<VolumeResource> {
  return namespace.createVolume({ claim: { accessModes: ["ReadWriteOncePod"] } });
}

/** Upstream's WaitForPodNameUnschedulableInNamespace: PodScheduled False, reason Unschedulable. */
async function waitUnschedulable(namespace: TestNamespace, pod: string): Promise<void> {
  const seen = await namespace.waitFor(`pod ${pod} to be unschedulable`, "PodStart", async () => {
    const object = await namespace.getPod(pod);
    // Scheduled ends the wait (and fails the check) at once.
    if (object.spec?.nodeName) return object;
    const scheduled = object.status?.conditions?.find((c) => c.type === "PodScheduled");
    return scheduled?.status === "False" && scheduled.reason === "Unschedulable" ? object : undefined;
  });
  if (seen.spec?.nodeName)
    throw new E2eCheckError(`pod ${pod} was scheduled to ${seen.spec.nodeName}, want unschedulable`);
}

/** Upstream's WaitForPodNotFoundInNamespace, bounded by PodStart as upstream's preemption wait. */
async function waitNotFound(namespace: TestNamespace, pod: string): Promise<void> {
  await namespace.waitFor(`pod ${pod} to be preempted`, "PodStart", async () => {
    try {
      await namespace.getPod(pod);
      return false;
    } catch (error) {
      if (isNotFound(error)) return true;
      throw error;
    }
  });
}

export const readWriteOncePodTests: SuiteImplementation = {
  suite: "read-write-once-pod",
  tests: {
    "should preempt lower priority pods using ReadWriteOncePod volumes": async ({
      namespace,
      client,
      signal,
    }) => {
      // Preemption needs pod priority: a cluster without the PriorityClass API has neither.
      if ((await firstServedVersion(client, [PRIORITY_CLASSES], signal)) === undefined)
        throw new E2eSkip(
          "the cluster does not serve scheduling.k8s.io/v1 PriorityClasses: no pod priority, no preemption",
        );
      const volume = await rwopVolume(namespace);
      const priorityClass = await namespace.createObject(PRIORITY_CLASSES, {
        apiVersion: "scheduling.k8s.io/v1",
        kind: "PriorityClass",
        metadata: { name: namespace.clusterName("priority") },
        value: 1000,
      });
      const low = await namespace.runPod({ volumes: [podVolume(volume)] });
      const high = await namespace.createPod({
        volumes: [podVolume(volume)],
        mutate: (pod) => {
          pod.spec = { ...pod.spec!, priorityClassName: priorityClass.metadata?.name ?? "" };
        },
      });
      const highName = high.metadata?.name ?? "";
      await waitNotFound(namespace, low);
      await namespace.waitRunning(highName);
      // The low one again, under its old name: it cannot get the volume from the high one.
      await namespace.createPod({ volumes: [podVolume(volume)], name: low });
      await waitUnschedulable(namespace, low);
      await namespace.deletePod(highName);
      await namespace.waitRunning(low);
    },

    "should block a second pod from using an in-use ReadWriteOncePod volume on the same node": async ({
      namespace,
      client,
    }) => {
      const volume = await rwopVolume(namespace);
      const first = await namespace.runPod({ volumes: [podVolume(volume)] });
      const node = (await namespace.getPod(first)).spec?.nodeName ?? "";
      // Straight onto the node: the scheduler would keep it off (upstream sets nodeName too).
      const second = await namespace.createPod({
        volumes: [podVolume(volume)],
        mutate: (pod: Pod) => {
          pod.spec = { ...pod.spec!, nodeName: node };
        },
      });
      const secondName = second.metadata?.name ?? "";
      await namespace.waitFor(
        `a FailedMount event of pod ${secondName} saying "${IN_USE}"`,
        "PodStart",
        async () => {
          const events = await client.list<CoreEvent>(GVR.events, { namespace: namespace.name });
          return events.items.some(
            (event) =>
              event.involvedObject.kind === "Pod" &&
              event.involvedObject.name === secondName &&
              event.reason === "FailedMount" &&
              (event.message ?? "").includes(IN_USE),
          );
        },
      );
      // Upstream's WaitForPodContainerToFail(…, "ContainerCreating"): the container waits to be created.
      // A pod that runs ends the wait (and fails the check) at once.
      const stuck = await namespace.waitFor(
        `pod ${secondName}'s container to wait in ContainerCreating`,
        "PodStart",
        async () => {
          const pod = await namespace.getPod(secondName);
          if (pod.status?.phase === "Running") return pod;
          // A node agent that writes no container status before the volumes are mounted
          // (csikit's) leaves the pod Pending with none: its container was not created either.
          const statuses = pod.status?.containerStatuses ?? [];
          if (statuses.length === 0) return pod.status?.phase === "Pending" ? pod : undefined;
          return statuses[0]?.state?.waiting?.reason === "ContainerCreating" ? pod : undefined;
        },
      );
      if (stuck.status?.phase === "Running")
        throw new E2eCheckError(`pod ${secondName} runs while pod ${first} uses the ReadWriteOncePod volume`);
      await namespace.deletePod(first);
      await namespace.waitRunning(secondName);
    },
  },
};
