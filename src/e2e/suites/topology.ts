// Upstream's topology suite (test/e2e/storage/testsuites/topology.go): the driver's topologies
// are read from the labels its TopologyKeys name on the ready nodes; a class whose
// allowedTopologies leave one of them out provisions a volume whose pod runs on an allowed node,
// and a pod that must run in the left-out topology is never scheduled.

import { randomInt } from "node:crypto";
import { GVR, type Node, type StorageClass } from "../../api/index.ts";
import type { SuiteImplementation, TestContext } from "../suite.ts";
import { E2eCheckError, E2eSkip } from "../model.ts";
import { podVolume } from "./checks.ts";

type Topology = Readonly<Record<string, string>>;

const sameTopology = (a: Topology, b: Topology): boolean =>
  Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([k, v]) => b[k] === v);

/** Up to `max` distinct topologies of the ready nodes; a node without one of the keys is an error. */
async function currentTopologies(
  context: TestContext,
  keys: readonly string[],
  max: number,
): Promise<Topology[]> {
  const found: Topology[] = [];
  for (const name of context.nodes) {
    const node = await context.client.get<Node>(GVR.nodes, name);
    const labels = node.metadata?.labels ?? {};
    const topology: Record<string, string> = {};
    for (const key of keys) {
      const value = labels[key];
      if (value === undefined) throw new E2eCheckError(`node ${name} lacks the topology label ${key}`);
      topology[key] = value;
    }
    if (!found.some((seen) => sameTopology(seen, topology))) found.push(topology);
    if (found.length >= max) break;
  }
  return found;
}

interface Setup {
  all: Topology[];
  allowedCount: number;
}

async function setup(context: TestContext): Promise<Setup> {
  const { TopologyKeys: keys, NumAllowedTopologies } = context.driver.DriverInfo;
  if (keys.length === 0) throw new E2eSkip("Driver didn't provide topology keys -- skipping");
  const allowedCount = NumAllowedTopologies > 0 ? NumAllowedTopologies : 1;
  // One more than allowed, when there is one, for the conflicting case.
  const all = await currentTopologies(context, keys, allowedCount + 1);
  if (all.length < allowedCount) throw new E2eSkip("Not enough topologies in cluster -- skipping");
  return { all, allowedCount };
}

/** The class's allowedTopologies: every topology but the excluded one (-1: none). */
function allowedTerms(
  all: readonly Topology[],
  excluded: number,
): NonNullable<StorageClass["allowedTopologies"]> {
  return all
    .filter((_, index) => index !== excluded)
    .map((topology) => ({
      matchLabelExpressions: Object.entries(topology).map(([key, value]) => ({ key, values: [value] })),
    }));
}

async function scheduleWithAllowedTopologies(context: TestContext): Promise<void> {
  const { namespace, client } = context;
  const { all, allowedCount } = await setup(context);
  const excluded = all.length > allowedCount ? randomInt(all.length) : -1;
  const allowed = all.filter((_, index) => index !== excluded);
  const volume = await namespace.createVolume({ class: { allowedTopologies: allowedTerms(all, excluded) } });
  const pod = await namespace.runPod({ volumes: [podVolume(volume)] });
  const nodeName = (await namespace.getPod(pod)).spec?.nodeName ?? "";
  const labels = (await client.get<Node>(GVR.nodes, nodeName)).metadata?.labels ?? {};
  const fits = allowed.some((topology) =>
    Object.entries(topology).some(([key, value]) => labels[key] === value),
  );
  if (!fits)
    throw new E2eCheckError(
      `pod ${pod} runs on node ${nodeName} (labels ${JSON.stringify(labels)}), outside the allowed topologies ${JSON.stringify(allowed)}`,
    );
}

async function conflictingTopologies(context: TestContext): Promise<void> {
  const { namespace } = context;
  const { all, allowedCount } = await setup(context);
  if (all.length < allowedCount + 1) throw new E2eSkip("Not enough topologies in cluster -- skipping");
  const excluded = randomInt(all.length);
  const volume = await namespace.createVolume({ class: { allowedTopologies: allowedTerms(all, excluded) } });
  const required = Object.entries(all[excluded] ?? {}).map(([key, value]) => ({
    key,
    operator: "In",
    values: [value],
  }));
  const pod = await namespace.createPod({
    volumes: [podVolume(volume)],
    mutate: (spec) => {
      spec.spec!.affinity = {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: required }],
          },
        },
      };
    },
  });
  const name = pod.metadata?.name ?? "";
  // With delayed binding the scheduler finds no node the class allows; with immediate binding the
  // volume is provisioned in an allowed topology and no node there fits the pod.
  await namespace.waitFor(`pod ${namespace.name}/${name} to be unschedulable`, "PodStart", async () => {
    const current = await namespace.getPod(name);
    if (current.spec?.nodeName)
      throw new E2eCheckError(`pod ${name} was scheduled to ${current.spec.nodeName}`);
    return current.status?.conditions?.some(
      (condition) =>
        condition.type === "PodScheduled" &&
        condition.status === "False" &&
        condition.reason === "Unschedulable",
    );
  });
}

export const topologyTests: SuiteImplementation = {
  suite: "topology",
  tests: {
    "should provision a volume and schedule a pod with AllowedTopologies": scheduleWithAllowedTopologies,
    "should fail to schedule a pod which has topologies that conflict with AllowedTopologies":
      conflictingTopologies,
  },
};
