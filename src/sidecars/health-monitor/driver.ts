// What the health monitor learns about its driver at start-up, as upstream's main: Probe until
// ready, GetPluginInfo, then the capabilities. The driver must offer CONTROLLER_SERVICE,
// VOLUME_CONDITION and one of LIST_VOLUMES / GET_VOLUME; otherwise there is nothing to monitor
// and start-up fails (upstream exits 1). Any error is fatal.

import { CsikitError } from "../../base/index.ts";
import type { CsiClient } from "../../csi/index.ts";

export interface HealthMonitorDriverInfo {
  name: string;
  /** LIST_VOLUMES: one ListVolumes per --list-volumes-interval checks every volume (preferred). */
  listVolumes: boolean;
  /** GET_VOLUME: ControllerGetVolume per PV, when ListVolumes is not offered. */
  getVolume: boolean;
}

export async function discoverHealthMonitorDriver(
  client: CsiClient,
  options: { timeoutMs: number; signal: AbortSignal },
): Promise<HealthMonitorDriverInfo> {
  await client.waitForReady({ signal: options.signal });
  const call = { timeoutMs: options.timeoutMs, signal: options.signal };
  const info = await client.identity.getPluginInfo({}, call);
  if (info.name === "")
    throw new CsikitError("CSIKIT_ERR_DRIVER", "driver returned an empty name from GetPluginInfo");
  const plugin = await client.pluginCapabilities(call);
  if (!plugin.has("CONTROLLER_SERVICE"))
    throw new CsikitError(
      "CSIKIT_ERR_DRIVER",
      `CSI driver ${info.name} does not support Plugin Controller Service, exiting`,
    );
  const controller = await client.controllerCapabilities(call);
  const listVolumes = controller.has("LIST_VOLUMES");
  const getVolume = controller.has("GET_VOLUME");
  if ((!listVolumes && !getVolume) || !controller.has("VOLUME_CONDITION"))
    throw new CsikitError(
      "CSIKIT_ERR_DRIVER",
      `CSI driver ${info.name} does not support Controller ListVolumes and GetVolume service or does not implement VolumeCondition, exiting`,
    );
  return { name: info.name, listVolumes, getVolume };
}
