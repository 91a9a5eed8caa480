// Collects what a driver's controller service says exists: its name (GetPluginInfo), its
// capabilities, and every volume and snapshot through ListVolumes/ListSnapshots, page by page.
// A listing the driver cannot give (no LIST_VOLUMES / LIST_SNAPSHOTS) is absent, with a note
// saying which checks that skips. A listing that changed under its paging (ABORTED on a stale
// starting_token, CSI spec) starts over, a bounded number of times: checks need a whole listing,
// since a volume missing from a partial one would look gone.

import { ValidationError } from "../base/index.ts";
import {
  GrpcStatus,
  grpcCode,
  type CsiClient,
  type ListVolumesResponse_Entry,
  type Snapshot,
} from "../csi/index.ts";
import type { BackendState } from "./types.ts";

/** Entries per ListVolumes/ListSnapshots page. */
const PAGE_SIZE = 500;
/** Fresh starts of a listing that kept changing under its paging. */
const LISTING_ATTEMPTS = 3;

export interface BackendCollection {
  backend: BackendState;
  /** One line per check skipped and why. */
  notes: string[];
}

async function paged<T>(page: (token: string) => Promise<{ items: T[]; next: string }>): Promise<T[]> {
  for (let attempt = 1; ; attempt++) {
    const items: T[] = [];
    let token = "";
    try {
      do {
        const answer = await page(token);
        items.push(...answer.items);
        token = answer.next;
      } while (token !== "");
      return items;
    } catch (error) {
      if (grpcCode(error) !== GrpcStatus.ABORTED || attempt >= LISTING_ATTEMPTS) throw error;
    }
  }
}

export async function listAllVolumes(
  client: CsiClient,
  signal?: AbortSignal,
): Promise<ListVolumesResponse_Entry[]> {
  return paged(async (startingToken) => {
    const answer = await client.controller.listVolumes(
      { maxEntries: PAGE_SIZE, startingToken },
      signal ? { signal } : {},
    );
    return { items: answer.entries, next: answer.nextToken };
  });
}

export async function listAllSnapshots(client: CsiClient, signal?: AbortSignal): Promise<Snapshot[]> {
  return paged(async (startingToken) => {
    const answer = await client.controller.listSnapshots(
      { maxEntries: PAGE_SIZE, startingToken },
      signal ? { signal } : {},
    );
    return {
      items: answer.entries.flatMap((entry) => (entry.snapshot ? [entry.snapshot] : [])),
      next: answer.nextToken,
    };
  });
}

export async function collectBackend(
  client: CsiClient,
  options: { driverName?: string; signal?: AbortSignal },
): Promise<BackendCollection> {
  const call = options.signal ? { signal: options.signal } : {};
  const info = await client.identity.getPluginInfo({}, call);
  const driverName = options.driverName || info.name;
  if (!driverName) throw new ValidationError("the driver's GetPluginInfo gave no name: give --driver-name");
  const notes: string[] = [];
  if (options.driverName && info.name && options.driverName !== info.name)
    notes.push(`note: --driver-name ${options.driverName} differs from the driver's own name ${info.name}`);
  const plugin = await client.pluginCapabilities(call);
  const controller = plugin.has("CONTROLLER_SERVICE")
    ? await client.controllerCapabilities(call)
    : new Set<string>();
  if (!plugin.has("CONTROLLER_SERVICE"))
    notes.push(
      `skipped backend checks: driver ${driverName} has no controller service (is this its node socket?)`,
    );
  const backend: BackendState = {
    driverName,
    publishedNodes: controller.has("LIST_VOLUMES_PUBLISHED_NODES"),
  };
  if (controller.has("LIST_VOLUMES")) backend.volumes = await listAllVolumes(client, options.signal);
  else if (plugin.has("CONTROLLER_SERVICE"))
    notes.push(
      `skipped leaked-volume and missing-volume checks: driver ${driverName} does not offer LIST_VOLUMES`,
    );
  if (controller.has("LIST_SNAPSHOTS")) backend.snapshots = await listAllSnapshots(client, options.signal);
  else if (plugin.has("CONTROLLER_SERVICE"))
    notes.push(`skipped leaked-snapshot checks: driver ${driverName} does not offer LIST_SNAPSHOTS`);
  return { backend, notes };
}
