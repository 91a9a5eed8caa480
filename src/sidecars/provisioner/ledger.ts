// The in-flight ledger (--in-flight-record=ledger): the durable intents of the claims this
// provisioner is creating volumes for, group-committed into one Lease instead of one finalizer
// patch per claim before and after CreateVolume (docs/provisioner-in-flight.md).
//
// One Lease per provisioner identity scope, `<driver>-in-flight` (node deployment: plus the
// node), in the leader-election namespace, so a restarted process and the next leader read the
// same record. Its annotation `provisioner.csikit.io/in-flight` maps claim UID → the intent:
// where the claim was and the CreateVolume request without its secrets (they are re-read from
// the recorded secret reference), enough to ask the driver again and delete what it made even
// when the claim is gone.
//
// Group commit: `intend` queues an entry and resolves once a write holding it succeeded; while
// one write is in flight (or waits for a client token), every later intent and every `settle`
// joins the next one, so a burst of N claims costs one or a few writes, not N. Removals
// (`settle`) are never waited on: they ride with the next intent's write, or go alone at
// trailing priority. Writes are updates guarded by resourceVersion; a conflict re-reads and
// re-applies the pending changes. Above MAX_BYTES of intents `intend` answers false and the
// caller falls back to the claim's own finalizer.

import type { CreateVolumeRequestInput } from "../../csi/index.ts";
import type { Logger } from "../../base/index.ts";
import {
  REQUEST_PRIORITY,
  apiStatusCode,
  isNotFound,
  withRequestPriority,
  type GroupVersionResource,
  type KubeClient,
  type KubeObject,
} from "../../kube/index.ts";
import type { SecretRef } from "./parameters.ts";

const LEASES: GroupVersionResource = { group: "coordination.k8s.io", version: "v1", resource: "leases" };
export const LEDGER_ANNOTATION = "provisioner.csikit.io/in-flight";
/** Intents beyond this many bytes go to the claim's finalizer (annotations are capped at 256 KiB). */
const MAX_BYTES = 200 * 1024;

export interface InFlightIntent {
  namespace: string;
  name: string;
  uid: string;
  /** The CreateVolume request as sent, without secrets. */
  request: Omit<CreateVolumeRequestInput, "secrets">;
  /** Where CreateVolume's and DeleteVolume's secrets are read from. */
  secret?: SecretRef;
}

interface Pending {
  intent: InFlightIntent;
  resolve: (written: boolean) => void;
  reject: (error: unknown) => void;
}

export class InFlightLedger {
  readonly namespace: string;
  readonly name: string;
  readonly #client: KubeClient;
  readonly #logger: Logger;
  /** The durable state as last read or written. */
  #entries = new Map<string, InFlightIntent>();
  #resourceVersion = "";
  #adds: Pending[] = [];
  #removes = new Set<string>();
  #writing = false;

  constructor(options: { client: KubeClient; namespace: string; name: string; logger: Logger }) {
    this.#client = options.client;
    this.namespace = options.namespace;
    this.name = options.name;
    this.#logger = options.logger;
  }

  /** Reads (or creates) the record; call before the controllers start. */
  async load(signal?: AbortSignal): Promise<InFlightIntent[]> {
    let lease: KubeObject;
    try {
      lease = await this.#client.get(LEASES, this.name, { namespace: this.namespace }, signal);
    } catch (error) {
      if (!isNotFound(error)) throw error;
      lease = await this.#client.create(
        LEASES,
        {
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: { name: this.name, namespace: this.namespace },
          spec: {},
        },
        signal,
      );
    }
    this.#adopt(lease);
    return [...this.#entries.values()];
  }

