// The kubelet's storage_operation_duration_seconds for the volume operations of a node, with
// its names and labels (volume_plugin "kubernetes.io/csi:<driver>", operation_name, status
// success|fail, migrated). The kubelet's "volume_mount" is one operation that stages (when the
// driver stages) and publishes: here stage and publish are two steps, so a failed stage counts
// as a failed volume_mount and a publish as the volume_mount that completes it; unpublish is
// "volume_unmount", unstage "unmount_device", node expansion "volume_fs_resize".

import { Histogram, type Registry } from "../kube/index.ts";
import type { CsiVolumePlugin } from "./csi-volume.ts";
import type { RegisteredDriver } from "./drivers.ts";

/** The kubelet's buckets for this histogram. */
const BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600];

type Operation = "volume_mount" | "volume_unmount" | "unmount_device" | "volume_fs_resize";

/** Which plugin method is which kubelet operation, and where its driver argument is. */
const METHODS: readonly {
  method: "stage" | "publish" | "unpublish" | "unstage" | "expand";
  operation: Operation;
  driverArg: number;
  recordSuccess: boolean;
}[] = [
  { method: "stage", operation: "volume_mount", driverArg: 1, recordSuccess: false },
  { method: "publish", operation: "volume_mount", driverArg: 1, recordSuccess: true },
  { method: "unpublish", operation: "volume_unmount", driverArg: 1, recordSuccess: true },
  { method: "unstage", operation: "unmount_device", driverArg: 1, recordSuccess: true },
  { method: "expand", operation: "volume_fs_resize", driverArg: 2, recordSuccess: true },
];

/** Times every volume operation of `plugin` into `registry` (the plugin's methods are wrapped in place). */
export function instrumentVolumeOperations(plugin: CsiVolumePlugin, registry: Registry): void {
  const histogram = new Histogram({
    name: "storage_operation_duration_seconds",
    help: "Storage operation duration",
    labelNames: ["volume_plugin", "operation_name", "status", "migrated"],
    buckets: BUCKETS,
    registers: [registry],
  });
  for (const { method, operation, driverArg, recordSuccess } of METHODS) {
    const original = (plugin[method] as (...args: unknown[]) => Promise<unknown>).bind(plugin);
    const timed = async (...args: unknown[]): Promise<unknown> => {
      const driver = args[driverArg] as RegisteredDriver | undefined;
      const labels = {
        volume_plugin: `kubernetes.io/csi:${driver?.name ?? ""}`,
        operation_name: operation,
        migrated: "false",
      };
      const started = performance.now();
      try {
        const result = await original(...args);
        if (recordSuccess)
          histogram.observe({ ...labels, status: "success" }, (performance.now() - started) / 1000);
        return result;
      } catch (error) {
        histogram.observe({ ...labels, status: "fail" }, (performance.now() - started) / 1000);
        throw error;
      }
    };
    Object.defineProperty(plugin, method, { value: timed, configurable: true, writable: true });
  }
}
