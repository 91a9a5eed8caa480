// Upgrade requests (pods/exec over WebSocket or SPDY): authenticated and authorized as any
// request, then spliced to the kubelet (kubelet-proxy.ts). A WebSocket exec is a GET; it is
// authorized as `create` on pods/exec all the same, as kube-apiserver does with its
// AuthorizePodWebsocketUpgradeCreatePermission gate (on by default since 1.35), so `get` alone on
// pods/exec never opens a shell. Refusals are Status answers on the raw connection.

import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { errorMessage } from "../../base/index.ts";
import { impersonatedUser, wantsImpersonation } from "../auth/impersonation.ts";
import { forbiddenError, type RequestAttributes } from "../auth/authz.ts";
import { auditEvent } from "../auth/audit.ts";
import { resolveRoute } from "../transport/routing.ts";
import { ApiError, badRequest, internalError, pathNotFound, unauthorized } from "../transport/status.ts";
import type { HandlerOptions } from "./handler.ts";
import { refuseUpgrade, servePodExec } from "./kubelet-proxy.ts";

/** Whether a request's path is one the server upgrades (pods/exec); others are served as usual. */
export function isUpgradePath(url: string | undefined): boolean {
  const path = (url ?? "/").split("?")[0]!;
  return /^\/api\/v1\/namespaces\/[^/]+\/pods\/[^/]+\/exec\/?$/.test(path);
}

export function createUpgradeHandler(
  options: HandlerOptions,
): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
  return (req, socket, head) => {
    socket.on("error", () => undefined);
    serveUpgrade(options, req, socket, head).catch((error: unknown) => {
      const apiError = error instanceof ApiError ? error : undefined;
      if (!apiError)
        options.logger.error("upgrade request failed", {
          path: req.url?.split("?")[0],
          err: errorMessage(error),
        });
      if (!socket.writable) return;
      refuseUpgrade(socket, apiError ?? internalError("the server could not complete the request"));
    });
  };
}

async function serveUpgrade(
  options: HandlerOptions,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): Promise<void> {
  const url = new URL(req.url ?? "/", "https://localhost");
  const route = resolveRoute(req.method ?? "GET", url.pathname, false);
  if (route.kind !== "resource") throw pathNotFound();
  let user = options.authenticator.authenticate(req.headers.authorization);
  if (!user) throw unauthorized();
  if (wantsImpersonation(req.headersDistinct))
    user = impersonatedUser(user, req.headersDistinct, options.authorizer);
  const request = route.request;
  const attributes: RequestAttributes = {
    user,
    verb: "create",
    resourceRequest: true,
    path: "",
    apiGroup: request.group,
    resource: request.resource,
    subresource: request.subresource,
    namespace: request.namespace,
    name: request.name,
  };
  const decision = options.authorizer.authorize(attributes);
  let code = decision.allowed ? 101 : 403;
  try {
    if (!decision.allowed) throw forbiddenError(attributes, decision.reason);
    if (!options.kubelet) throw badRequest("this server does not reach kubelets");
    await servePodExec(
      { ctx: options.ctx, kubelet: options.kubelet, logger: options.logger },
      request,
      url.searchParams,
      req,
      socket,
      head,
    );
  } catch (error) {
    if (error instanceof ApiError) code = error.code;
    throw error;
  } finally {
    options.audit?.(
      auditEvent(attributes, {
        uri: req.url ?? "/",
        userAgent: req.headers["user-agent"],
        code,
        allowed: decision.allowed,
      }),
    );
  }
}
