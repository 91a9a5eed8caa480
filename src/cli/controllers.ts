// `csikit controllers`: the cluster's volume loops in one process, as kube-controller-manager
// runs them, with KCM's flag names and defaults (leader election on the Lease
// kube-system/kube-controller-manager, --controllers to switch loops, client QPS 20 / burst 30).

import { FlagError } from "../base/index.ts";
import {
  CONTROLLER_LOOPS,
  ControllerVolumeMetrics,
  runControllers,
  validateControllerNames,
} from "../controllers/index.ts";
import {
  Registry,
  TLS_SERVING_FLAGS,
  WorkQueueMetrics,
  alwaysAllowPaths,
  collectDefaultMetrics,
  kubeClientFromOptions,
  nonResourceAttributes,
  setWorkQueueMetricsProvider,
  startSecureServing,
} from "../kube/index.ts";
import type { Command } from "./command.ts";
import { FEATURE_GATES_FLAG, featureGates, KUBERNETES_VERSION_FLAG } from "./feature-gates.ts";

function loopList(): string {
  return CONTROLLER_LOOPS.map(
    (loop) =>
      [loop.name, ...(loop.aliases ?? [])].join(" / ") +
      (loop.disabledByDefault === true ? " (disabled by default: name it to run it)" : ""),
  ).join(", ");
}

