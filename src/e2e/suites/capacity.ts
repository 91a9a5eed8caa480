// Upstream's capacity suite (test/e2e/storage/testsuites/capacity.go): once a class of the driver
// exists, CSIStorageCapacity objects for it appear — with a single topology key, exactly one per
// value of that key among the nodes the driver runs on (CSINode), each selecting only that value —
// and once the class is deleted they go away.

import { GVR, type CSINode, type CSIStorageCapacity, type Node } from "../../api/index.ts";
import type { SuiteImplementation, TestContext } from "../suite.ts";
import { E2eCheckError } from "../model.ts";

/** Upstream polls for a minute. */
const CAPACITY_WAIT_MS = 60_000;

async function capacitiesOf(context: TestContext, className: string): Promise<CSIStorageCapacity[]> {
  const list = await context.client.list<CSIStorageCapacity>(GVR.csiStorageCapacities);
  return list.items.filter((capacity) => capacity.storageClassName === className);
}

/** The values of the topology key on the nodes whose CSINode lists the driver. */
async function driverTopologyValues(context: TestContext, driver: string, key: string): Promise<Set<string>> {
  const values = new Set<string>();
  const csiNodes = await context.client.list<CSINode>(GVR.csiNodes);
  for (const csiNode of csiNodes.items) {
    if (!csiNode.spec.drivers.some((entry) => entry.name === driver)) continue;
    const name = csiNode.metadata?.name ?? "";
    const value = (await context.client.get<Node>(GVR.nodes, name)).metadata?.labels?.[key];
    if (value === undefined || value === "")
      throw new E2eCheckError(
        `driver ${driver} runs on node ${name}, but its topology label ${key} is not set`,
      );
    values.add(value);
  }
  if (values.size === 0) throw new E2eCheckError(`driver ${driver} is not running on any node`);
  return values;
}

/** Why the capacities do not yet match (undefined: they do). */
async function mismatch(
  context: TestContext,
  driver: string,
  className: string,
  key: string | undefined,
): Promise<string | undefined> {
  const capacities = await capacitiesOf(context, className);
  if (capacities.length === 0) return `no CSIStorageCapacity objects for storage class ${className}`;
  if (key === undefined) return undefined;
  const remaining = await driverTopologyValues(context, driver, key);
  const unexpected: string[] = [];
  for (const capacity of capacities) {
    const selector = capacity.nodeTopology;
    const labels = selector?.matchLabels ?? {};
    const value = labels[key];
    if (
      selector === undefined ||
      (selector.matchExpressions?.length ?? 0) > 0 ||
      Object.keys(labels).length !== 1 ||
      value === undefined ||
      !remaining.has(value)
    )
      unexpected.push(`${capacity.metadata?.name} (nodeTopology ${JSON.stringify(selector ?? null)})`);
    else remaining.delete(value);
  }
  const problems = [
    ...(unexpected.length > 0 ? [`unexpected CSIStorageCapacity objects: ${unexpected.join(", ")}`] : []),
    ...(remaining.size > 0
      ? [`no CSIStorageCapacity objects with topology key ${key} and values ${[...remaining].join(", ")}`]
      : []),
  ];
  return problems.length > 0 ? problems.join("; ") : undefined;
}

async function providesCapacity(context: TestContext): Promise<void> {
  const { namespace, driver } = context;
  const storageClass = await namespace.createClass();
  const className = storageClass.metadata?.name ?? "";
  const provisioner = storageClass.provisioner;
  const keys = driver.DriverInfo.TopologyKeys;
  const key = keys.length === 1 ? keys[0] : undefined;
  let last: string | undefined;
  try {
    await namespace.waitFor(
      `CSIStorageCapacity objects for class ${className}`,
      CAPACITY_WAIT_MS,
      async () => {
        last = await mismatch(context, provisioner, className, key);
        return last === undefined;
      },
      1000,
    );
  } catch (error) {
    if (last !== undefined) throw new E2eCheckError(`after creating storage class: ${last}`);
    throw error;
  }
  await namespace.deleteAndWait(GVR.storageClasses, className);
  try {
    await namespace.waitFor(
      `the CSIStorageCapacity objects of class ${className} to go`,
      CAPACITY_WAIT_MS,
      async () => {
        return (await capacitiesOf(context, className)).length === 0;
      },
      1000,
    );
  } catch (error) {
    const left = await capacitiesOf(context, className);
    if (left.length > 0)
      throw new E2eCheckError(
        `after deleting storage class: CSIStorageCapacity objects for storage class ${className} remain: ${left.map((c) => c.metadata?.name).join(", ")}`,
      );
    throw error;
  }
}

export const capacityTests: SuiteImplementation = {
  suite: "capacity",
  tests: { "provides storage capacity information": providesCapacity },
};
