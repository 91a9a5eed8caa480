// CSI endpoints are Unix domain sockets. Accepted forms, as the sidecars and drivers take them:
// `unix:///abs/path`, `unix:/abs/path`, `unix:relative/path`, `/abs/path` and `relative/path`
// (relative ones resolve against the working directory). Anything else, tcp:// included, is
// refused with a message naming the endpoint.

import { ValidationError } from "../base/index.ts";
import { resolve } from "node:path";

/** sun_path holds 108 bytes including the terminating NUL. */
const MAX_SOCKET_PATH_BYTES = 107;

/** The absolute socket path of an endpoint; throws ValidationError for an unusable one. */
export function parseEndpoint(endpoint: string): string {
  const trimmed = endpoint.trim();
  if (trimmed === "")
    throw new ValidationError("CSI endpoint is empty: give a Unix socket such as unix:///run/csi/socket");
  let path: string;
  if (trimmed.startsWith("unix://")) {
    path = trimmed.slice("unix://".length);
    if (!path.startsWith("/")) {
      throw new ValidationError(
        `CSI endpoint ${JSON.stringify(endpoint)} is not valid: unix:// must be followed by an absolute path (unix:///path/to/socket)`,
      );
    }
  } else if (trimmed.startsWith("unix:")) {
    path = trimmed.slice("unix:".length);
  } else if (/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(trimmed)) {
    throw new ValidationError(
      `CSI endpoint ${JSON.stringify(endpoint)} is not supported: CSI runs over Unix domain sockets (unix:///path/to/socket)`,
    );
  } else {
    path = trimmed;
  }
  if (path === "")
    throw new ValidationError(`CSI endpoint ${JSON.stringify(endpoint)} has an empty socket path`);
  const absolute = resolve(path);
  if (Buffer.byteLength(absolute) > MAX_SOCKET_PATH_BYTES) {
    throw new ValidationError(
      `CSI endpoint socket path ${absolute} is longer than ${MAX_SOCKET_PATH_BYTES} bytes, the limit for Unix sockets`,
    );
  }
  return absolute;
}

/** The grpc-js target for a socket path. */
export function grpcTarget(path: string): string {
  return `unix://${path}`;
}
