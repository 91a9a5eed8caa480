// Upstream's subPath suite (test/e2e/storage/testsuites/subpath.go): a container mounts a
// directory or a file of the volume (volumeMounts[].subPath) and sees what another container,
// mounting the whole volume, wrote there and the other way round; a subPath leading out of the
// volume (a symlink to /bin, to a file or a missing path outside, "../") fails the container
// with a subPath error; readOnly on the mount or on the volume source holds; containers restart
// on a subPath mount; and the volume is released when the pod goes (deleted while the node agent
// is down, or after the subPath directory was removed under the running container).
//
// The test pod has the shape of upstream's: the volume and an emptyDir ("probe") volume; up to
// three init containers (one mounting the whole volume to prepare it, one mounting the subPath,
// one the whole volume again) and up to two containers (0: the subPath, 1: the whole volume).
// Containers without a command are left out. Upstream's mounttest writes and reads files; here a
// shell does the same, and a read succeeds only with the expected content.

import type {
  Container,
  ContainerStatus,
  Node,
  PersistentVolume,
  Pod,
  VolumeAttachment,
  VolumeMount,
} from "../../api/index.ts";
import { GVR } from "../../api/index.ts";
import { execInPod } from "../../kube/index.ts";
import { E2eCheckError, E2eSkip } from "../model.ts";
import type { VolumeResource } from "../resources.ts";
import type { SuiteImplementation, TestBody, TestContext } from "../suite.ts";

const VOLUME_PATH = "/test-volume";
const PROBE_PATH = "/probe-volume";
const PROBE_FILE = `${PROBE_PATH}/probe-file`;
const FILE_NAME = "test-file";
const CONTENT = "mount-tester new file";
const VOLUME = "test-volume";
const PROBE = "liveness-probe-volume";
const SLEEP = "trap 'exit 0' TERM; while true; do sleep 1; done";

/** Where things are: the subPath (named after the namespace, as upstream), seen from both sides. */
interface Layout {
  subPath: string;
  /** The subPath's directory (or file) as a whole-volume container sees it. */
  subPathDir: string;
  /** The test file inside the subPath, as the subPath container sees it. */
  fileInSubpath: string;
  /** The same file, as a whole-volume container sees it. */
  fileInVolume: string;
}

function layoutOf(context: TestContext): Layout {
  const subPath = context.namespace.name;
  const subPathDir = `${VOLUME_PATH}/${subPath}`;
  return {
    subPath,
    subPathDir,
    fileInSubpath: `${VOLUME_PATH}/${FILE_NAME}`,
    fileInVolume: `${subPathDir}/${FILE_NAME}`,
  };
}

interface PodPlan {
  /** Init container 0 (whole volume): prepares the volume. */
  init?: string;
  /** Init container 1 (the subPath). */
  initSubpath?: string;
  /** Init container 2 (whole volume). */
  initVolume?: string;
  /** Container 0 (the subPath); always there, exiting at once when not set (upstream's idle mounttest). */
  subpath?: string;
  /** Container 1 (whole volume); left out when not set. */
  volume?: string;
  subpathReadOnly?: boolean;
  /** Further mounts of container 0. */
  extraMounts?: VolumeMount[];
  /** The volume source; default the test's volume. */
  readOnlySource?: boolean;
  restartPolicy?: "Never" | "OnFailure";
  gracePeriod?: number;
  liveness?: boolean;
}

const sh = (command: string): string[] => ["sh", "-c", command];
const writeCommand = (file: string): string =>
  `echo '${CONTENT}' > ${file} && chmod 0644 ${file} && echo "mode of file \\"${file}\\": $(stat -c %A ${file})"`;
const readCommand = (file: string): string =>
  `c=$(cat ${file}) && echo "content of file \\"${file}\\": $c" && [ "$c" = '${CONTENT}' ]`;

/** The container names, indexed as upstream's. */
const CONTAINERS = ["test-container-subpath", "test-container-volume"] as const;

