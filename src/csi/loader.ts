// The grpc-js service definitions of the CSI and plugin-registration services: the wire paths
// from the generated method tables, serialize/deserialize from the static codec (codec.ts, over
// the table scripts/gen-proto.ts generates): no .proto text is parsed, no protobuf library and
// no descriptor is loaded at run time, which is what a driver, a registrar or a livenessprobe on
// every node would otherwise pay in memory (`npm run bench:rss`). A service's definition is
// built only when a process serves or calls it.
//
// Decoded messages are exactly what @grpc/proto-loader produced with LOADER_OPTIONS (the shapes
// the generated types describe: camelCase fields, int64 as decimal strings so values above 2^53
// stay exact, enums as names, defaults filled in, the oneof discriminator).
// src/csi/loader.test.ts compares both byte for byte and object for object.

import type * as grpc from "@grpc/grpc-js";
import { join } from "node:path";
import { CsikitError } from "../base/index.ts";
import { decodeMessage, encodeMessage, messagePlan } from "./codec.ts";
import { SERVICE_SPECS, SNAPSHOT_METADATA_API } from "./services.ts";

export const PROTO_DIR = join(import.meta.dirname, "proto");
export const PROTO_FILES = ["csi.proto", "pluginregistration.proto", "snapshotmetadata.proto"] as const;
/** protobufjs JSON of the protos (tests and tools only; the codec reads generated/codec.ts). */
export const DESCRIPTOR_PATH = join(import.meta.dirname, "generated", "descriptor.json");

/** The options the generated types in ./generated were written for. Do not change one alone. */
export const LOADER_OPTIONS = {
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
} as const;

/** One method as grpc-js serves and calls it. */
export type MethodDefinition = grpc.MethodDefinition<object, object>;
/** A service's methods keyed by their proto name ("CreateVolume"). */
export type ServiceDefinition = Record<string, MethodDefinition>;

const definitions = new Map<string, ServiceDefinition>();

function serializer(type: string): (value: object) => Buffer {
  return (value) => {
    if (Array.isArray(value)) throw new CsikitError("CSIKIT_ERR_PROTO", `cannot send an array as ${type}`);
    return encodeMessage(type, value);
  };
}

function deserializer(type: string): (bytes: Buffer) => object {
  return (bytes) => decodeMessage(type, bytes);
}

/** The grpc-js service definition of a service ("csi.v1.Identity"), built on first use. */
export function serviceDefinition(fullName: string): ServiceDefinition {
  const cached = definitions.get(fullName);
  if (cached) return cached;
  const spec = [...Object.values(SERVICE_SPECS), SNAPSHOT_METADATA_API].find(
    (candidate) => candidate.name === fullName,
  );
  if (spec === undefined) {
    throw new CsikitError("CSIKIT_ERR_PROTO", `${fullName} is not a service in the CSI protos`);
  }
  const definition: ServiceDefinition = {};
  for (const method of Object.values(spec.methods)) {
    // Unknown message names fail here, when the service is built, not on the first call.
    const request = messagePlan(method.requestType).name;
    const response = messagePlan(method.responseType).name;
    definition[method.name] = {
      path: method.path,
      requestStream: false,
      responseStream: method.responseStream,
      requestSerialize: serializer(request),
      requestDeserialize: deserializer(request),
      responseSerialize: serializer(response),
      responseDeserialize: deserializer(response),
      originalName: method.name.charAt(0).toLowerCase() + method.name.slice(1),
    };
  }
  definitions.set(fullName, definition);
  return definition;
}
