// Ordered teardown of the volumes before `csikit up` stops its processes, done the way a
// kubelet's graceful node shutdown does it: every pod still running on the cluster's nodes is
// set to phase Failed (reason Terminated), so the node agents unpublish and unstage its
// volumes and the attach/detach controller detaches them, exactly as for a pod that ended.
// The pods stay (a resumed cluster shows them Failed); their claims and volumes stay bound.

import { readFile } from "node:fs/promises";
import { GVR, type Pod, type VolumeAttachment } from "../api/index.ts";
import { isConflict, isNotFound, type KubeClient } from "../kube/index.ts";

const SHUTDOWN_REASON = "Terminated";
const SHUTDOWN_MESSAGE = "Pod was terminated in response to imminent node shutdown.";

/** Mount points under `dir` in this mount namespace. */
export async function mountsUnder(dir: string): Promise<string[]> {
  const text = await readFile("/proc/self/mountinfo", "utf8");
  return text
    .split("\n")
    .map((line) => (line.split(" ")[4] ?? "").replaceAll("\\040", " "))
    .filter((point) => point.startsWith(dir + "/"));
}

/** Marks the running pods of `nodes` Failed; returns how many it ended. */
export async function endPods(client: KubeClient, nodes: ReadonlySet<string>): Promise<number> {
  const pods = await client.list<Pod>(GVR.pods);
  let count = 0;
  for (const pod of pods.items) {
    const phase = pod.status?.phase;
    if (!pod.spec?.nodeName || !nodes.has(pod.spec.nodeName) || phase === "Succeeded" || phase === "Failed")
      continue;
    const ended: Pod = {
      ...pod,
      status: { ...pod.status, phase: "Failed", reason: SHUTDOWN_REASON, message: SHUTDOWN_MESSAGE },
    };
    try {
      await client.updateStatus(GVR.pods, ended);
      count += 1;
    } catch (error) {
      if (!isNotFound(error) && !isConflict(error)) throw error;
    }
  }
  return count;
}

export interface DrainResult {
  ok: boolean;
  /** What is still there when the deadline passed. */
  left: string[];
}

/**
 * Ends the pods and waits (bounded) until no mount is left under the nodes' dirs and no
 * VolumeAttachment of the driver is left attached.
 */
export async function drainVolumes(options: {
  client: KubeClient;
  nodes: ReadonlySet<string>;
  nodesDir: string;
  driverName: string;
  timeoutMs: number;
}): Promise<DrainResult> {
  const deadline = Date.now() + options.timeoutMs;
  let left: string[] = [];
  while (Date.now() < deadline) {
    // Again each pass: a pod the node agent was still starting may have been written Running after.
    await endPods(options.client, options.nodes);
    const mounts = await mountsUnder(options.nodesDir);
    const attachments = (await options.client.list<VolumeAttachment>(GVR.volumeAttachments)).items.filter(
      (a) => a.spec?.attacher === options.driverName && options.nodes.has(a.spec?.nodeName ?? ""),
    );
    left = [
      ...mounts.map((m) => `mount ${m}`),
      ...attachments.map((a) => `VolumeAttachment ${a.metadata?.name}`),
    ];
    if (left.length === 0) return { ok: true, left };
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return { ok: false, left };
}