export const controllersCommand: Command = {
  name: "controllers",
  summary:
    "Run the cluster's loops (PV binder, protection, GC, attach/detach, scheduler, statefulset, replicaset, deployment, daemonset, job, ephemeral volumes) like kube-controller-manager",
  usage: "csikit controllers [--kubeconfig=FILE] [--controllers=*,-foo] [flags]",
  description:
    "Runs the control-plane loops a cluster needs for volumes in one process, with kube-controller-manager's " +
    `names and flags. Loops (name / accepted aliases): ${loopList()}.`,
  flags: {
    "feature-gates": FEATURE_GATES_FLAG,
    "kubernetes-version": KUBERNETES_VERSION_FLAG,
    kubeconfig: {
      type: "string",
      help: "Path to a kubeconfig file with authorization and master location information.",
    },
    master: {
      type: "string",
      help: "The address of the Kubernetes API server (overrides any value in kubeconfig).",
    },
    controllers: {
      type: "strings",
      default: "*",
      help: "A list of controllers to enable. '*' enables all on-by-default controllers, 'foo' enables the controller named 'foo', '-foo' disables the controller named 'foo'.",
    },
    "kube-api-qps": {
      type: "float",
      default: "20",
      help: "QPS to use while talking with kubernetes apiserver.",
    },
    "kube-api-burst": {
      type: "int",
      default: "30",
      help: "Burst to use while talking with kubernetes apiserver.",
    },
    "leader-elect": {
      type: "bool",
      default: "true",
      help: "Start a leader election client and gain leadership before executing the main loop. Enable this when running replicated components for high availability.",
    },
    "leader-elect-lease-duration": {
      type: "duration",
      default: "15s",
      help: "The duration that non-leader candidates will wait after observing a leadership renewal until attempting to acquire leadership of a led but unrenewed leader slot.",
    },
    "leader-elect-renew-deadline": {
      type: "duration",
      default: "10s",
      help: "The interval between attempts by the acting master to renew a leadership slot before it stops leading. This must be less than the lease duration.",
    },
    "leader-elect-retry-period": {
      type: "duration",
      default: "2s",
      help: "The duration the clients should wait between attempting acquisition and renewal of a leadership.",
    },
    "leader-elect-resource-lock": {
      type: "string",
      default: "leases",
      help: "The type of resource object that is used for locking during leader election. Supported options are 'leases'.",
    },
    "leader-elect-resource-name": {
      type: "string",
      default: "kube-controller-manager",
      help: "The name of resource object that is used for locking during leader election.",
    },
    "leader-elect-resource-namespace": {
      type: "string",
      default: "kube-system",
      help: "The namespace of resource object that is used for locking during leader election.",
    },
    "concurrent-gc-syncs": {
      type: "int",
      default: "20",
      help: "The number of garbage collector workers that are allowed to sync concurrently.",
    },
    "concurrent-statefulset-syncs": {
      type: "int",
      default: "5",
      help: "The number of statefulset objects that are allowed to sync concurrently. Larger number = more responsive statefulsets, but more CPU (and network) load",
    },
    "concurrent-ephemeralvolume-syncs": {
      type: "int",
      default: "5",
      help: "The number of ephemeral volume syncing operations that will be done concurrently. Larger number = faster ephemeral volume updating, but more CPU (and network) load",
    },
    "concurrent-replicaset-syncs": {
      type: "int",
      default: "5",
      help: "The number of replica sets that are allowed to sync concurrently. Larger number = more responsive replica management, but more CPU (and network) load",
    },
    "concurrent-deployment-syncs": {
      type: "int",
      default: "5",
      help: "The number of deployment objects that are allowed to sync concurrently. Larger number = more responsive deployments, but more CPU (and network) load",
    },
    "concurrent-daemonset-syncs": {
      type: "int",
      default: "2",
      help: "The number of daemonset objects that are allowed to sync concurrently. Larger number = more responsive daemonsets, but more CPU (and network) load",
    },
    "concurrent-job-syncs": {
      type: "int",
      default: "5",
      help: "The number of job objects that are allowed to sync concurrently. Larger number = more responsive jobs, but more CPU (and network) load",
    },
    "enable-garbage-collector": {
      type: "bool",
      default: "true",
      help: "Enables the generic garbage collector. MUST be synced with the corresponding flag of the kube-apiserver.",
    },
    "pvclaimbinder-sync-period": {
      type: "duration",
      default: "15s",
      help: "The period for syncing persistent volumes and persistent volume claims.",
    },
    "secure-port": {
      type: "int",
      default: "10257",
      help: "The port on which to serve HTTPS with authentication and authorization (/metrics, /healthz). If 0, don't serve HTTPS at all.",
    },
    "bind-address": {
      type: "string",
      default: "127.0.0.1",
      help: "The IP address on which to listen for the --secure-port port. kube-controller-manager's default is 0.0.0.0 (all interfaces); csikit listens on loopback unless told otherwise.",
    },
    ...TLS_SERVING_FLAGS,
    "authorization-always-allow-paths": {
      type: "strings",
      default: "/healthz,/readyz,/livez",
      help: "A list of HTTP paths to skip during authorization, i.e. these are authorized without contacting the 'core' kubernetes server.",
    },
    "authentication-kubeconfig": {
      type: "string",
      help: "kubeconfig file pointing at the 'core' kubernetes server with enough rights to create tokenreviews.authentication.k8s.io. Empty: the --kubeconfig connection.",
    },
    "authorization-kubeconfig": {
      type: "string",
      help: "kubeconfig file pointing at the 'core' kubernetes server with enough rights to create subjectaccessreviews.authorization.k8s.io. Empty: the --kubeconfig connection.",
    },
    "pv-binder-workers": {
      type: "int",
      default: "1",
      help: "csikit's own: workers of the persistentvolume-binder-controller per queue (volumes, claims). kube-controller-manager has no such flag and runs one of each; more bind many claims at once faster (a volume is never bound twice: its updates are resourceVersion-guarded). `csikit up` passes 8.",
    },
  },
  async run({ flags, logger, signal }) {
    const controllers = flags.strings("controllers");
    try {
      validateControllerNames(CONTROLLER_LOOPS, controllers);
    } catch (error) {
      throw new FlagError(
        `invalid value for flag -controllers: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    if (flags.string("leader-elect-resource-lock") !== "leases")
      throw new FlagError(`invalid value for flag -leader-elect-resource-lock: only "leases" is supported`);
    const leaseDurationMs = flags.number("leader-elect-lease-duration");
    const renewDeadlineMs = flags.number("leader-elect-renew-deadline");
    const retryPeriodMs = flags.number("leader-elect-retry-period");
    if (!(retryPeriodMs > 0) || renewDeadlineMs <= retryPeriodMs * 1.2 || leaseDurationMs <= renewDeadlineMs)
      throw new FlagError(
        "leader election durations must satisfy lease-duration > renew-deadline > 1.2 × retry-period > 0",
      );
    const binderWorkers = flags.number("pv-binder-workers");
    if (!Number.isInteger(binderWorkers) || binderWorkers < 1)
      throw new FlagError(
        `invalid value ${binderWorkers} for flag -pv-binder-workers: want a positive integer`,
      );
    const gcWorkers = flags.number("concurrent-gc-syncs");
    if (!Number.isInteger(gcWorkers) || gcWorkers < 1)
      throw new FlagError(
        `invalid value ${gcWorkers} for flag -concurrent-gc-syncs: want a positive integer`,
      );
    const positive = (name: string): number => {
      const value = flags.number(name);
      if (!Number.isInteger(value) || value < 1)
        throw new FlagError(`invalid value ${value} for flag -${name}: want a positive integer`);
      return value;
    };
    const statefulSetWorkers = positive("concurrent-statefulset-syncs");
    const ephemeralVolumeWorkers = positive("concurrent-ephemeralvolume-syncs");
    // --enable-garbage-collector=false wins over "*": the disable goes first (first match decides).
    const ordered = flags.bool("enable-garbage-collector")
      ? controllers
      : ["-garbage-collector-controller", ...controllers];
    const client = kubeClientFromOptions({
      kubeconfig: flags.string("kubeconfig"),
      master: flags.string("master"),
      kubeApiQps: flags.number("kube-api-qps"),
      kubeApiBurst: flags.number("kube-api-burst"),
      userAgent: "kube-controller-manager",
    });
    // The reviews go through --authentication-kubeconfig when given (upstream splits TokenReview
    // and SubjectAccessReview over two; one identity with both rights serves both here).
    const reviewKubeconfig =
      flags.string("authentication-kubeconfig") || flags.string("authorization-kubeconfig");
    const reviewClient =
      reviewKubeconfig === ""
        ? client
        : kubeClientFromOptions({
            kubeconfig: reviewKubeconfig,
            master: "",
            kubeApiQps: 5,
            kubeApiBurst: 10,
          });
    // Metrics first: the loops' work queues report to the provider from their creation on.
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    setWorkQueueMetricsProvider(new WorkQueueMetrics({ registry }));
    const volumeMetrics = new ControllerVolumeMetrics(registry);
    const serving = new AbortController();
    const stopServing = (): void => serving.abort();
    signal.addEventListener("abort", stopServing, { once: true });
    try {
      const endpoint = await startSecureServing(
        {
          bindAddress: flags.string("bind-address"),
          port: flags.number("secure-port"),
          certFile: flags.string("tls-cert-file"),
          keyFile: flags.string("tls-private-key-file"),
          alwaysAllowPaths: alwaysAllowPaths(flags),
          auth: { client: reviewClient, attributes: nonResourceAttributes },
          registry,
          healthChecks: { ping: () => undefined },
          host: "kube-controller-manager",
          logger,
        },
        serving.signal,
      );
      if (endpoint) logger.info(0, "serving securely", { url: `${endpoint.url}/metrics` });
      await runControllers(
        {
          client,
          logger,
          controllers: ordered,
          leaderElection: {
            enabled: flags.bool("leader-elect"),
            name: flags.string("leader-elect-resource-name"),
            namespace: flags.string("leader-elect-resource-namespace"),
            leaseDurationMs,
            renewDeadlineMs,
            retryPeriodMs,
          },
          knobs: {
            pvClaimBinderSyncPeriodMs: flags.number("pvclaimbinder-sync-period"),
            pvBinderWorkers: binderWorkers,
            concurrentGcSyncs: gcWorkers,
            concurrentStatefulSetSyncs: statefulSetWorkers,
            concurrentEphemeralVolumeSyncs: ephemeralVolumeWorkers,
            concurrentReplicaSetSyncs: positive("concurrent-replicaset-syncs"),
            concurrentDeploymentSyncs: positive("concurrent-deployment-syncs"),
            concurrentDaemonSetSyncs: positive("concurrent-daemonset-syncs"),
            concurrentJobSyncs: positive("concurrent-job-syncs"),
            featureGates: featureGates(flags),
          },
          onStart: (names) => logger.info(0, "controllers started", { controllers: names }),
          volumeMetrics,
        },
        signal,
      );
    } finally {
      serving.abort();
      signal.removeEventListener("abort", stopServing);
      if (reviewClient !== client) reviewClient.close();
      client.close();
    }
    return 0;
  },
};