function buildPod(pod: Pod, volume: VolumeResource, layout: Layout, plan: PodPlan): void {
  const whole: VolumeMount = { name: VOLUME, mountPath: VOLUME_PATH };
  const sub: VolumeMount = { name: VOLUME, mountPath: VOLUME_PATH, subPath: layout.subPath };
  const probe: VolumeMount = { name: PROBE, mountPath: PROBE_PATH };
  const container = (name: string, command: string, mounts: VolumeMount[]): Container => ({
    name,
    image: pod.spec?.containers[0]?.image ?? "",
    command: sh(command),
    volumeMounts: mounts,
  });
  const inits: Container[] = [];
  if (plan.init !== undefined) inits.push(container("init-volume", plan.init, [whole, probe]));
  if (plan.initSubpath !== undefined)
    inits.push(container("test-init-subpath", plan.initSubpath, [sub, probe]));
  if (plan.initVolume !== undefined)
    inits.push(container("test-init-volume", plan.initVolume, [whole, probe]));
  const first = container(CONTAINERS[0], plan.subpath ?? "true", [
    { ...sub, ...(plan.subpathReadOnly ? { readOnly: true } : {}) },
    probe,
    ...(plan.extraMounts ?? []),
  ]);
  if (plan.liveness)
    first.livenessProbe = {
      exec: { command: ["cat", PROBE_FILE] },
      initialDelaySeconds: 1,
      failureThreshold: 1,
      periodSeconds: 2,
    };
  const containers = [first];
  if (plan.volume !== undefined) containers.push(container(CONTAINERS[1], plan.volume, [whole, probe]));
  const source = plan.readOnlySource
    ? { persistentVolumeClaim: { claimName: volume.claimName ?? "", readOnly: true } }
    : volume.source;
  const spec = pod.spec!;
  spec.initContainers = inits;
  spec.containers = containers;
  spec.restartPolicy = plan.restartPolicy ?? "Never";
  spec.terminationGracePeriodSeconds = plan.gracePeriod ?? 1;
  spec.volumes = [
    { name: VOLUME, ...source },
    { name: PROBE, emptyDir: {} },
  ];
}

async function createSubpathPod(
  context: TestContext,
  volume: VolumeResource,
  layout: Layout,
  plan: PodPlan,
): Promise<string> {
  const pod = await context.namespace.createPod({
    name: context.namespace.nextName("pod-subpath-test"),
    mutate: (p) => buildPod(p, volume, layout, plan),
  });
  return pod.metadata?.name ?? "";
}

const stateOf = (status: ContainerStatus | undefined): string =>
  status ? JSON.stringify(status.state ?? {}) : "no status";

function describeContainers(pod: Pod): string {
  const all = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  return all.map((status) => `${status.name}: ${stateOf(status)}`).join("; ") || "no container status";
}

/** Runs the pod to its end: it must succeed (every container exited 0), as upstream's TestContainerOutput. */
async function runToSuccess(context: TestContext, volume: VolumeResource, layout: Layout, plan: PodPlan) {
  const { namespace } = context;
  const name = await createSubpathPod(context, volume, layout, plan);
  const ended = await namespace.waitEnded(name);
  if (ended.status?.phase !== "Succeeded")
    throw new E2eCheckError(`pod ${name} ended ${ended.status?.phase}: ${describeContainers(ended)}`);
  await namespace.deletePod(name);
}

/** Reads the test file in container `index` (upstream's testReadFile). */
function readIn(plan: PodPlan, file: string, index: 0 | 1): PodPlan {
  return index === 0 ? { ...plan, subpath: readCommand(file) } : { ...plan, volume: readCommand(file) };
}

/**
 * The subPath container must fail on its subPath: waiting in CreateContainerConfigError with a
 * message naming the subPath, or (allowTermination) ended with a non-zero code (upstream's
 * waitForPodSubpathError).
 */
async function expectSubpathFailure(
  context: TestContext,
  volume: VolumeResource,
  layout: Layout,
  plan: PodPlan,
  allowTermination: boolean,
): Promise<void> {
  const { namespace } = context;
  const name = await createSubpathPod(context, volume, layout, plan);
  const outcome = await namespace.waitFor(
    `container ${CONTAINERS[0]} of pod ${name} to fail on its subPath`,
    "PodStart",
    async () => {
      const pod = await namespace.getPod(name);
      const status = pod.status?.containerStatuses?.find((s) => s.name === CONTAINERS[0]);
      const terminated = status?.state?.terminated;
      if (terminated !== undefined) {
        const code = Number(terminated.exitCode ?? 0);
        return { ok: code !== 0 && allowTermination, detail: stateOf(status) };
      }
      const waiting = status?.state?.waiting;
      if (
        waiting?.reason === "CreateContainerConfigError" &&
        (typeof waiting?.message === "string" ? waiting.message : "").includes("subPath")
      )
        return { ok: true, detail: "" };
      return undefined;
    },
  );
  if (!outcome.ok) throw new E2eCheckError(`subpath container unexpectedly terminated: ${outcome.detail}`);
  await namespace.deletePod(name);
}

