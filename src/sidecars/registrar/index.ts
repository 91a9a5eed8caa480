// The registrar sidecar (`csikit registrar`): a drop-in node-driver-registrar. It registers a
// CSI driver with the kubelet (or csikit's virtual node) through the plugin-registration
// socket and needs no Kubernetes API access. See registrar.ts.
export {
  startRegistrar,
  RegistrationRefusedError,
  CSI_PLUGIN_TYPE,
  SUPPORTED_VERSIONS,
} from "./registrar.ts";
export { registrationSocketPath } from "./socket.ts";
export type { RegistrarOptions } from "./options.ts";
export {
  REGISTRAR_FLAGS,
  registrarOptionsFromFlags,
  MODE_REGISTRATION,
  MODE_KUBELET_REGISTRATION_PROBE,
  type RegistrarInvocation,
} from "./flags.ts";
