// The CRDs `csikit up` serves before any component starts: every deploy/crds/*.yaml (the
// upstream snapshot, group snapshot and changed-block-tracking CRDs), created when absent and
// updated only when the stored spec lacks or differs from what the file says — the server's
// defaults (conversion None, singular, listKind) are not a difference — so a restart on the same
// state dir writes nothing, and a file edited between two runs takes effect.

import { fileURLToPath } from "node:url";
import { isRecord } from "../base/index.ts";
import { GVR } from "../api/index.ts";
import { isAlreadyExists, type KubeClient } from "../kube/index.ts";
import { readManifests, type Manifest } from "./manifests.ts";
import { pollUntil } from "./poll.ts";

/** deploy/crds/ of this checkout. */
export const CRDS_DIR = fileURLToPath(new URL("../../deploy/crds/", import.meta.url));

/** Whether every field `want` sets is in `have` with the same value (lists compared whole, in order). */
function covers(have: unknown, want: unknown): boolean {
  if (Array.isArray(want)) {
    return (
      Array.isArray(have) && have.length === want.length && want.every((item, i) => covers(have[i], item))
    );
  }
  if (isRecord(want)) {
    return isRecord(have) && Object.entries(want).every(([key, value]) => covers(have[key], value));
  }
  return have === want;
}

export interface CrdInstall {
  created: string[];
  updated: string[];
  unchanged: string[];
}

/** Creates or updates each CRD of `dir` (see the header); does not wait for them to be served. */
export async function applyCrds(client: KubeClient, dir: string, signal?: AbortSignal): Promise<CrdInstall> {
  const result: CrdInstall = { created: [], updated: [], unchanged: [] };
  for (const manifest of await readManifests(dir)) {
    const name = manifest.metadata.name;
    try {
      await client.create(GVR.customResourceDefinitions, manifest, signal);
      result.created.push(name);
      continue;
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
    }
    const live = await client.get<Manifest>(GVR.customResourceDefinitions, name, {}, signal);
    if (
      covers(live.spec, manifest.spec) &&
      covers(live.metadata.annotations ?? {}, manifest.metadata.annotations ?? {})
    ) {
      result.unchanged.push(name);
      continue;
    }
    await client.update(
      GVR.customResourceDefinitions,
      {
        ...live,
        metadata: {
          ...live.metadata,
          annotations: {
            ...(live.metadata.annotations as object),
            ...(manifest.metadata.annotations as object),
          },
        },
        spec: manifest.spec,
      },
      {},
      signal,
    );
    result.updated.push(name);
  }
  return result;
}

interface CrdSpec {
  group: string;
  scope: string;
  names: { plural: string };
  versions: { name: string; served?: boolean }[];
}

/** Applies the CRDs of `dir` and waits until every served version of each answers a list. */
export async function installCrds(
  client: KubeClient,
  dir: string,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<CrdInstall> {
  const result = await applyCrds(client, dir, signal);
  const crds = (await readManifests(dir)).map((manifest) => manifest.spec as CrdSpec);
  await pollUntil("the CRDs of deploy/crds served", timeoutMs, signal, async () => {
    for (const crd of crds) {
      for (const version of crd.versions) {
        if (version.served !== true) continue;
        await client.list(
          { group: crd.group, version: version.name, resource: crd.names.plural },
          { limit: 1 },
          signal,
        );
      }
    }
    return true;
  });
  return result;
}
