// What the attacher learns about its driver at start-up, as upstream's main does: Probe until
// ready, GetPluginInfo, GetPluginCapabilities and (with a controller service)
// ControllerGetCapabilities. Any error there is fatal (the CLI exits non-zero and the
// orchestrator restarts it). The capabilities pick the handler: without CONTROLLER_SERVICE or
// PUBLISH_UNPUBLISH_VOLUME attaching is only recording it (the trivial handler).

import { CsikitError } from "../../base/index.ts";
import type { CsiClient } from "../../csi/index.ts";

export interface AttacherDriverInfo {
  name: string;
  /** CONTROLLER_SERVICE and PUBLISH_UNPUBLISH_VOLUME: ControllerPublish/Unpublish are called. */
  publishUnpublish: boolean;
  /** PUBLISH_READONLY: without it `readonly` is always false (the spec says the CO MUST). */
  publishReadonly: boolean;
  /** LIST_VOLUMES and LIST_VOLUMES_PUBLISHED_NODES: the --reconcile-sync loop runs. */
  listVolumesPublishedNodes: boolean;
  /** SINGLE_NODE_MULTI_WRITER: the finer single-node access modes. */
  singleNodeMultiWriter: boolean;
}

export async function discoverAttacherDriver(
  client: CsiClient,
  options: { timeoutMs: number; signal: AbortSignal },
): Promise<AttacherDriverInfo> {
  await client.waitForReady({ signal: options.signal });
  const call = { timeoutMs: options.timeoutMs, signal: options.signal };
  const info = await client.identity.getPluginInfo({}, call);
  if (info.name === "")
    throw new CsikitError("CSIKIT_ERR_DRIVER", "driver returned an empty name from GetPluginInfo");
  const plugin = await client.pluginCapabilities(call);
  const controller = plugin.has("CONTROLLER_SERVICE")
    ? await client.controllerCapabilities(call)
    : new Set<string>();
  return {
    name: info.name,
    publishUnpublish: controller.has("PUBLISH_UNPUBLISH_VOLUME"),
    publishReadonly: controller.has("PUBLISH_READONLY"),
    listVolumesPublishedNodes:
      controller.has("LIST_VOLUMES") && controller.has("LIST_VOLUMES_PUBLISHED_NODES"),
    singleNodeMultiWriter: controller.has("SINGLE_NODE_MULTI_WRITER"),
  };
}
