// A container's environment and command line as the kubelet builds them: env in order (each
// value may use $(NAME) of the ones before it, "$$" escapes), envFrom before env, valueFrom
// fieldRef / resourceFieldRef / configMapKeyRef / secretKeyRef; then command and args expanded
// against the result. The downward API values here serve the downwardAPI volume too.

import { availableParallelism, totalmem } from "node:os";
import type { ConfigMap, Container, Pod, Secret } from "../../api/index.ts";
import { parseQuantity, quantityMilliValue } from "../../base/index.ts";

/** Reads a ConfigMap or Secret of the pod's namespace (undefined when it does not exist). */
export interface ObjectSource {
  configMap(name: string): Promise<ConfigMap | undefined>;
  secret(name: string): Promise<Secret | undefined>;
}

export const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** $(NAME) references of the kubelet's expansion (k8s.io/kubernetes/third_party/forked/golang/expansion). */
export function expand(input: string, lookup: (name: string) => string | undefined): string {
  let out = "";
  for (let i = 0; i < input.length; i++) {
    const ch = input[i];
    if (ch !== "$" || i + 1 >= input.length) {
      out += ch;
      continue;
    }
    const next = input[i + 1];
    if (next === "$") {
      out += "$";
      i++;
    } else if (next === "(") {
      const close = input.indexOf(")", i + 2);
      if (close < 0) {
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, close);
      const value = lookup(name);
      out += value ?? `$(${name})`;
      i = close;
    } else {
      out += ch;
    }
  }
  return out;
}

function record(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === "object" ? (value as Record<string, unknown>) : {};
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** "key=\"value\"" lines, sorted by key, as the downward API formats labels and annotations. */
function formatMap(map: Record<string, string> | undefined): string {
  return Object.keys(map ?? {})
    .sort()
    .map((key) => `${key}=${JSON.stringify(map?.[key] ?? "")}`)
    .join("\n");
}

/** A fieldRef path's value (metadata.*, spec.nodeName, spec.serviceAccountName, status.*). */
export function podFieldValue(pod: Pod, fieldPath: string, hostIP: string): string {
  const meta = pod.metadata ?? {};
  const subscript = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(fieldPath);
  if (subscript) {
    const map = subscript[1] === "labels" ? meta.labels : meta.annotations;
    return map?.[subscript[2]!] ?? "";
  }
  switch (fieldPath) {
    case "metadata.name":
      return meta.name ?? "";
    case "metadata.namespace":
      return meta.namespace ?? "";
    case "metadata.uid":
      return meta.uid ?? "";
    case "metadata.labels":
      return formatMap(meta.labels);
    case "metadata.annotations":
      return formatMap(meta.annotations);
    case "spec.nodeName":
      return pod.spec?.nodeName ?? "";
    case "spec.serviceAccountName":
      return pod.spec?.serviceAccountName ?? "";
    case "status.hostIP":
    case "status.hostIPs":
    case "status.podIP":
    case "status.podIPs":
      // The virtual node's pods share the host's network: their IP is the host's.
      return hostIP;
    default:
      throw new Error(`unsupported fieldPath: ${fieldPath}`);
  }
}

/** A resourceFieldRef's value: ceil(quantity / divisor); an unset limit is the node's capacity. */
export function resourceFieldValue(pod: Pod, defaultContainer: string, ref: Record<string, unknown>): string {
  const name = text(ref.containerName) || defaultContainer;
  const container = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].find(
    (c) => c.name === name,
  );
  if (!container) throw new Error(`container ${JSON.stringify(name)} not found in pod`);
  const resource = text(ref.resource);
  const [kind, what] = resource.split(".", 2) as [string, string | undefined];
  const resources = record(container.resources);
  const list = record(
    kind === "limits" ? resources.limits : kind === "requests" ? resources.requests : undefined,
  );
  if ((kind !== "limits" && kind !== "requests") || !what)
    throw new Error(`unsupported resource: ${resource}`);
  let quantity = text(list[what]);
  if (quantity === "" && kind === "requests") quantity = text(record(resources.limits)[what]);
  if (quantity === "") {
    if (kind === "requests") quantity = "0";
    else if (what === "cpu") quantity = String(availableParallelism());
    else if (what === "memory") quantity = String(totalmem());
    else quantity = "0";
  }
  const divisorText =
    typeof ref.divisor === "string" || typeof ref.divisor === "number" ? String(ref.divisor) : "1";
  const value = quantityMilliValue(parseQuantity(quantity));
  const divisor = quantityMilliValue(parseQuantity(divisorText === "0" ? "1" : divisorText));
  return String((value + divisor - 1n) / divisor);
}

