// The ClusterRole aggregation loop (kube-controller-manager's clusterrole-aggregation-controller,
// pkg/controller/clusterroleaggregation): a ClusterRole with an `aggregationRule` gets, as its
// `rules`, the rules of every other ClusterRole its selectors match — selectors in order, the
// matches of each sorted by name, a rule skipped when an equal one is already in the list — and
// is written only when that list differs from what it holds. Any ClusterRole change re-queues
// every aggregating ClusterRole (the set is small and the dependency graph unknown, as upstream
// reasons), so a new `aggregate-to-*` role shows up in `admin`/`edit`/`view`-style roles.
//
// The API server's RBAC authorizer resolves aggregation on its own when it decides, so
// permissions never wait for this loop; the loop makes the stored object say what is granted,
// which is what `kubectl get clusterrole -o yaml` and `kubectl describe` show.

import { isDeepStrictEqual } from "node:util";
import { GVR, labelSelectorMatches, type ClusterRole, type PolicyRule } from "../../api/index.ts";
import { silentLogger, type Logger } from "../../base/index.ts";
import {
  WorkQueue,
  controllerRateLimiter,
  isConflict,
  isNotFound,
  objectKey,
  runController,
  type InformerFactory,
  type KubeClient,
} from "../../kube/index.ts";

export interface AggregationControllerOptions {
  client: KubeClient;
  informers: InformerFactory;
  logger?: Logger;
  /** Concurrent workers. Default 5 (KCM starts this loop with 5). */
  workers?: number;
}

/** A rule with only the fields that carry meaning, so `[]` and a missing list compare equal. */
function normalizedRule(rule: PolicyRule): PolicyRule {
  const out: PolicyRule = { verbs: [...(rule.verbs ?? [])] };
  if (rule.apiGroups?.length) out.apiGroups = [...rule.apiGroups];
  if (rule.resources?.length) out.resources = [...rule.resources];
  if (rule.resourceNames?.length) out.resourceNames = [...rule.resourceNames];
  if (rule.nonResourceURLs?.length) out.nonResourceURLs = [...rule.nonResourceURLs];
  return out;
}

/** The rules `role` aggregates from `all` (pure: the whole decision, testable alone). */
export function aggregatedRules(role: ClusterRole, all: readonly ClusterRole[]): PolicyRule[] {
  const rules: PolicyRule[] = [];
  for (const selector of role.aggregationRule?.clusterRoleSelectors ?? []) {
    const matches = all
      .filter((other) => labelSelectorMatches(selector, other.metadata?.labels ?? {}))
      .sort((a, b) => ((a.metadata?.name ?? "") < (b.metadata?.name ?? "") ? -1 : 1));
    for (const other of matches) {
      if (other.metadata?.name === role.metadata?.name) continue;
      for (const rule of other.rules ?? []) {
        const candidate = normalizedRule(rule);
        if (!rules.some((existing) => isDeepStrictEqual(existing, candidate))) rules.push(candidate);
      }
    }
  }
  return rules;
}

export async function startClusterRoleAggregationController(
  options: AggregationControllerOptions,
  signal: AbortSignal,
): Promise<void> {
  const logger = (options.logger ?? silentLogger).with({ controller: "clusterrole-aggregation-controller" });
  const roles = options.informers.informer<ClusterRole>(GVR.clusterRoles);
  const queue = new WorkQueue<string>({
    name: "ClusterRoleAggregator",
    rateLimiter: controllerRateLimiter<string>({ retryIntervalStartMs: 5, retryIntervalMaxMs: 1_000_000 }),
  });
  const enqueueAggregating = (): void => {
    for (const role of roles.store.list()) if (role.aggregationRule) queue.add(objectKey(role));
  };
  const removeHandler = roles.addEventHandler({
    onAdd: enqueueAggregating,
    onUpdate: enqueueAggregating,
    onDelete: enqueueAggregating,
  });
  try {
    await runController(
      {
        name: "clusterrole-aggregation-controller",
        informers: [roles],
        queue,
        workers: options.workers ?? 5,
        logger,
        reconcile: async (key, { signal: reconcileSignal, logger: reconcileLogger }) => {
          const role = roles.store.get(key);
          if (!role?.aggregationRule) return;
          const rules = aggregatedRules(role, roles.store.list());
          if (isDeepStrictEqual(rules, (role.rules ?? []).map(normalizedRule))) return;
          try {
            await options.client.update(GVR.clusterRoles, { ...role, rules }, {}, reconcileSignal);
            reconcileLogger.info(2, "aggregated rules written", { rules: rules.length });
          } catch (error) {
            // Gone: nothing to do. Changed under us: the informer's update re-queues it.
            if (isNotFound(error) || isConflict(error)) return;
            throw error;
          }
        },
      },
      signal,
    );
  } finally {
    removeHandler();
  }
}
