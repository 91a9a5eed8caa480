// kube-controller-manager's job loop (pkg/controller/job): informers on Jobs and pods feed
// one queue of Job keys; pod handlers settle expectations and forget finalizer removals once
// the cache shows them. Pods of a Job that is gone lose their tracking finalizer here, as
// upstream's orphan handling does, so nothing is left undeletable. Events are reported as
// "job-controller".

import { GVR, WORKLOAD_NAMES, type Job, type Pod } from "../../api/index.ts";
import type { Clock, Logger } from "../../base/index.ts";
import {
  WorkQueue,
  controllerRateLimiter,
  deletedObject,
  isNotFound,
  objectKey,
  type InformerFactory,
  type KubeClient,
} from "../../kube/index.ts";
import { ControllerExpectations, WorkloadLoop, controllerOf } from "../workload/index.ts";
import { hasTrackingFinalizer, POD_FAILURE_BACKOFF_START_MS } from "./pods.ts";
import { syncJob } from "./sync.ts";

export const JOB_CONTROLLER_COMPONENT = "job-controller";

export interface JobControllerOptions {
  client: KubeClient;
  informers: InformerFactory;
  logger?: Logger;
  /** --concurrent-job-syncs. Default 5. */
  workers?: number;
  /** First pod-failure backoff (upstream's DefaultJobPodFailureBackOff, no flag). Default 10000 ms. */
  podFailureBackoffStartMs?: number;
  clock?: Clock;
}

export async function startJobController(options: JobControllerOptions, signal: AbortSignal): Promise<void> {
  const { client } = options;
  const jobs = options.informers.informer<Job>(GVR.jobs);
  const pods = options.informers.informer<Pod>(GVR.pods);
  const expectations = new ControllerExpectations(options.clock);
  const loop = new WorkloadLoop({
    name: JOB_CONTROLLER_COMPONENT,
    queueName: "job",
    client,
    logger: options.logger,
    clock: options.clock,
    expectations,
  });
  const { clock } = loop;
  const orphanQueue = new WorkQueue<string>({
    name: "job_orphan_pod",
    rateLimiter: controllerRateLimiter<string>({ clock }),
    clock,
  });
  const finalizersRemoved = new Set<string>();
  const ownedByLiveJob = (pod: Pod): boolean => {
    const ref = controllerOf(pod);
    if (ref?.kind !== "Job") return true;
    return jobs.store.get(`${pod.metadata?.namespace ?? ""}/${ref.name}`)?.metadata?.uid === ref.uid;
  };
  loop.handle(
    jobs.addEventHandler(
      loop.ownerHandlers<Job>((job) => {
        // Its pods may still carry the finalizer: let go of them.
        for (const pod of pods.store.listByNamespace(job.metadata?.namespace ?? ""))
          if (controllerOf(pod)?.uid === job.metadata?.uid && hasTrackingFinalizer(pod))
            orphanQueue.add(objectKey(pod));
      }),
    ),
    loop.podOwnerHandlers(pods, "Job", jobs),
    pods.addEventHandler({
      onAdd: (pod) => {
        if (hasTrackingFinalizer(pod) && !ownedByLiveJob(pod)) orphanQueue.add(objectKey(pod));
      },
      onUpdate: (_old, pod) => {
        if (!hasTrackingFinalizer(pod)) finalizersRemoved.delete(pod.metadata?.uid ?? "");
        else if (!ownedByLiveJob(pod)) orphanQueue.add(objectKey(pod));
      },
      onDelete: (value) => finalizersRemoved.delete(deletedObject(value).metadata?.uid ?? ""),
    }),
  );
  await loop.run(
    [
      {
        name: JOB_CONTROLLER_COMPONENT,
        informers: [jobs, pods],
        queue: loop.queue,
        workers: options.workers ?? 5,
        reconcile: loop.reconcileOwner(
          (key) => jobs.store.get(key),
          (job, tools) =>
            syncJob(
              {
                client,
                ...tools,
                pods: pods.store,
                expectations,
                finalizersRemoved,
                podFailureBackoffStartMs: options.podFailureBackoffStartMs ?? POD_FAILURE_BACKOFF_START_MS,
                now: () => clock.now(),
              },
              job,
            ),
        ),
      },
      {
        name: `${JOB_CONTROLLER_COMPONENT}/orphan-pods`,
        informers: [jobs, pods],
        queue: orphanQueue,
        workers: 1,
        reconcile: async (key, { signal: reconcileSignal }) => {
          const pod = pods.store.get(key);
          if (pod === undefined || !hasTrackingFinalizer(pod) || ownedByLiveJob(pod)) return;
          try {
            await client.patch(
              GVR.pods,
              pod.metadata?.name ?? "",
              {
                metadata: {
                  finalizers: (pod.metadata?.finalizers ?? []).filter(
                    (f) => f !== WORKLOAD_NAMES.jobTrackingFinalizer,
                  ),
                  resourceVersion: pod.metadata?.resourceVersion,
                },
              },
              { namespace: pod.metadata?.namespace ?? "" },
              reconcileSignal,
            );
          } catch (error) {
            if (!isNotFound(error)) throw error;
          }
        },
      },
    ],
    signal,
  );
}