  #adopt(lease: KubeObject): void {
    this.#resourceVersion = lease.metadata?.resourceVersion ?? "";
    const text = lease.metadata?.annotations?.[LEDGER_ANNOTATION];
    const parsed = text ? (JSON.parse(text) as Record<string, InFlightIntent>) : {};
    this.#entries = new Map(Object.entries(parsed));
  }

  /** The intent recorded (or being recorded) for the claim UID. */
  get(uid: string): InFlightIntent | undefined {
    return this.#entries.get(uid) ?? this.#adds.find((p) => p.intent.uid === uid)?.intent;
  }

  /** Recorded intents for claim key `namespace/name` whose claim is not `liveUid`. */
  orphansOf(key: string, liveUid: string | undefined): InFlightIntent[] {
    return [...this.#entries.values()].filter(
      (e) => `${e.namespace}/${e.name}` === key && e.uid !== liveUid && !this.#removes.has(e.uid),
    );
  }

  all(): InFlightIntent[] {
    return [...this.#entries.values()];
  }

  /**
   * Records the intent durably (resolves true once written; at once when already recorded), or
   * resolves false when the record is full. Rejects when the write failed.
   */
  intend(intent: InFlightIntent): Promise<boolean> {
    this.#removes.delete(intent.uid);
    if (this.#entries.has(intent.uid)) return Promise.resolve(true);
    return new Promise<boolean>((resolve, reject) => {
      this.#adds.push({ intent, resolve, reject });
      this.#kick();
    });
  }

  /** Drops the intent of a settled claim with a later write (never waited on). */
  settle(uid: string): void {
    if (!this.#entries.has(uid) && !this.#adds.some((p) => p.intent.uid === uid)) return;
    this.#adds = this.#adds.filter((p) => (p.intent.uid === uid ? (p.resolve(true), false) : true));
    if (this.#entries.has(uid)) this.#removes.add(uid);
    this.#kick();
  }

  #kick(): void {
    if (this.#writing || (this.#adds.length === 0 && this.#removes.size === 0)) return;
    this.#writing = true;
    void this.#flush().finally(() => {
      this.#writing = false;
      this.#kick();
    });
  }

  async #flush(): Promise<void> {
    const adds = this.#adds;
    const removes = new Set(this.#removes);
    this.#adds = [];
    const next = new Map(this.#entries);
    for (const uid of removes) next.delete(uid);
    const accepted: Pending[] = [];
    let size = Buffer.byteLength(JSON.stringify(Object.fromEntries(next)));
    for (const pending of adds) {
      const bytes = Buffer.byteLength(JSON.stringify(pending.intent)) + 40;
      if (size + bytes > MAX_BYTES) {
        pending.resolve(false);
        continue;
      }
      size += bytes;
      next.set(pending.intent.uid, pending.intent);
      accepted.push(pending);
    }
    // Intents are waited on by new work (normal); removals alone wait on nobody (trailing).
    const priority = accepted.length > 0 ? REQUEST_PRIORITY.normal : REQUEST_PRIORITY.trailing;
    try {
      await withRequestPriority(priority, () => this.#write(next));
      for (const uid of removes) this.#removes.delete(uid);
      for (const pending of accepted) pending.resolve(true);
    } catch (error) {
      this.#logger.warn("could not write the in-flight ledger", {
        lease: `${this.namespace}/${this.name}`,
        code: apiStatusCode(error),
      });
      for (const pending of accepted) pending.reject(error);
    }
  }

  /** Replaces the record with `next`; on a conflict re-reads and applies the same changes. */
  async #write(next: Map<string, InFlightIntent>): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const body = {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: {
          name: this.name,
          namespace: this.namespace,
          resourceVersion: this.#resourceVersion,
          annotations: { [LEDGER_ANNOTATION]: JSON.stringify(Object.fromEntries(next)) },
        },
        spec: {},
      };
      try {
        const written = await this.#client.update(LEASES, body);
        this.#adopt(written);
        return;
      } catch (error) {
        if (apiStatusCode(error) !== 409 || attempt >= 3) throw error;
        // Someone else wrote it (a previous leader's last write): merge our changes onto theirs.
        const before = this.#entries;
        await this.load();
        const merged = new Map(this.#entries);
        for (const uid of before.keys()) if (!next.has(uid)) merged.delete(uid);
        for (const [uid, intent] of next) if (!before.has(uid)) merged.set(uid, intent);
        next = merged;
      }
    }
  }
}
