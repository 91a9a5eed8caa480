// The registrar's /healthz, with upstream's answers (node_register.go httpServer): 200 "ok"
// when the registration socket exists and answers GetInfo with this driver's name; 404
// "registration socket does not exist" when it is gone (the kubelet then has no way to find
// the driver, so the container must restart); 500 with the reason when it exists but does not
// answer, or answers for another driver.

import { lstat } from "node:fs/promises";
import { errorMessage, isErrno, type Logger } from "../../base/index.ts";
import { CsiClient } from "../../csi/index.ts";
import type { RouteHandler } from "../../kube/diagnostics.ts";

export function registrationHealthRoute(options: {
  socketPath: string;
  driverName: string;
  timeoutMs: number;
  logger: Logger;
}): RouteHandler {
  const { socketPath, driverName, timeoutMs, logger } = options;
  return async () => {
    let exists: boolean;
    try {
      exists = (await lstat(socketPath)).isSocket();
    } catch (error) {
      if (!isErrno(error, "ENOENT")) {
        logger.error("Health check failed", { err: errorMessage(error) });
        return { status: 500, body: errorMessage(error) };
      }
      exists = false;
    }
    if (!exists) {
      logger.error("Health check failed, registration socket does not exist", { socket: socketPath });
      return { status: 404, body: "registration socket does not exist" };
    }
    const client = CsiClient.connect(socketPath);
    try {
      const info = await client.registration.getInfo({}, { timeoutMs });
      if (info.name !== driverName) {
        logger.error("Health check failed", { err: `invalid driver name ${info.name}` });
        return { status: 500, body: `invalid driver name ${info.name}` };
      }
      logger.info(5, "Health check succeeded");
      return { status: 200, body: "ok" };
    } catch (error) {
      const reason = `error getting info from node-registrar socket: ${errorMessage(error)}`;
      logger.error("Health check failed", { err: reason });
      return { status: 500, body: reason };
    } finally {
      client.close();
    }
  };
}