/** Runs a shell command in one container of a pod (upstream's podContainerExec). */
async function execIn(context: TestContext, pod: string, index: 0 | 1, command: string): Promise<string> {
  const result = await execInPod(context.client, context.namespace.name, pod, sh(command), {
    container: CONTAINERS[index],
    timeoutMs: context.timeouts.Exec,
    signal: context.signal,
  });
  if (result.code !== 0)
    throw new E2eCheckError(
      `in container ${CONTAINERS[index]} of pod ${pod}: ${JSON.stringify(command)} exited ${result.code}: ${result.stderr.trim() || result.stdout.trim()}`,
    );
  return result.stdout;
}

async function setup(context: TestContext): Promise<{ volume: VolumeResource; layout: Layout }> {
  const volume = await context.namespace.createVolume();
  return { volume, layout: layoutOf(context) };
}

/** A read-only source of the volume: a claim's (upstream has one for PVC-backed patterns only). */
function requireReadOnlySource(context: TestContext, volume: VolumeResource): void {
  if (volume.claimName === undefined)
    throw new E2eSkip(
      `Driver ${context.driver.DriverInfo.Name} on volume type ${context.pattern.volType} doesn't support readOnly source`,
    );
}

function restartCountOf(pod: Pod): number {
  return pod.status?.containerStatuses?.find((s) => s.name === CONTAINERS[0])?.restartCount ?? 0;
}

/** upstream's testPodContainerRestart: a failing liveness probe restarts the subPath container, which comes back and stays. */
async function containerRestart(context: TestContext, init: string): Promise<void> {
  const { namespace } = context;
  const { volume, layout } = await setup(context);
  const name = await createSubpathPod(context, volume, layout, {
    init,
    subpath: "while true; do sleep 1; done",
    volume: SLEEP,
    restartPolicy: "OnFailure",
    liveness: true,
  });
  await namespace.waitFor(`pod ${name} to be running and ready`, "PodStart", async () => {
    const pod = await namespace.getPod(name);
    if (pod.status?.phase === "Failed" || pod.status?.phase === "Succeeded")
      throw new E2eCheckError(`pod ${name} ended: ${describeContainers(pod)}`);
    return pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ? pod : undefined;
  });
  // Failing the liveness probe: the probe file goes.
  await execIn(context, name, 1, `rm ${PROBE_FILE}`);
  const restarts = restartCountOf(
    await namespace.waitFor(
      `container ${CONTAINERS[0]} of pod ${name} to restart`,
      context.timeouts.PodDelete + context.timeouts.PodStart,
      async () => {
        const pod = await namespace.getPod(name);
        return restartCountOf(pod) > 0 ? pod : undefined;
      },
      1000,
    ),
  );
  // Fixing the probe: the container must come back running on its subPath and stop restarting.
  await execIn(context, name, 1, `echo test-after > ${PROBE_FILE}`);
  let last = restarts;
  let stableSince = Date.now();
  await namespace.waitFor(
    `container ${CONTAINERS[0]} of pod ${name} to stop restarting`,
    "PodStartSlow",
    async () => {
      const pod = await namespace.getPod(name);
      const count = restartCountOf(pod);
      const running =
        pod.status?.containerStatuses?.find((s) => s.name === CONTAINERS[0])?.state?.running !== undefined;
      if (count !== last || !running) {
        last = count;
        stableSince = Date.now();
        return undefined;
      }
      // Upstream waits for a minute of no new restart; a probe period is 2 s, so a quarter of it
      // is more than ample for a probe still failing to show.
      return Date.now() - stableSince >= 15_000 ? true : undefined;
    },
    1000,
  );
  await execIn(context, name, 0, `test -d ${VOLUME_PATH} || test -f ${VOLUME_PATH}`);
}

