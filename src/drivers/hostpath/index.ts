// The hostpath reference CSI driver: volumes are directories (or sparse files on loop devices
// for block) under a state dir, with real bind mounts on the node.
export { startHostpathDriver, serveHostpathDriver } from "./server.ts";
export type { HostpathServer, HostpathServerOptions } from "./server.ts";
export {
  HostpathConfig,
  DEFAULT_DRIVER_NAME,
  DEFAULT_ENDPOINT,
  DEFAULT_MAX_VOLUME_SIZE,
  DEFAULT_MUTABLE_PARAMETERS,
  DEFAULT_ALLOWED_PATH_ROOTS,
  TOPOLOGY_KEY_NODE,
  STORAGE_KIND_PARAMETER,
  EPHEMERAL_CONTEXT_KEY,
  type HostpathOptions,
} from "./driver.ts";
