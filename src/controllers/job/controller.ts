// kube-controller-manager's job loop (pkg/controller/job): informers on Jobs and pods feed
// one queue of Job keys; pod handlers settle expectations and forget finalizer removals once
// the cache shows them. Pods of a Job that is gone lose their tracking finalizer here, as
// upstream's orphan handling does, so nothing is left undeletable. Events are reported as
// "job-controller".

import { GVR, WORKLOAD_NAMES, type Job, type Pod } from "../../api/index.ts";
import { realClock, silentLogger, type Clock, type Logger } from "../../base/index.ts";
import {
  EventRecorder,
  WorkQueue,
  controllerRateLimiter,
  deletedObject,
  isNotFound,
  objectKey,
  runController,
  type InformerFactory,
  type KubeClient,
} from "../../kube/index.ts";
import {
  ControllerExpectations,
  controllerOf,
  registerPodOwnerHandlers,
  selectorMatches,
} from "../workload/index.ts";
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
  const logger = (options.logger ?? silentLogger).with({ controller: "job-controller" });
  const clock = options.clock ?? realClock;
  const jobs = options.informers.informer<Job>(GVR.jobs);
  const pods = options.informers.informer<Pod>(GVR.pods);
  const queue = new WorkQueue<string>({
    name: "job",
    rateLimiter: controllerRateLimiter<string>({ clock }),
    clock,
  });
  const orphanQueue = new WorkQueue<string>({
    name: "job_orphan_pod",
    rateLimiter: controllerRateLimiter<string>({ clock }),
    clock,
  });
  const expectations = new ControllerExpectations(clock);
  const finalizersRemoved = new Set<string>();
  const ownedByLiveJob = (pod: Pod): boolean => {
    const ref = controllerOf(pod);
    if (ref?.kind !== "Job") return true;
    return jobs.store.get(`${pod.metadata?.namespace ?? ""}/${ref.name}`)?.metadata?.uid === ref.uid;
  };
  const removeHandlers = [
    jobs.addEventHandler({
      onAdd: (job) => queue.add(objectKey(job)),
      onUpdate: (_old, job) => queue.add(objectKey(job)),
      onDelete: (value) => {
        const job = deletedObject(value);
        expectations.forget(objectKey(job));
        // Its pods may still carry the finalizer: let go of them.
        for (const pod of pods.store.listByNamespace(job.metadata?.namespace ?? ""))
          if (controllerOf(pod)?.uid === job.metadata?.uid && hasTrackingFinalizer(pod))
            orphanQueue.add(objectKey(pod));
      },
    }),
    registerPodOwnerHandlers(pods, {
      kind: "Job",
      owners: jobs,
      expectations,
      enqueue: (key) => queue.add(key),
      matchingOwners: (pod) =>
        jobs.store
          .listByNamespace(pod.metadata?.namespace ?? "")
          .filter((job) => selectorMatches(job.spec?.selector, pod.metadata?.labels)),
    }),
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
  ];
  const recorder = new EventRecorder({
    client: options.client,
    component: JOB_CONTROLLER_COMPONENT,
    logger,
    clock,
  });
  const recorderRun = recorder.start(signal);
  try {
    await Promise.all([
      runController(
        {
          name: "job-controller",
          informers: [jobs, pods],
          queue,
          workers: options.workers ?? 5,
          logger,
          reconcile: async (key, { signal: reconcileSignal, logger: reconcileLogger }) => {
            const job = jobs.store.get(key);
            if (job === undefined) {
              expectations.forget(key);
              return;
            }
            try {
              return await syncJob(
                {
                  client: options.client,
                  recorder,
                  logger: reconcileLogger,
                  signal: reconcileSignal,
                  pods: pods.store,
                  expectations,
                  finalizersRemoved,
                  podFailureBackoffStartMs: options.podFailureBackoffStartMs ?? POD_FAILURE_BACKOFF_START_MS,
                  now: () => clock.now(),
                },
                job,
              );
            } catch (error) {
              if (isNotFound(error)) return;
              throw error;
            }
          },
        },
        signal,
      ),
      runController(
        {
          name: "job-controller/orphan-pods",
          informers: [jobs, pods],
          queue: orphanQueue,
          workers: 1,
          logger,
          reconcile: async (key, { signal: reconcileSignal }) => {
            const pod = pods.store.get(key);
            if (pod === undefined || !hasTrackingFinalizer(pod) || ownedByLiveJob(pod)) return;
            try {
              await options.client.patch(
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
        signal,
      ),
    ]);
  } finally {
    queue.shutDown();
    orphanQueue.shutDown();
    for (const remove of removeHandlers) remove();
    await recorderRun;
  }
}
