// What the provisioner learned about its driver at start-up (README "CSI error and timeout
// handling": Probe until ready, then GetPluginInfo, GetPluginCapabilities and
// ControllerGetCapabilities — any error there is fatal) and, in node deployment, the local
// node's topology from NodeGetInfo.

import type { CsiClient } from "../../csi/index.ts";
import { CsikitError } from "../../base/index.ts";

export interface DriverInfo {
  name: string;
  /** VOLUME_ACCESSIBILITY_CONSTRAINTS and the Topology gate. */
  topology: boolean;
  singleNodeMultiWriter: boolean;
  cloneVolume: boolean;
  snapshots: boolean;
  getCapacity: boolean;
  /** Node deployment: NodeGetInfo's accessible_topology segments ({} when none). */
  localTopology: Record<string, string>;
}

export async function discoverDriver(
  client: CsiClient,
  options: { timeoutMs: number; topologyGate: boolean; nodeDeployment: boolean; signal: AbortSignal },
): Promise<DriverInfo> {
  await client.waitForReady({ signal: options.signal });
  const call = { timeoutMs: options.timeoutMs, signal: options.signal };
  const info = await client.identity.getPluginInfo({}, call);
  if (info.name === "")
    throw new CsikitError("CSIKIT_ERR_DRIVER", "driver returned an empty name from GetPluginInfo");
  const plugin = await client.pluginCapabilities(call);
  if (!plugin.has("CONTROLLER_SERVICE"))
    throw new CsikitError(
      "CSIKIT_ERR_DRIVER",
      `driver ${info.name} does not offer the CONTROLLER_SERVICE plugin capability`,
    );
  const controller = await client.controllerCapabilities(call);
  if (!controller.has("CREATE_DELETE_VOLUME"))
    throw new CsikitError("CSIKIT_ERR_DRIVER", `driver ${info.name} does not support CREATE_DELETE_VOLUME`);
  let localTopology: Record<string, string> = {};
  if (options.nodeDeployment) {
    const node = await client.node.nodeGetInfo({}, call);
    localTopology = { ...(node.accessibleTopology?.segments ?? {}) };
  }
  return {
    name: info.name,
    topology: options.topologyGate && plugin.has("VOLUME_ACCESSIBILITY_CONSTRAINTS"),
    singleNodeMultiWriter: controller.has("SINGLE_NODE_MULTI_WRITER"),
    cloneVolume: controller.has("CLONE_VOLUME"),
    snapshots: controller.has("CREATE_DELETE_SNAPSHOT"),
    getCapacity: controller.has("GET_CAPACITY"),
    localTopology,
  };
}
