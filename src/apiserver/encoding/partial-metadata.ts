// The PartialObjectMetadata conversion (`Accept: …;as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1`):
// what client-go's metadata client and metadata informers ask for (the garbage collector and
// the namespace controller upstream use them), answered as kube-apiserver's response.go does —
// an object becomes meta.k8s.io/v1 PartialObjectMetadata {metadata}, a list becomes a
// PartialObjectMetadataList whose items each carry their own kind and apiVersion, Status objects
// pass unchanged, and asking for the one form on the other shape is 406 with upstream's message.

import type { KubeObject, ResourceDef } from "../rest/resource.ts";
import { ApiError } from "../transport/status.ts";
import type { Conversion } from "./negotiation.ts";

const META_V1 = "meta.k8s.io/v1";

export function asPartialObjectMetadata(object: KubeObject): KubeObject {
  return { kind: "PartialObjectMetadata", apiVersion: META_V1, metadata: object.metadata ?? {} };
}

/** The Go type upstream's message names (%T of the internal object the registry returned). */
function goType(def: ResourceDef, list: boolean): string {
  if (def.custom === true) return list ? "*unstructured.UnstructuredList" : "*unstructured.Unstructured";
  const pkg = def.group === "" ? "core" : def.group.split(".")[0]!;
  return `*${pkg}.${list ? def.listKind : def.kind}`;
}

/**
 * A response body in the asked-for metadata form. `body` is an object of `def`, a list of them,
 * or a Status (left as is).
 */
export function toPartialMetadata(
  def: ResourceDef,
  convert: Exclude<Conversion, "Table">,
  body: Record<string, unknown>,
): Record<string, unknown> {
  if (body.kind === "Status") return body;
  const isList = Array.isArray(body.items);
  if (convert === "PartialObjectMetadata") {
    if (isList)
      throw notAcceptable(
        `you requested PartialObjectMetadata, but the requested object is a list (${goType(def, true)})`,
      );
    return asPartialObjectMetadata(body);
  }
  if (!isList)
    throw notAcceptable(
      `you requested PartialObjectMetadataList, but the requested object is not a list (${goType(def, false)})`,
    );
  return {
    kind: "PartialObjectMetadataList",
    apiVersion: META_V1,
    metadata: body.metadata ?? {},
    items: (body.items as KubeObject[]).map(asPartialObjectMetadata),
  };
}

function notAcceptable(message: string): ApiError {
  return new ApiError(406, "NotAcceptable", message);
}
