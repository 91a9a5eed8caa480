// Loads the .proto files at runtime with @grpc/proto-loader, with the options the generated
// types describe (camelCase fields, int64 as decimal strings so values above 2^53 stay exact,
// enums as names, defaults filled in, the oneof discriminator). Loaded once, on first use.

import { CsikitError } from "../base/index.ts";
import type { PackageDefinition, ServiceDefinition } from "@grpc/proto-loader";
import { loadSync } from "@grpc/proto-loader";
import { join } from "node:path";

export const PROTO_DIR = join(import.meta.dirname, "proto");
export const PROTO_FILES = ["csi.proto", "pluginregistration.proto"] as const;

/** The options the generated types in ./generated were written for. Do not change one alone. */
export const LOADER_OPTIONS = {
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
} as const;

let loaded: PackageDefinition | undefined;

/** Every service, message and enum of both protos, keyed by full name ("csi.v1.Node"). */
export function packageDefinition(): PackageDefinition {
  loaded ??= loadSync(
    PROTO_FILES.map((file) => join(PROTO_DIR, file)),
    LOADER_OPTIONS,
  );
  return loaded;
}

/** The grpc-js service definition of a service ("csi.v1.Identity"). */
export function serviceDefinition(fullName: string): ServiceDefinition {
  const definition = packageDefinition()[fullName];
  if (definition === undefined || "format" in definition) {
    throw new CsikitError("CSIKIT_ERR_PROTO", `${fullName} is not a service in the CSI protos`);
  }
  return definition;
}
