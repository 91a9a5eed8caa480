// What every controller-side handler works with; its own module so controller.ts,
// snapshots.ts and group-controller.ts share it without importing each other in a cycle.

import type { DataLayout } from "./data.ts";
import type { HostpathConfig } from "./driver.ts";
import type { Locks } from "./requests.ts";
import type { ControllerStore } from "./state.ts";

export interface ControllerContext {
  config: HostpathConfig;
  layout: DataLayout;
  store: ControllerStore;
  locks: Locks;
}
