// What the resizer learns about its driver at start-up (external-resizer's NewResizerFromClient
// and NewModifierFromClient): Probe until ready, GetPluginInfo, then the capabilities. The driver
// must offer CONTROLLER_SERVICE, and at least one of: controller expansion (EXPAND_VOLUME), node
// expansion (then the "trivial resizer" only hands the resize to the node), or — since v2.1.0
// (external-resizer#545) — controller MODIFY_VOLUME alone, in which case only the modify
// controller runs and expansion requests are left to no one, as upstream. Any error is fatal.

import { CsikitError } from "../../base/index.ts";
import type { CsiClient } from "../../csi/index.ts";

export interface ResizerDriverInfo {
  name: string;
  /** Some expansion (controller or node): the resize controller runs. */
  expansion: boolean;
  /** Controller EXPAND_VOLUME: ControllerExpandVolume is called; else the trivial resizer. */
  controllerExpansion: boolean;
  /** Node EXPAND_VOLUME. */
  nodeExpansion: boolean;
  /** Plugin VolumeExpansion ONLINE / OFFLINE (informational: the driver's FAILED_PRECONDITION decides). */
  online: boolean;
  offline: boolean;
  /** Controller MODIFY_VOLUME. */
  modifyVolume: boolean;
  singleNodeMultiWriter: boolean;
}

export async function discoverResizerDriver(
  client: CsiClient,
  options: { timeoutMs: number; signal: AbortSignal },
): Promise<ResizerDriverInfo> {
  await client.waitForReady({ signal: options.signal });
  const call = { timeoutMs: options.timeoutMs, signal: options.signal };
  const info = await client.identity.getPluginInfo({}, call);
  if (info.name === "")
    throw new CsikitError("CSIKIT_ERR_DRIVER", "driver returned an empty name from GetPluginInfo");
  const plugin = await client.pluginCapabilities(call);
  if (!plugin.has("CONTROLLER_SERVICE"))
    throw new CsikitError("CSIKIT_ERR_DRIVER", `CSI driver ${info.name} does not support controller service`);
  const controller = await client.controllerCapabilities(call);
  const controllerExpansion = controller.has("EXPAND_VOLUME");
  const modifyVolume = controller.has("MODIFY_VOLUME");
  let nodeExpansion = false;
  if (!controllerExpansion) {
    // Only asked when needed, as upstream: a controller-only driver may not serve the Node
    // service — and a modify-only one need not serve it at all (an error then means "no").
    try {
      nodeExpansion = (await client.nodeCapabilities(call)).has("EXPAND_VOLUME");
    } catch (error) {
      if (!modifyVolume) throw error;
    }
    if (!nodeExpansion && !modifyVolume)
      throw new CsikitError(
        "CSIKIT_ERR_DRIVER",
        `CSI driver ${info.name} neither supports controller resize nor node resize nor modify volume`,
      );
  }
  return {
    name: info.name,
    expansion: controllerExpansion || nodeExpansion,
    controllerExpansion,
    nodeExpansion,
    online: plugin.has("ONLINE"),
    offline: plugin.has("OFFLINE"),
    modifyVolume,
    singleNodeMultiWriter: controller.has("SINGLE_NODE_MULTI_WRITER"),
  };
}
