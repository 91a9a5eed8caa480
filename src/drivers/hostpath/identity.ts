// The Identity service: who the plugin is, what it offers, and whether it is ready.

import type { IdentityService, PluginCapabilityInput } from "../../csi/index.ts";
import type { HostpathConfig } from "./driver.ts";

export function identityHandlers(config: HostpathConfig, ready: () => boolean): IdentityService {
  return {
    getPluginInfo: () =>
      Promise.resolve({ name: config.driverName, vendorVersion: config.vendorVersion, manifest: {} }),

    getPluginCapabilities() {
      const capabilities: PluginCapabilityInput[] = [];
      if (config.controllerService) {
        capabilities.push({ service: { type: "CONTROLLER_SERVICE" } });
        capabilities.push({ service: { type: "GROUP_CONTROLLER_SERVICE" } });
        if (config.enableTopology)
          capabilities.push({ service: { type: "VOLUME_ACCESSIBILITY_CONSTRAINTS" } });
        // ONLINE as upstream: a published volume may grow (block via losetup -c on the node).
        if (config.controllerExpansion) capabilities.push({ volumeExpansion: { type: "ONLINE" } });
        // Served beside the controller, which owns the snapshots.
        if (config.enableSnapshotMetadata)
          capabilities.push({ service: { type: "SNAPSHOT_METADATA_SERVICE" } });
      }
      return Promise.resolve({ capabilities });
    },

    probe: () => Promise.resolve({ ready: { value: ready() } }),
  };
}
