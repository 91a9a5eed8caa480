// The dashboard's live model: shared informers (list + watch, no polling) on the objects a
// volume's journey touches, folded into rows the page draws — claims with their journey, nodes,
// leader leases, events — and handed to subscribers as small messages. Claim rows are
// recomputed only for the claims an object change touches, coalesced per animation-sized tick.

import {
  GVR,
  type CSIDriver,
  type CSINode,
  type Lease,
  type Node,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type VolumeAttachment,
} from "../api/index.ts";
import { errorMessage, silentLogger, type Logger } from "../base/index.ts";
import {
  deletedObject,
  InformerFactory,
  type CoreEvent,
  type KubeClient,
  type KubeObject,
  type SharedInformer,
  type Tombstone,
} from "../kube/index.ts";
import { journey, nextHistory, type ClaimHistory, type ClaimRow, type SnapshotRef } from "./journey.ts";

export interface NodeRow {
  name: string;
  zone: string;
  ready: boolean;
  /** Drivers registered in the node's CSINode. */
  drivers: string[];
  /** CSINode allocatable count of the first driver ("" when it sets none). */
  allocatable: string;
  attached: number;
}

export interface LeaseRow {
  name: string;
  namespace: string;
  holder: string;
  renewed: string;
  /** The renew time is older than the lease duration. */
  expired: boolean;
}

export interface EventRow {
  uid: string;
  time: string;
  type: string;
  reason: string;
  object: string;
  message: string;
  count: number;
}

export type LiveMessage =
  | { type: "claims"; upsert: ClaimRow[]; remove: string[] }
  | { type: "nodes"; nodes: NodeRow[] }
  | { type: "leases"; leases: LeaseRow[] }
  | { type: "events"; events: EventRow[] };

interface VolumeSnapshot extends KubeObject {
  spec?: { source?: { persistentVolumeClaimName?: string } };
  status?: { readyToUse?: boolean; error?: { message?: string } };
}

const EVENTS_KEPT = 500;
const DELETED_KEPT = 200;
export const ZONE_LABEL = "topology.kubernetes.io/zone";

const keyOf = (object: KubeObject): string =>
  `${object.metadata?.namespace ?? ""}/${object.metadata?.name ?? ""}`;

function claimsOfPod(pod: Pod): string[] {
  return (pod.spec?.volumes ?? [])
    .map(
      (volume) =>
        volume.persistentVolumeClaim?.claimName ??
        (volume.ephemeral ? `${pod.metadata?.name}-${volume.name}` : undefined),
    )
    .filter((name): name is string => name !== undefined)
    .map((name) => `${pod.metadata?.namespace ?? ""}/${name}`);
}

function eventRow(event: CoreEvent): EventRow {
  const ref = event.involvedObject;
  return {
    uid: event.metadata?.uid ?? keyOf(event),
    time: event.lastTimestamp || event.firstTimestamp || event.metadata?.creationTimestamp || "",
    type: event.type,
    reason: event.reason,
    object: `${ref.kind ?? ""}/${ref.namespace ? `${ref.namespace}/` : ""}${ref.name ?? ""}`,
    message: event.message,
    count: event.count ?? 1,
  };
}

export interface LiveOptions {
  client: KubeClient;
  logger?: Logger;
  /** Coalescing delay of claim updates, ms. Default 50. */
  tickMs?: number;
}

export class LiveModel {
  readonly #client: KubeClient;
  readonly #logger: Logger;
  readonly #tickMs: number;
  readonly #factory: InformerFactory;
  readonly #listeners = new Set<(message: LiveMessage) => void>();
  readonly #dirty = new Set<string>();
  readonly #history = new Map<string, ClaimHistory>();
  readonly #rows = new Map<string, ClaimRow>();
  readonly #deleted: string[] = [];
  readonly #events: EventRow[] = [];
  #timer: NodeJS.Timeout | undefined;
  #nodesDirty = false;
  #leasesDirty = false;
  #snapshots: SharedInformer<VolumeSnapshot> | undefined;
  readonly claims: SharedInformer<PersistentVolumeClaim>;
  readonly pvs: SharedInformer<PersistentVolume>;
  readonly attachments: SharedInformer<VolumeAttachment>;
  readonly pods: SharedInformer<Pod>;
  readonly events: SharedInformer<CoreEvent>;
  readonly nodes: SharedInformer<Node>;
  readonly csiNodes: SharedInformer<CSINode>;
  readonly csiDrivers: SharedInformer<CSIDriver>;
  readonly leases: SharedInformer<Lease>;