/** kubernetes.io/csi/<driver>^<handle>: how node.status.volumesInUse names a CSI volume. */
const uniqueName = (pv: PersistentVolume): string =>
  `kubernetes.io/csi/${pv.spec?.csi?.driver ?? ""}^${pv.spec?.csi?.volumeHandle ?? ""}`;

/**
 * upstream's testSubpathReconstruction: the pod (subPath and whole-volume containers) is deleted
 * while its node agent is down; once the agent is back the pod goes and its volume is released.
 * Upstream looks at the node's mounts over SSH; here what the cluster shows: the node no longer
 * reports the volume in use, and no VolumeAttachment of it remains to the node.
 */
async function reconstruction(context: TestContext, force: boolean): Promise<void> {
  const { namespace, processes, client } = context;
  if (!processes)
    throw new E2eSkip(
      "the node agents of this cluster cannot be stopped (upstream needs an SSH key to the nodes)",
    );
  const { volume, layout } = await setup(context);
  const name = await createSubpathPod(context, volume, layout, {
    subpath: SLEEP,
    volume: SLEEP,
    gracePeriod: 30,
  });
  const running = await namespace.waitRunning(name);
  const node = running.spec?.nodeName ?? "";
  const pv = volume.claimName ? await namespace.waitBound(volume.claimName) : undefined;
  await execIn(context, name, 0, `test -d ${VOLUME_PATH}`);
  await processes.stopNodeAgent(node);
  try {
    await namespace.deletePod(name, { force, wait: false });
  } finally {
    await processes.startNodeAgent(node);
  }
  await namespace.waitGone(GVR.pods, name, namespace.name);
  if (!pv) return;
  const unique = uniqueName(pv);
  const pvName = pv.metadata?.name ?? "";
  await namespace.waitFor(`node ${node} to release volume ${pvName}`, "PodDelete", async () => {
    const nodeObject = await client.get<Node>(GVR.nodes, node);
    if ((nodeObject.status?.volumesInUse ?? []).includes(unique)) return undefined;
    const attachments = await client.list<VolumeAttachment>(GVR.volumeAttachments);
    const attached = attachments.items.some(
      (a) => a.spec?.nodeName === node && a.spec?.source?.persistentVolumeName === pvName,
    );
    return attached ? undefined : true;
  });
}

/** A test whose pod, prepared by `plan`, reads the test file in container `index` (upstream's testReadFile). */
const readTest =
  (plan: (layout: Layout) => PodPlan, file: (layout: Layout) => string, index: 0 | 1): TestBody =>
  async (context) => {
    const { volume, layout } = await setup(context);
    await runToSuccess(context, volume, layout, readIn(plan(layout), file(layout), index));
  };

/** A test whose subPath is a symlink to `target`, out of the volume: the subPath container must fail. */
const outsideTest =
  (target: string): TestBody =>
  async (context) => {
    const { volume, layout } = await setup(context);
    await expectSubpathFailure(
      context,
      volume,
      layout,
      { init: `ln -s ${target} ${layout.subPathDir}` },
      false,
    );
  };

