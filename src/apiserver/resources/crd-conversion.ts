// Conversion between the served versions of a custom resource, as kube-apiserver converts a
// CRD's objects to and from its storage version. Strategy None changes only apiVersion (the
// REST layer sets it on the way out, so None needs no mapping). Strategy Webhook calls the
// CRD's conversion webhook: the embedded server has no cluster network to reach one, so the
// webhooks of the CRDs csikit ships (deploy/crds) are served in process — upstream's
// snapshot-conversion-webhook for groupsnapshot.storage.k8s.io (group-snapshot-conversion.ts).
// A Webhook CRD whose service is not one of those fails its conversions with kube-apiserver's
// wording, as a cluster whose webhook is down does.

import type { KubeObject, StorageMapping } from "../rest/resource.ts";
import { at, isRecord, str } from "./common.ts";
import { convertGroupSnapshot } from "./group-snapshot-conversion.ts";

/** Converts `object` (in `from`, an apiVersion) to `to`; returns a new object, never changes `object`. */
export type Converter = (object: KubeObject, from: string, to: string) => KubeObject;

/** In-process conversion webhooks by `<namespace>/<name>` of their clientConfig.service. */
const IN_PROCESS_WEBHOOKS: Readonly<Record<string, Converter>> = Object.freeze({
  "kube-system/snapshot-conversion-webhook": convertGroupSnapshot,
});

function webhookOf(crd: KubeObject): string | undefined {
  if (at(crd, "spec.conversion.strategy") !== "Webhook") return undefined;
  const service = at(crd, "spec.conversion.webhook.clientConfig.service");
  if (isRecord(service)) return `${str(service.namespace)}/${str(service.name)}`;
  const url = at(crd, "spec.conversion.webhook.clientConfig.url");
  return typeof url === "string" ? url : "";
}

/**
 * The storage mapping of one served version of a Webhook-converted CRD: objects are stored in
 * the storage version and converted on every read, write and watch event. Undefined for
 * strategy None (and for the storage version of a CRD with a single version).
 */
export function conversionStorage(
  crd: KubeObject,
  group: string,
  resource: string,
  kind: string,
  version: string,
  storageVersion: string,
): StorageMapping | undefined {
  const webhook = webhookOf(crd);
  if (webhook === undefined) return undefined;
  const converter: Converter =
    IN_PROCESS_WEBHOOKS[webhook] ??
    ((_object, from, to) => {
      // kube-apiserver's wording when the webhook cannot be called.
      throw new Error(
        `conversion webhook for ${from}, Kind=${kind} failed: Post "https://${webhook}": no in-process webhook serves ${webhook} (converting to ${to})`,
      );
    });
  const own = `${group}/${version}`;
  const stored = `${group}/${storageVersion}`;
  const convert = (object: KubeObject, from: string, to: string): KubeObject => {
    const out = from === to ? structuredClone(object) : converter({ ...object, kind }, from, to);
    return { ...out, apiVersion: to, kind };
  };
  return {
    group,
    resource,
    toStorage: (object) => convert(object, own, stored),
    fromStorage: (object) =>
      convert(object, typeof object.apiVersion === "string" ? object.apiVersion : stored, own),
  };
}