  constructor(options: LiveOptions) {
    this.#client = options.client;
    this.#logger = options.logger ?? silentLogger;
    this.#tickMs = options.tickMs ?? 50;
    this.#factory = new InformerFactory({ client: options.client, logger: this.#logger });
    const f = this.#factory;
    this.claims = f.informer(GVR.persistentVolumeClaims);
    this.pvs = f.informer(GVR.persistentVolumes);
    this.attachments = f.informer(GVR.volumeAttachments);
    this.pods = f.informer(GVR.pods);
    this.events = f.informer(GVR.events);
    this.nodes = f.informer(GVR.nodes);
    this.csiNodes = f.informer(GVR.csiNodes);
    this.csiDrivers = f.informer(GVR.csiDrivers);
    this.leases = f.informer(GVR.leases);
    this.pvs.addEventHandler(this.#handlers((pv: PersistentVolume) => this.#touchRef(pv.spec?.claimRef)));
    this.attachments.addEventHandler(
      this.#handlers((va: VolumeAttachment) =>
        this.#touchRef(this.pvs.store.get(va.spec.source.persistentVolumeName ?? "")?.spec?.claimRef),
      ),
    );
    this.pods.addEventHandler(
      this.#handlers((pod: Pod) => {
        for (const key of claimsOfPod(pod)) this.#dirty.add(key);
      }),
    );
    this.csiDrivers.addEventHandler(
      this.#handlers(() => {
        for (const key of this.claims.store.list().map(keyOf)) this.#dirty.add(key);
      }),
    );
    this.claims.addEventHandler({
      onAdd: (claim) => this.#mark(keyOf(claim)),
      onUpdate: (_, claim) => this.#mark(keyOf(claim)),
      onDelete: (gone) => this.#claimDeleted(deletedObject(gone)),
    });
    this.events.addEventHandler({
      onAdd: (event) => this.#event(event),
      onUpdate: (_, event) => this.#event(event),
    });
    for (const informer of [this.nodes, this.csiNodes] as SharedInformer<KubeObject>[])
      informer.addEventHandler(this.#handlers(() => void (this.#nodesDirty = true)));
    this.attachments.addEventHandler(this.#handlers(() => void (this.#nodesDirty = true)));
    this.leases.addEventHandler(this.#handlers(() => void (this.#leasesDirty = true)));
  }

  #handlers<T extends KubeObject>(touch: (object: T) => void) {
    return {
      onAdd: (object: T) => (touch(object), this.#schedule()),
      onUpdate: (_: T, object: T) => (touch(object), this.#schedule()),
      onDelete: (object: T | Tombstone<T>) => (touch(deletedObject(object)), this.#schedule()),
    };
  }

  /** Starts the watches (VolumeSnapshots too when their CRD is served); resolves once synced. */
  async start(signal: AbortSignal): Promise<void> {
    try {
      await this.#client.list(GVR.volumeSnapshots, { limit: 1 }, signal);
      this.#snapshots = this.#factory.informer(GVR.volumeSnapshots);
      this.#snapshots.addEventHandler(
        this.#handlers((snapshot: VolumeSnapshot) => {
          const claim = snapshot.spec?.source?.persistentVolumeClaimName;
          if (claim) this.#mark(`${snapshot.metadata?.namespace ?? ""}/${claim}`);
        }),
      );
    } catch (error) {
      this.#logger.info(2, "no VolumeSnapshots served: the snapshot step stays empty", {
        err: errorMessage(error),
      });
    }
    void this.#factory.start(signal);
    await this.#factory.waitForCacheSync(signal);
    signal.addEventListener("abort", () => clearTimeout(this.#timer), { once: true });
  }

  /** Every message a new page needs to draw the present state. */
  snapshot(): LiveMessage[] {
    this.#flush(false);
    return [
      { type: "nodes", nodes: this.nodeRows() },
      { type: "leases", leases: this.leaseRows() },
      { type: "events", events: [...this.#events] },
      { type: "claims", upsert: [...this.#rows.values()], remove: [] },
    ];
  }

  subscribe(listener: (message: LiveMessage) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  row(key: string): ClaimRow | undefined {
    return this.#rows.get(key);
  }

  #mark(key: string): void {
    this.#dirty.add(key);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#timer === undefined) this.#timer = setTimeout(() => this.#flush(true), this.#tickMs);
  }

  #touchRef(ref: { namespace?: string; name?: string } | undefined): void {
    if (ref?.name) this.#dirty.add(`${ref.namespace ?? ""}/${ref.name}`);
  }

  #event(event: CoreEvent): void {
    const row = eventRow(event);
    const at = this.#events.findIndex((e) => e.uid === row.uid);
    if (at >= 0) this.#events.splice(at, 1);
    this.#events.push(row);
    if (this.#events.length > EVENTS_KEPT) this.#events.splice(0, this.#events.length - EVENTS_KEPT);
    const ref = event.involvedObject;
    if (ref.kind === "PersistentVolumeClaim") this.#dirty.add(`${ref.namespace ?? ""}/${ref.name ?? ""}`);
    else if (ref.kind === "Pod") {
      const pod = this.pods.store.get(`${ref.namespace ?? ""}/${ref.name ?? ""}`);
      if (pod) for (const key of claimsOfPod(pod)) this.#dirty.add(key);
    }
    this.#emit({ type: "events", events: [row] });
    this.#schedule();
  }

  #claimDeleted(claim: PersistentVolumeClaim): void {
    const key = keyOf(claim);
    this.#dirty.delete(key);
    const row = this.#build(claim, true);
    this.#rows.set(key, row);
    this.#history.delete(key);
    this.#deleted.push(key);
    const remove =
      this.#deleted.length > DELETED_KEPT ? this.#deleted.splice(0, this.#deleted.length - DELETED_KEPT) : [];
    for (const gone of remove) this.#rows.delete(gone);
    this.#emit({ type: "claims", upsert: [row], remove });
  }

  #flush(emit: boolean): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const upsert: ClaimRow[] = [];
    for (const key of this.#dirty) {
      const claim = this.claims.store.get(key);
      if (!claim) continue;
      const row = this.#build(claim, false);
      this.#rows.set(key, row);
      const at = this.#deleted.indexOf(key);
      if (at >= 0) this.#deleted.splice(at, 1);
      upsert.push(row);
    }
    this.#dirty.clear();
    if (!emit) return;
    if (upsert.length > 0) this.#emit({ type: "claims", upsert, remove: [] });
    if (this.#nodesDirty) this.#emit({ type: "nodes", nodes: this.nodeRows() });
    if (this.#leasesDirty) this.#emit({ type: "leases", leases: this.leaseRows() });
    this.#nodesDirty = this.#leasesDirty = false;
  }

  #build(claim: PersistentVolumeClaim, deleted: boolean): ClaimRow {
    const key = keyOf(claim);
    const [namespace, name] = [claim.metadata?.namespace ?? "", claim.metadata?.name ?? ""];
    const pvName = claim.spec?.volumeName;
    const pv = pvName
      ? this.pvs.store.get(pvName)
      : this.pvs.store.list().find((p) => p.spec?.claimRef?.uid === claim.metadata?.uid);
    const volume = pv?.metadata?.name ?? pvName;
    const attachments = volume
      ? this.attachments.store.list().filter((va) => va.spec.source.persistentVolumeName === volume)
      : [];
    const pods = this.pods.store.list().filter((pod) => claimsOfPod(pod).includes(key));
    const podNames = new Set(pods.map((pod) => pod.metadata?.name));
    const events = this.events.store
      .list()
      .filter((event) => {
        const ref = event.involvedObject;
        if (ref.namespace !== namespace) return false;
        return (
          (ref.kind === "PersistentVolumeClaim" && ref.name === name) ||
          (ref.kind === "Pod" && podNames.has(ref.name))
        );
      })
      .sort((a, b) => (a.lastTimestamp ?? "").localeCompare(b.lastTimestamp ?? ""));
    const snapshots: SnapshotRef[] = (this.#snapshots?.store.list() ?? [])
      .filter(
        (s) => s.metadata?.namespace === namespace && s.spec?.source?.persistentVolumeClaimName === name,
      )
      .map((s) => ({
        name: s.metadata?.name ?? "",
        ready: s.status?.readyToUse === true,
        ...(s.status?.error?.message ? { error: s.status.error.message } : {}),
      }));
    const driverName = pv?.spec?.csi?.driver;
    const driver = driverName ? this.csiDrivers.store.get(driverName) : undefined;
    const history = this.#history.get(key) ?? {};
    const row = journey({
      claim,
      pv,
      attachments,
      pods,
      events,
      snapshots,
      attachRequired: driver?.spec?.attachRequired !== false,
      history,
      deleted,
    });
    this.#history.set(key, nextHistory(history, row));
    return row;
  }

  nodeRows(): NodeRow[] {
    const attached = new Map<string, number>();
    for (const va of this.attachments.store.list())
      if (va.status?.attached) attached.set(va.spec.nodeName, (attached.get(va.spec.nodeName) ?? 0) + 1);
    return this.nodes.store
      .list()
      .map((node) => {
        const name = node.metadata?.name ?? "";
        const csiNode = this.csiNodes.store.get(name);
        const drivers = csiNode?.spec.drivers ?? [];
        const count = drivers[0]?.allocatable?.count;
        return {
          name,
          zone: node.metadata?.labels?.[ZONE_LABEL] ?? "",
          ready: (node.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True"),
          drivers: drivers.map((d) => d.name),
          allocatable: count === undefined ? "" : String(count),
          attached: attached.get(name) ?? 0,
        };
      })
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  leaseRows(now = Date.now()): LeaseRow[] {
    return this.leases.store
      .list()
      .filter(
        (lease) =>
          lease.spec?.holderIdentity !== undefined && lease.metadata?.namespace !== "kube-node-lease",
      )
      .map((lease) => {
        const renewed = lease.spec?.renewTime ?? "";
        const duration = (lease.spec?.leaseDurationSeconds ?? 15) * 1000;
        return {
          name: lease.metadata?.name ?? "",
          namespace: lease.metadata?.namespace ?? "",
          holder: lease.spec?.holderIdentity ?? "",
          renewed,
          expired: renewed === "" || now - Date.parse(renewed) > duration,
        };
      })
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  #emit(message: LiveMessage): void {
    for (const listener of this.#listeners) {
      try {
        listener(message);
      } catch (error) {
        this.#logger.info(2, "dashboard listener failed", { err: errorMessage(error) });
      }
    }
  }
}
