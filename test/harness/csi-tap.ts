// A recording tap in front of a real driver (test only): a CSI server on its own socket that
// forwards every Identity and Node call — and the Controller calls an attacher makes — over
// real gRPC to the driver and records the Node, ControllerPublish and ControllerUnpublish
// requests, so a scenario can assert what the virtual node or the attacher sent (pod-info
// keys, secrets, how many times each volume was staged, published, attached) while the real
// driver does the work.

import {
  CsiClient,
  CsiError,
  serveCsi,
  type ControllerService,
  type CsiServer,
  type IdentityService,
  type NodeService,
} from "../../src/csi/index.ts";

export interface TappedCall {
  method: string;
  request: Record<string, unknown>;
}

export interface CsiTap {
  readonly path: string;
  readonly calls: TappedCall[];
  callsOf(method: string): TappedCall[];
  close(): Promise<void>;
}

/** Keeps the plugin's gRPC code (the client rejects with grpc-js's ServiceError). */
async function forward<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    const { code, details } = error as { code?: unknown; details?: unknown };
    if (typeof code === "number") throw new CsiError(code, typeof details === "string" ? details : "");
    throw error;
  }
}

/** `controller: true` also serves the attacher's Controller calls (the target must have them). */
export async function serveCsiTap(options: {
  endpoint: string;
  target: string;
  controller?: boolean;
}): Promise<CsiTap> {
  const client = CsiClient.connect(options.target);
  const calls: TappedCall[] = [];
  const record = (method: string, request: object): void => {
    calls.push({ method, request: structuredClone(request) as Record<string, unknown> });
  };
  const identity: IdentityService = {
    getPluginInfo: (request) => forward(client.identity.getPluginInfo(request)),
    getPluginCapabilities: (request) => forward(client.identity.getPluginCapabilities(request)),
    probe: (request) => forward(client.identity.probe(request)),
  };
  const node: Partial<NodeService> = {
    nodeGetInfo: (request) => forward(client.node.nodeGetInfo(request)),
    nodeGetCapabilities: (request) => forward(client.node.nodeGetCapabilities(request)),
    nodeStageVolume: (request) => {
      record("NodeStageVolume", request);
      return forward(client.node.nodeStageVolume(request));
    },
    nodeUnstageVolume: (request) => {
      record("NodeUnstageVolume", request);
      return forward(client.node.nodeUnstageVolume(request));
    },
    nodePublishVolume: (request) => {
      record("NodePublishVolume", request);
      return forward(client.node.nodePublishVolume(request));
    },
    nodeUnpublishVolume: (request) => {
      record("NodeUnpublishVolume", request);
      return forward(client.node.nodeUnpublishVolume(request));
    },
    nodeGetVolumeStats: (request) => forward(client.node.nodeGetVolumeStats(request)),
    nodeExpandVolume: (request) => {
      record("NodeExpandVolume", request);
      return forward(client.node.nodeExpandVolume(request));
    },
  };
  // What the external-attacher calls; the rest of the controller service is not forwarded.
  const controller: Partial<ControllerService> = {
    controllerGetCapabilities: (request) => forward(client.controller.controllerGetCapabilities(request)),
    controllerPublishVolume: (request) => {
      record("ControllerPublishVolume", request);
      return forward(client.controller.controllerPublishVolume(request));
    },
    controllerUnpublishVolume: (request) => {
      record("ControllerUnpublishVolume", request);
      return forward(client.controller.controllerUnpublishVolume(request));
    },
    listVolumes: (request) => forward(client.controller.listVolumes(request)),
  };
  let server: CsiServer;
  try {
    server = await serveCsi({
      endpoint: options.endpoint,
      identity,
      node,
      ...(options.controller ? { controller } : {}),
      shutdownGraceMs: 1000,
    });
  } catch (error) {
    client.close();
    throw error;
  }
  return {
    path: server.path,
    calls,
    callsOf: (method) => calls.filter((call) => call.method === method),
    close: async () => {
      await server.close();
      client.close();
    },
  };
}
