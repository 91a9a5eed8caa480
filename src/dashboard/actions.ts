// What the page may ask the API server to do, with the dashboard's (admin) identity: create a
// claim and a pod using it, grow a claim, change its VolumeAttributesClass, snapshot it, delete
// it (and the pods using it). Each input is checked here and refused with a clear message; the
// API server's own validation and admission judge the rest.

import { GVR, type PersistentVolumeClaim, type Pod } from "../api/index.ts";
import type { KubeClient, KubeObject } from "../kube/index.ts";

export class ActionError extends Error {}

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const QUANTITY = /^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$/;
const ACCESS_MODES = ["ReadWriteOnce", "ReadWriteOncePod", "ReadOnlyMany", "ReadWriteMany"];
const VOLUME_MODES = ["Filesystem", "Block"];

function field(
  input: Record<string, unknown>,
  name: string,
  pattern: RegExp | readonly string[],
  optional = false,
): string {
  const value = input[name];
  if ((value === undefined || value === "") && optional) return "";
  if (typeof value !== "string" || value.length > 253) throw new ActionError(`${name}: want a string`);
  const ok = Array.isArray(pattern) ? pattern.includes(value) : (pattern as RegExp).test(value);
  if (!ok)
    throw new ActionError(
      `${name}: ${JSON.stringify(value)} is not valid (${Array.isArray(pattern) ? `want ${pattern.join(", ")}` : "want a DNS-1123 name or a quantity such as 2Mi"})`,
    );
  return value;
}

export async function runAction(client: KubeClient, input: Record<string, unknown>): Promise<string> {
  const action = input.action;
  const namespace = field(input, "namespace", NAME);
  const name = field(input, "name", NAME);
  switch (action) {
    case "create": {
      const storageClass = field(input, "storageClass", NAME, true);
      const size = field(input, "size", QUANTITY);
      const accessMode = field(input, "accessMode", ACCESS_MODES);
      const volumeMode = field(input, "volumeMode", VOLUME_MODES);
      const claim: PersistentVolumeClaim = {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        metadata: { name, namespace },
        spec: {
          accessModes: [accessMode as "ReadWriteOnce"],
          volumeMode: volumeMode as "Filesystem",
          resources: { requests: { storage: size } },
          ...(storageClass ? { storageClassName: storageClass } : {}),
        },
      };
      await client.create(GVR.persistentVolumeClaims, claim);
      const container =
        volumeMode === "Block"
          ? { volumeDevices: [{ name: "data", devicePath: "/dev/data" }] }
          : { volumeMounts: [{ name: "data", mountPath: "/data" }] };
      const pod: Pod = {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: `${name}-pod`, namespace },
        spec: {
          containers: [{ name: "app", image: "busybox", command: ["sleep", "3600"], ...container }],
          volumes: [{ name: "data", persistentVolumeClaim: { claimName: name } }],
        },
      };
      await client.create(GVR.pods, pod);
      return `claim ${namespace}/${name} and pod ${name}-pod created`;
    }
    case "grow": {
      const size = field(input, "size", QUANTITY);
      await client.patch(
        GVR.persistentVolumeClaims,
        name,
        { spec: { resources: { requests: { storage: size } } } },
        { namespace, type: "merge" },
      );
      return `claim ${namespace}/${name} asked to grow to ${size}`;
    }
    case "modify": {
      const className = field(input, "volumeAttributesClass", NAME);
      await client.patch(
        GVR.persistentVolumeClaims,
        name,
        { spec: { volumeAttributesClassName: className } },
        { namespace, type: "merge" },
      );
      return `claim ${namespace}/${name} asked to move to VolumeAttributesClass ${className}`;
    }
    case "snapshot": {
      const snapshotClass = field(input, "snapshotClass", NAME, true);
      const snapshotName = `${name}-snap-${Date.now().toString(36)}`;
      const snapshot: KubeObject & { spec: unknown } = {
        apiVersion: "snapshot.storage.k8s.io/v1",
        kind: "VolumeSnapshot",
        metadata: { name: snapshotName, namespace },
        spec: {
          source: { persistentVolumeClaimName: name },
          ...(snapshotClass ? { volumeSnapshotClassName: snapshotClass } : {}),
        },
      };
      await client.create(GVR.volumeSnapshots, snapshot);
      return `VolumeSnapshot ${namespace}/${snapshotName} of ${name} created`;
    }
    case "delete": {
      const pods = await client.list<Pod>(GVR.pods, { namespace });
      const users = pods.items.filter((pod) =>
        (pod.spec?.volumes ?? []).some((v) => v.persistentVolumeClaim?.claimName === name),
      );
      for (const pod of users) await client.delete(GVR.pods, pod.metadata?.name ?? "", { namespace });
      await client.delete(GVR.persistentVolumeClaims, name, { namespace });
      return `claim ${namespace}/${name} deleted${users.length > 0 ? ` with ${users.length} pod(s) using it` : ""}`;
    }
    default:
      throw new ActionError(
        `action: want create, grow, modify, snapshot or delete, not ${JSON.stringify(action)}`,
      );
  }
}

/** Choices for the forms: classes the cluster has. */
export async function formOptions(client: KubeClient): Promise<Record<string, string[]>> {
  const names = async (gvr: (typeof GVR)[keyof typeof GVR]): Promise<string[]> => {
    try {
      return (await client.list(gvr)).items.map((o) => o.metadata?.name ?? "");
    } catch {
      return [];
    }
  };
  const [storageClasses, volumeAttributesClasses, snapshotClasses, namespaces] = await Promise.all([
    names(GVR.storageClasses),
    names(GVR.volumeAttributesClasses),
    names(GVR.volumeSnapshotClasses),
    names(GVR.namespaces),
  ]);
  return {
    storageClasses,
    volumeAttributesClasses,
    snapshotClasses,
    namespaces,
    accessModes: ACCESS_MODES,
    volumeModes: VOLUME_MODES,
  };
}