/** A C identifier-ish name the kubelet accepts as an environment variable (IsEnvVarName). */
export function isEnvVarName(name: string): boolean {
  return /^[-._a-zA-Z][-._a-zA-Z0-9]*$/.test(name);
}

export interface BuiltEnv {
  env: Map<string, string>;
  /** envFrom keys skipped because they are not valid names, per source (evented as the kubelet does). */
  invalid: { kind: "configMap" | "secret"; name: string; keys: string[] }[];
}

function decode(value: string | undefined, base64: boolean): string | undefined {
  if (value === undefined) return undefined;
  return base64 ? Buffer.from(value, "base64").toString("utf8") : value;
}

/**
 * The environment of container in pod. A missing, non-optional ConfigMap, Secret or key is an
 * error (the kubelet's CreateContainerConfigError), whose message names it but never a value.
 */
export async function buildEnv(
  pod: Pod,
  container: Container,
  objects: ObjectSource,
  hostIP: string,
): Promise<BuiltEnv> {
  const env = new Map<string, string>();
  const invalid: BuiltEnv["invalid"] = [];
  for (const from of (container.envFrom as unknown[] | undefined) ?? []) {
    const source = record(from);
    const prefix = text(source.prefix);
    const cmRef = source.configMapRef !== undefined ? record(source.configMapRef) : undefined;
    const secretRef = source.secretRef !== undefined ? record(source.secretRef) : undefined;
    let data: Record<string, string> = {};
    if (cmRef) {
      const cm = await objects.configMap(text(cmRef.name));
      if (!cm) {
        if (cmRef.optional === true) continue;
        throw new Error(`configmap "${text(cmRef.name)}" not found`);
      }
      data = { ...(cm.data ?? {}) };
    } else if (secretRef) {
      const secret = await objects.secret(text(secretRef.name));
      if (!secret) {
        if (secretRef.optional === true) continue;
        throw new Error(`secret "${text(secretRef.name)}" not found`);
      }
      for (const [key, value] of Object.entries(secret.data ?? {})) data[key] = decode(value, true) ?? "";
    }
    const skipped: string[] = [];
    for (const [key, value] of Object.entries(data)) {
      const name = prefix + key;
      if (!isEnvVarName(name)) {
        skipped.push(name);
        continue;
      }
      env.set(name, value);
    }
    if (skipped.length > 0)
      invalid.push({
        kind: cmRef ? "configMap" : "secret",
        name: text((cmRef ?? secretRef)?.name),
        keys: skipped.sort(),
      });
  }
  const lookup = (name: string): string | undefined => env.get(name);
  for (const variable of container.env ?? []) {
    if (variable.valueFrom === undefined) {
      env.set(variable.name, expand(variable.value ?? "", lookup));
      continue;
    }
    const from = variable.valueFrom;
    if (from.fieldRef !== undefined) {
      env.set(variable.name, podFieldValue(pod, text(record(from.fieldRef).fieldPath), hostIP));
    } else if (from.resourceFieldRef !== undefined) {
      env.set(variable.name, resourceFieldValue(pod, container.name, record(from.resourceFieldRef)));
    } else if (from.configMapKeyRef !== undefined) {
      const ref = record(from.configMapKeyRef);
      const cm = await objects.configMap(text(ref.name));
      const value = cm?.data?.[text(ref.key)] ?? decode(cm?.binaryData?.[text(ref.key)], true);
      if (value === undefined) {
        if (ref.optional === true) continue;
        throw new Error(
          cm
            ? `couldn't find key ${text(ref.key)} in ConfigMap ${pod.metadata?.namespace ?? ""}/${text(ref.name)}`
            : `configmap "${text(ref.name)}" not found`,
        );
      }
      env.set(variable.name, value);
    } else if (from.secretKeyRef !== undefined) {
      const ref = record(from.secretKeyRef);
      const secret = await objects.secret(text(ref.name));
      const value = decode(secret?.data?.[text(ref.key)], true);
      if (value === undefined) {
        if (ref.optional === true) continue;
        throw new Error(
          secret
            ? `couldn't find key ${text(ref.key)} in Secret ${pod.metadata?.namespace ?? ""}/${text(ref.name)}`
            : `secret "${text(ref.name)}" not found`,
        );
      }
      env.set(variable.name, value);
    }
  }
  return { env, invalid };
}

/** command and args with $(NAME) expanded against the container's environment. */
export function expandCommand(container: Container, env: ReadonlyMap<string, string>): string[] {
  const lookup = (name: string): string | undefined => env.get(name);
  return [...(container.command ?? []), ...(container.args ?? [])].map((part) => expand(part, lookup));
}