export const subPathTests: SuiteImplementation = {
  suite: "subPath",
  tests: {
    "should support non-existent path": readTest(
      (l) => ({ initSubpath: writeCommand(l.fileInSubpath) }),
      (l) => l.fileInVolume,
      1,
    ),
    "should support existing directory": readTest(
      (l) => ({ init: `mkdir -p ${l.subPathDir}`, initSubpath: writeCommand(l.fileInSubpath) }),
      (l) => l.fileInVolume,
      1,
    ),
    "should support existing single file [LinuxOnly]": readTest(
      (l) => ({ init: `mkdir -p ${l.subPathDir}; echo '${CONTENT}' > ${l.fileInVolume}` }),
      (l) => l.fileInSubpath,
      0,
    ),
    "should support file as subpath [LinuxOnly]": async (context) => {
      const { volume, layout } = await setup(context);
      const text = context.namespace.name;
      await runToSuccess(context, volume, layout, {
        init: `echo ${text} > ${layout.subPathDir}`,
        subpath: `c=$(cat ${VOLUME_PATH}) && echo "$c" && [ "$c" = '${text}' ]`,
      });
    },
    "should fail if subpath directory is outside the volume": outsideTest("/bin"),
    "should fail if subpath file is outside the volume": outsideTest("/bin/sh"),
    "should fail if non-existent subpath is outside the volume": outsideTest("/bin/notanexistingpath"),
    "should fail if subpath with backstepping is outside the volume": outsideTest("../"),
    "should support creating multiple subpath from same volumes": async (context) => {
      const { volume, layout } = await setup(context);
      const file1 = `/test-subpath1/${FILE_NAME}`;
      const file2 = `/test-subpath2/${FILE_NAME}`;
      await runToSuccess(context, volume, layout, {
        init: `mkdir -p ${VOLUME_PATH}/subpath1; mkdir -p ${VOLUME_PATH}/subpath2`,
        extraMounts: [
          { name: VOLUME, mountPath: "/test-subpath1", subPath: "subpath1" },
          { name: VOLUME, mountPath: "/test-subpath2", subPath: "subpath2" },
        ],
        subpath: `${writeCommand(file1)} && ${writeCommand(file2)} && chmod 0666 ${file2} && ${readCommand(file1)} && ${readCommand(file2)}`,
      });
    },
    "should support restarting containers using directory as subpath": async (context) => {
      const { subPathDir } = layoutOf(context);
      await containerRestart(context, `mkdir -p ${subPathDir}; touch ${PROBE_FILE}`);
    },
    "should support restarting containers using file as subpath": async (context) => {
      const { subPathDir } = layoutOf(context);
      await containerRestart(context, `touch ${subPathDir}; touch ${PROBE_FILE}`);
    },
    "should unmount if pod is gracefully deleted while kubelet is down": (context) =>
      reconstruction(context, false),
    "should unmount if pod is force deleted while kubelet is down": (context) =>
      reconstruction(context, true),
    "should support readOnly directory specified in the volumeMount": readTest(
      (l) => ({
        init: `mkdir -p ${l.subPathDir}`,
        initVolume: writeCommand(l.fileInVolume),
        subpathReadOnly: true,
      }),
      (l) => l.fileInSubpath,
      0,
    ),
    "should support readOnly file specified in the volumeMount [LinuxOnly]": readTest(
      (l) => ({
        init: `touch ${l.subPathDir}`,
        initVolume: writeCommand(l.subPathDir),
        subpathReadOnly: true,
      }),
      () => VOLUME_PATH,
      0,
    ),
    "should support existing directories when readOnly specified in the volumeSource": async (context) => {
      const { volume, layout } = await setup(context);
      requireReadOnlySource(context, volume);
      await runToSuccess(
        context,
        volume,
        layout,
        readIn(
          { init: `mkdir -p ${layout.subPathDir}`, initSubpath: writeCommand(layout.fileInSubpath) },
          layout.fileInSubpath,
          0,
        ),
      );
      await runToSuccess(context, volume, layout, readIn({ readOnlySource: true }, layout.fileInSubpath, 0));
    },
    "should verify container cannot write to subpath readonly volumes": async (context) => {
      const { volume, layout } = await setup(context);
      requireReadOnlySource(context, volume);
      // Formats the volume while it is writable (a pod using it once).
      const format = await context.namespace.createPod({
        volumes: [{ source: volume.source, path: "/vol" }],
        command: "echo nothing",
      });
      const formatName = format.metadata?.name ?? "";
      const formatted = await context.namespace.waitEnded(formatName);
      if (formatted.status?.phase !== "Succeeded")
        throw new E2eCheckError(
          `volume init pod ${formatName} ended ${formatted.status?.phase}: ${describeContainers(formatted)}`,
        );
      await context.namespace.deletePod(formatName);
      await expectSubpathFailure(
        context,
        volume,
        layout,
        { readOnlySource: true, subpath: writeCommand(layout.subPathDir) },
        true,
      );
    },
    "should be able to unmount after the subpath directory is deleted [LinuxOnly]": async (context) => {
      const { volume, layout } = await setup(context);
      const name = await createSubpathPod(context, volume, layout, { subpath: SLEEP, volume: SLEEP });
      await context.namespace.waitRunning(name);
      await execIn(context, name, 1, `rm -r ${layout.subPathDir}`);
      await context.namespace.deletePod(name);
    },
  },
};
