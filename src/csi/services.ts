// The table of services csikit serves and calls: option key, proto service name and the
// generated method table (wire path, message type names, streaming). Server and client both
// read it so they cannot disagree on a path.

import { csiServices } from "./generated/csi.ts";
import { pluginregistrationServices } from "./generated/pluginregistration.ts";
import { snapshotmetadataServices } from "./generated/snapshotmetadata.ts";

export interface MethodSpec {
  readonly name: string;
  readonly path: string;
  readonly requestType: string;
  readonly responseType: string;
  readonly responseStream: boolean;
}

export interface ServiceSpec {
  readonly name: string;
  readonly methods: Readonly<Record<string, MethodSpec>>;
}

export type ServiceKey =
  "identity" | "controller" | "node" | "groupController" | "snapshotMetadata" | "registration";

export const SERVICE_SPECS: Readonly<Record<ServiceKey, ServiceSpec>> = {
  identity: csiServices.Identity,
  controller: csiServices.Controller,
  node: csiServices.Node,
  groupController: csiServices.GroupController,
  snapshotMetadata: csiServices.SnapshotMetadata,
  registration: pluginregistrationServices.Registration,
};

export const SERVICE_KEYS = Object.keys(SERVICE_SPECS) as readonly ServiceKey[];

/**
 * The Kubernetes SnapshotMetadata API (package snapshotmetadata): served over TLS by the
 * snapshot-metadata sidecar to backup applications (tls-grpc.ts), never on a driver's socket.
 */
export const SNAPSHOT_METADATA_API: ServiceSpec = snapshotmetadataServices.SnapshotMetadata;
