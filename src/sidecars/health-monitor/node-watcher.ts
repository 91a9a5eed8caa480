// The node watcher (--enable-node-watcher), as upstream's: a Node that is deleted, has phase
// Terminated, or stays NotReady longer than 5 minutes is "failed", and every Bound PV of this
// driver whose claim is used by a pod on it gets a Warning `NodeFailed` on the claim naming
// those pods; when a node marked failed is Ready again, the same claims get `NodeRecovered`.
// State (when a node was first seen NotReady, which nodes were marked) is in memory, as
// upstream's: a restarted monitor starts afresh.

import type { Node, PersistentVolumeClaim, Pod } from "../../api/index.ts";
import type { HealthMonitorContext } from "./context.ts";
import { isMonitoredVolume } from "./volume-check.ts";
import {
  DEFAULT_NODE_NOT_READY_TIMEOUT_MS,
  REASON,
  nodeFailedMessage,
  nodeRecoveredMessage,
} from "./names.ts";

function isReady(node: Node): boolean {
  return (node.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
}

/** The claims (namespace/name) a pod mounts through persistentVolumeClaim volumes. */
function claimKeysOf(pod: Pod): string[] {
  const namespace = pod.metadata?.namespace ?? "";
  return (pod.spec?.volumes ?? []).flatMap((v) =>
    v.persistentVolumeClaim ? [`${namespace}/${v.persistentVolumeClaim.claimName}`] : [],
  );
}

/** Thrown when a claim to report on is missing from the cache: the node is looked at again. */
class ClaimNotCached extends Error {}

export class NodeWatcher {
  readonly #ctx: HealthMonitorContext;
  /** When each node was first seen NotReady (ms on the context's clock). */
  readonly #firstBroken = new Map<string, number>();
  /** Nodes reported failed and not yet recovered. */
  readonly #markedDown = new Set<string>();

  constructor(ctx: HealthMonitorContext) {
    this.#ctx = ctx;
  }

  /**
   * Looks at one node by name (deleted when not in the cache). Returns false when it must be
   * looked at again (a claim to report on was not in the cache yet).
   */
  sync(name: string): boolean {
    const node = this.#ctx.nodes?.store.get(name);
    try {
      if (!node) {
        this.#ctx.logger.info(2, "node is deleted, so mark the PVs on it", { node: name });
        this.#report(name, "failed");
        return true;
      }
      this.#update(node);
      return true;
    } catch (error) {
      if (error instanceof ClaimNotCached) {
        this.#ctx.logger.info(2, "claim not found, node re-queued", { node: name, claim: error.message });
        return false;
      }
      throw error;
    }
  }

  #update(node: Node): void {
    const name = node.metadata?.name ?? "";
    if (isReady(node)) {
      this.#firstBroken.delete(name);
      if (this.#markedDown.has(name)) {
        this.#report(name, "recovered");
        this.#markedDown.delete(name);
      }
      return;
    }
    if (!this.#isBroken(node)) return;
    this.#ctx.logger.info(2, "node is broken", { node: name });
    this.#report(name, "failed");
    this.#firstBroken.delete(name);
    this.#markedDown.add(name);
  }

  #isBroken(node: Node): boolean {
    if (node.status?.phase === "Terminated") return true;
    const name = node.metadata?.name ?? "";
    const notReady = (node.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status !== "True");
    if (!notReady) return false;
    const first = this.#firstBroken.get(name);
    const now = this.#ctx.clock.now();
    if (first === undefined) {
      this.#firstBroken.set(name, now);
      return false;
    }
    return now - first > (this.#ctx.options.nodeNotReadyTimeoutMs ?? DEFAULT_NODE_NOT_READY_TIMEOUT_MS);
  }

  /** One event per claim of this driver used by pods on `nodeName`. */
  #report(nodeName: string, what: "failed" | "recovered"): void {
    const podsByClaim = new Map<string, string[]>();
    for (const pod of this.#ctx.pods?.store.list() ?? []) {
      if (pod.spec?.nodeName !== nodeName) continue;
      for (const key of claimKeysOf(pod)) {
        const names = podsByClaim.get(key) ?? [];
        names.push(pod.metadata?.name ?? "");
        podsByClaim.set(key, names);
      }
    }
    const found: { claim: PersistentVolumeClaim; pods: string[] }[] = [];
    for (const pv of this.#ctx.volumes.store.list()) {
      if (!isMonitoredVolume(pv, this.#ctx.driver.name)) continue;
      const key = `${pv.spec!.claimRef!.namespace}/${pv.spec!.claimRef!.name}`;
      const pods = podsByClaim.get(key);
      if (!pods) continue;
      const claim = this.#ctx.claims.store.get(key);
      if (!claim) throw new ClaimNotCached(key);
      found.push({ claim, pods });
    }
    for (const { claim, pods } of found) {
      if (what === "failed")
        this.#ctx.events.event(
          claim,
          "Warning",
          REASON.nodeFailed,
          nodeFailedMessage(
            pods,
            { namespace: claim.metadata?.namespace ?? "", name: claim.metadata?.name ?? "" },
            nodeName,
          ),
        );
      else this.#ctx.events.event(claim, "Warning", REASON.nodeRecovered, nodeRecoveredMessage(nodeName));
    }
  }
}
