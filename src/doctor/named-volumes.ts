// Which backend volume handles of a driver something in the API names — the set a volume must
// be absent from before doctor may call it leaked. Not only CSI PVs: an in-tree PV or inline
// volume migrated to this driver names its volume in in-tree form (translated here with the
// migration library, as the sidecars see it), a VolumeAttachment of a migrated inline volume
// carries its spec, and a pod's CSI inline ephemeral volume has the handle
// csi-<sha256(podUID + volume name)> (a driver may list those too). When an in-tree object of
// this driver cannot be translated, its handle is unknown: `complete` is false and no volume of
// the driver may be called leaked.

import { createHash } from "node:crypto";
import type { PersistentVolume, PersistentVolumeSpec } from "../api/index.ts";
import {
  pluginForInlineVolume,
  pluginForPV,
  translateInTreeInlineVolumeToCSI,
  translateInTreePVToCSI,
} from "../migration/index.ts";
import type { ClusterState } from "./types.ts";

export interface NamedVolumes {
  handles: Set<string>;
  /** False when an in-tree object of the driver could not be translated (its handle is unknown). */
  complete: boolean;
  /** What could not be translated, for the finding's why. */
  untranslatable: string[];
}

function inlineEphemeralHandle(podUid: string, volumeName: string): string {
  return `csi-${createHash("sha256")
    .update(podUid + volumeName)
    .digest("hex")}`;
}

export function namedVolumeHandles(cluster: ClusterState, driver: string): NamedVolumes {
  const named: NamedVolumes = { handles: new Set(), complete: true, untranslatable: [] };
  const addSpec = (
    spec: PersistentVolumeSpec | undefined,
    what: string,
    translate: () => PersistentVolume,
  ): void => {
    if (spec?.csi) {
      if (spec.csi.driver === driver && spec.csi.volumeHandle) named.handles.add(spec.csi.volumeHandle);
      return;
    }
    const plugin = pluginForPV({ metadata: {}, spec: spec ?? {} });
    if (!plugin || plugin.csiDriverName !== driver) return;
    try {
      const csi = translate().spec?.csi;
      if (csi?.volumeHandle) named.handles.add(csi.volumeHandle);
    } catch {
      named.complete = false;
      named.untranslatable.push(what);
    }
  };
  for (const pv of cluster.persistentVolumes)
    addSpec(pv.spec, `PersistentVolume ${pv.metadata.name}`, () => translateInTreePVToCSI(pv));
  for (const va of cluster.volumeAttachments) {
    const spec = va.spec.source.inlineVolumeSpec;
    if (spec)
      addSpec(spec, `VolumeAttachment ${va.metadata.name}`, () =>
        translateInTreePVToCSI({ metadata: {}, spec }),
      );
  }
  for (const pod of cluster.pods) {
    for (const volume of pod.spec?.volumes ?? []) {
      if (volume.csi?.driver === driver && pod.metadata.uid)
        named.handles.add(inlineEphemeralHandle(pod.metadata.uid, volume.name));
      const plugin = pluginForInlineVolume(volume);
      if (!plugin || plugin.csiDriverName !== driver) continue;
      try {
        const csi = translateInTreeInlineVolumeToCSI(volume, pod.metadata.namespace ?? "").spec?.csi;
        if (csi?.volumeHandle) named.handles.add(csi.volumeHandle);
      } catch {
        named.complete = false;
        named.untranslatable.push(`pod ${pod.metadata.namespace}/${pod.metadata.name} volume ${volume.name}`);
      }
    }
  }
  return named;
}
