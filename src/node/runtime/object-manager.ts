// The ConfigMaps and Secrets the node's running pods reference, kept current as the kubelet's
// default configMapAndSecretChangeDetectionStrategy (Watch) keeps them: one reflector per
// referenced object (a list+watch of its namespace with fieldSelector metadata.name=<name>,
// which the Node authorizer allows for objects a pod on the node uses), started when the first
// pod that uses it registers and stopped when the last one goes. An object seen `immutable`
// is kept as it was and no longer watched (it cannot change; a deleted and re-created one is
// not picked up, as upstream). A change calls onChange with the pods that use the object, so
// their volumes are refreshed at once; until a reflector has synced, reads go to the API.
// Objects are never logged (secrets' data must not reach a log line), only their keys.

import type { ConfigMap, Pod, Secret } from "../../api/index.ts";
import { GVR } from "../../api/index.ts";
import type { Clock, Logger } from "../../base/index.ts";
import {
  clientListerWatcher,
  isNotFound,
  SharedInformer,
  type KubeClient,
  type KubeObject,
} from "../../kube/index.ts";

export type ObjectKind = "configmap" | "secret";

interface Watched {
  kind: ObjectKind;
  namespace: string;
  name: string;
  users: Set<string>;
  informer?: SharedInformer<KubeObject>;
  stop?: AbortController;
  /** The object as last seen once it was immutable (its watch then stops). */
  frozen?: ConfigMap | Secret;
}

export interface ObjectManagerOptions {
  client: KubeClient;
  clock: Clock;
  logger: Logger;
  /** Called with the UIDs of the pods that use an object that changed. */
  onChange: (podUIDs: ReadonlySet<string>) => void;
}

function record(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === "object" ? (value as Record<string, unknown>) : {};
}

/** "<kind>/<name>" of every ConfigMap and Secret the pod names (volumes, projections, env). */
export function referencedObjects(pod: Pod): Set<string> {
  const out = new Set<string>();
  const add = (kind: ObjectKind, name: unknown): void => {
    if (typeof name === "string" && name !== "") out.add(`${kind}/${name}`);
  };
  for (const volume of pod.spec?.volumes ?? []) {
    const v = record(volume);
    add("configmap", record(v.configMap).name);
    add("secret", record(v.secret).secretName);
    const sources = record(v.projected).sources;
    for (const source of Array.isArray(sources) ? (sources as unknown[]) : []) {
      add("configmap", record(record(source).configMap).name);
      add("secret", record(record(source).secret).name);
    }
  }
  const spec = pod.spec;
  for (const container of [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])]) {
    const envFrom: unknown = container.envFrom;
    for (const from of Array.isArray(envFrom) ? (envFrom as unknown[]) : []) {
      add("configmap", record(record(from).configMapRef).name);
      add("secret", record(record(from).secretRef).name);
    }
    for (const env of container.env ?? []) {
      const valueFrom = record(record(env).valueFrom);
      add("configmap", record(valueFrom.configMapKeyRef).name);
      add("secret", record(valueFrom.secretKeyRef).name);
    }
  }
  return out;
}

export class ObjectManager {
  readonly #o: ObjectManagerOptions;
  /** "<kind>/<namespace>/<name>" → its reflector and users. */
  readonly #watched = new Map<string, Watched>();
  /** pod UID → the keys it uses. */
  readonly #pods = new Map<string, Set<string>>();
  /** Every reflector still running, also those released (stop waits for them). */
  readonly #running = new Set<Promise<void>>();

  constructor(options: ObjectManagerOptions) {
    this.#o = options;
  }

  /** Records what the pod uses now: watches start for new objects, stop for ones no pod uses. */
  register(pod: Pod): void {
    const uid = pod.metadata?.uid ?? "";
    const namespace = pod.metadata?.namespace ?? "";
    const keys = new Set(
      [...referencedObjects(pod)].map((ref) => {
        const [kind, name] = ref.split("/") as [ObjectKind, string];
        return `${kind}/${namespace}/${name}`;
      }),
    );
    for (const key of this.#pods.get(uid) ?? []) if (!keys.has(key)) this.#release(key, uid);
    this.#pods.set(uid, keys);
    for (const key of keys) {
      let watched = this.#watched.get(key);
      if (!watched) {
        const [kind, , name] = key.split("/") as [ObjectKind, string, string];
        watched = { kind, namespace, name, users: new Set() };
        this.#watched.set(key, watched);
        this.#start(key, watched);
      }
      watched.users.add(uid);
    }
  }

  unregister(uid: string): void {
    for (const key of this.#pods.get(uid) ?? []) this.#release(key, uid);
    this.#pods.delete(uid);
  }

  /** The object now: from its synced watch, else from the API; undefined when it does not exist. */
  async get<T extends ConfigMap | Secret>(
    kind: ObjectKind,
    namespace: string,
    name: string,
  ): Promise<T | undefined> {
    const watched = this.#watched.get(`${kind}/${namespace}/${name}`);
    if (watched?.frozen) return watched.frozen as T;
    if (watched?.informer?.hasSynced())
      return watched.informer.store.get(`${namespace}/${name}`) as T | undefined;
    try {
      return await this.#o.client.get<T>(kind === "secret" ? GVR.secrets : GVR.configMaps, name, {
        namespace,
      });
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /** Stops every watch; resolves once they are all stopped. */
  async stop(): Promise<void> {
    for (const watched of this.#watched.values()) watched.stop?.abort();
    this.#watched.clear();
    this.#pods.clear();
    await Promise.all([...this.#running]);
  }

  #release(key: string, uid: string): void {
    const watched = this.#watched.get(key);
    if (!watched) return;
    watched.users.delete(uid);
    if (watched.users.size > 0) return;
    watched.stop?.abort();
    this.#watched.delete(key);
  }

  #start(key: string, watched: Watched): void {
    const { client, clock, logger } = this.#o;
    const informer = new SharedInformer<KubeObject>({
      name: `v1/${watched.kind}s ${watched.namespace}/${watched.name}`,
      listerWatcher: clientListerWatcher(client, watched.kind === "secret" ? GVR.secrets : GVR.configMaps, {
        namespace: watched.namespace,
        fieldSelector: `metadata.name=${watched.name}`,
      }),
      clock,
      logger,
    });
    const changed = (object: KubeObject | undefined): void => {
      if (this.#watched.get(key) !== watched) return;
      if (object !== undefined && (object as ConfigMap).immutable === true) {
        // Immutable: what is here now is what the object will be; no watch needed any more.
        watched.frozen = structuredClone(object) as ConfigMap | Secret;
        watched.stop?.abort();
        logger.info(4, "object immutable, watch stopped", { object: key });
      }
      this.#o.onChange(new Set(watched.users));
    };
    informer.addEventHandler({
      onAdd: (object) => changed(object),
      onUpdate: (before, after) => {
        if (before.metadata?.resourceVersion !== after.metadata?.resourceVersion) changed(after);
      },
      onDelete: () => changed(undefined),
    });
    watched.informer = informer;
    watched.stop = new AbortController();
    const running = informer.run(watched.stop.signal).finally(() => this.#running.delete(running));
    this.#running.add(running);
  }
}
