// Stand-in for `csikit registrar` while a checkout does not have it: serves the kubelet
// plugin-registration API on <root>/plugins_registry/<driver>-reg.sock from the `up` process,
// answering GetInfo as node-driver-registrar does (CSIPlugin, the driver's socket, versions
// ["1.0.0"]). Once the registrar exists, `up` runs it instead (components.ts).

import { join } from "node:path";
import { serveCsi, type CsiServer } from "../csi/index.ts";
import type { Logger } from "../base/index.ts";

export async function serveRegistration(options: {
  registrationDir: string;
  driverName: string;
  endpoint: string;
  logger: Logger;
}): Promise<CsiServer> {
  return serveCsi({
    endpoint: join(options.registrationDir, `${options.driverName}-reg.sock`),
    registration: {
      getInfo: () =>
        Promise.resolve({
          type: "CSIPlugin",
          name: options.driverName,
          endpoint: options.endpoint,
          supportedVersions: ["1.0.0"],
        }),
      notifyRegistrationStatus: (request) => {
        if (!request.pluginRegistered)
          options.logger.warn("kubelet refused the driver's registration", { error: request.error });
        return Promise.resolve({});
      },
    },
    shutdownGraceMs: 1000,
  });
}
