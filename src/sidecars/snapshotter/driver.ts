// What the snapshotter learns about its driver at start-up, as csi-snapshotter's main does:
// Probe until ready, GetPluginInfo, ControllerGetCapabilities — without CREATE_DELETE_SNAPSHOT
// the sidecar refuses to run (fatal, as upstream) — and, with the CSIVolumeGroupSnapshot gate,
// GroupControllerGetCapabilities, whose failure or absence is only a warning (group contents
// then fail one by one, as upstream). The status checks use GetSnapshot when the driver offers
// it (CSI 1.12 GET_SNAPSHOT), else ListSnapshots filtered by ID (LIST_SNAPSHOTS), else nothing:
// a pre-provisioned handle is then taken as ready, as upstream does.

import { CsikitError, errorMessage, type Logger } from "../../base/index.ts";
import type { CsiClient } from "../../csi/index.ts";

export interface SnapshotterDriverInfo {
  name: string;
  /** GET_SNAPSHOT (CSI 1.12, alpha): status checks call GetSnapshot. */
  getSnapshot: boolean;
  /** LIST_SNAPSHOTS: status checks call ListSnapshots with snapshot_id. */
  listSnapshots: boolean;
  /** GroupController CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT. */
  groupSnapshots: boolean;
}

export async function discoverSnapshotterDriver(
  client: CsiClient,
  options: { timeoutMs: number; signal: AbortSignal; groupSnapshots: boolean; logger: Logger },
): Promise<SnapshotterDriverInfo> {
  await client.waitForReady({ signal: options.signal });
  const call = { timeoutMs: options.timeoutMs, signal: options.signal };
  const info = await client.identity.getPluginInfo({}, call);
  if (info.name === "")
    throw new CsikitError("CSIKIT_ERR_DRIVER", "driver returned an empty name from GetPluginInfo");
  const controller = await client.controllerCapabilities(call);
  if (!controller.has("CREATE_DELETE_SNAPSHOT"))
    throw new CsikitError(
      "CSIKIT_ERR_DRIVER",
      `CSI driver ${info.name} does not support ControllerCreateSnapshot`,
    );
  let groupSnapshots = false;
  if (options.groupSnapshots) {
    try {
      groupSnapshots = (await client.groupControllerCapabilities(call)).has(
        "CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT",
      );
      if (!groupSnapshots)
        options.logger.warn(
          `CSI driver ${info.name} does not support GroupControllerCreateVolumeGroupSnapshot when the --feature-gates=CSIVolumeGroupSnapshot=true flag is set`,
        );
    } catch (error) {
      options.logger.error("error determining if driver supports create/delete group snapshot operations", {
        err: errorMessage(error),
      });
    }
  }
  return {
    name: info.name,
    getSnapshot: controller.has("GET_SNAPSHOT"),
    listSnapshots: controller.has("LIST_SNAPSHOTS"),
    groupSnapshots,
  };
}
