// kube-controller-manager's volume metrics, with its names and labels, so the dashboards and
// alerts people keep for a Go control plane read csikit's too. The selinux-warning-controller's
// gauge lists its current conflicts at scrape time (one series of value 1 per pod of each
// conflicting pair, as upstream's collector). The PV controller's collector
// counts bound and unbound volumes and claims at scrape time from the informer caches (as
// upstream's pvAndPVCCountCollector does); the attach/detach controller's gauge counts the
// VolumeAttachments by plugin. The work queues report their workqueue_* metrics through the
// process-wide provider (setWorkQueueMetricsProvider), as client-go's do.

import type { PersistentVolume, PersistentVolumeClaim, VolumeAttachment } from "../api/index.ts";
import { GVR } from "../api/index.ts";
import { Gauge, type InformerFactory, type Registry, type Store } from "../kube/index.ts";

interface Caches {
  volumes: Store<PersistentVolume>;
  claims: Store<PersistentVolumeClaim>;
  attachments: Store<VolumeAttachment>;
}

/** The plugin name a PV's source belongs to (kubernetes.io/csi:<driver> for CSI volumes). */
function pluginOf(volume: PersistentVolume): string {
  const spec = (volume.spec ?? {}) as Record<string, unknown>;
  const csi = spec.csi as { driver?: string } | undefined;
  if (csi?.driver) return `kubernetes.io/csi:${csi.driver}`;
  const source = Object.keys(spec).find(
    (key) =>
      ![
        "accessModes",
        "capacity",
        "claimRef",
        "mountOptions",
        "nodeAffinity",
        "persistentVolumeReclaimPolicy",
        "storageClassName",
        "volumeMode",
        "volumeAttributesClassName",
      ].includes(key),
  );
  return source ? `kubernetes.io/${source.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase())}` : "";
}

/**
 * Registers the collectors on `registry`; `attach` hands them the informers of the running
 * loops (called again after a leader election is won anew: the newest caches are read).
 */
/** One side of an SELinux conflict, as the selinux-warning-controller's cache reports it. */
export interface SELinuxConflictSample {
  property: string;
  pod: { namespace: string; name: string };
  value: string;
  otherPod: { namespace: string; name: string };
  otherValue: string;
}

export class ControllerVolumeMetrics {
  #caches: Caches | undefined;
  #seLinuxConflicts: (() => readonly SELinuxConflictSample[]) | undefined;

  constructor(registry: Registry) {
    const registers = [registry];
    const caches = () => this.#caches;
    new Gauge({
      name: "pv_collector_bound_pv_count",
      help: "Gauge measuring number of persistent volume currently bound",
      labelNames: ["storage_class"],
      registers,
      collect() {
        this.reset();
        for (const volume of caches()?.volumes.list() ?? [])
          if (volume.status?.phase === "Bound")
            this.inc({ storage_class: volume.spec?.storageClassName ?? "" });
      },
    });
    new Gauge({
      name: "pv_collector_unbound_pv_count",
      help: "Gauge measuring number of persistent volume currently unbound",
      labelNames: ["storage_class"],
      registers,
      collect() {
        this.reset();
        for (const volume of caches()?.volumes.list() ?? [])
          if (volume.status?.phase !== "Bound")
            this.inc({ storage_class: volume.spec?.storageClassName ?? "" });
      },
    });
    new Gauge({
      name: "pv_collector_total_pv_count",
      help: "Gauge measuring total number of persistent volumes",
      labelNames: ["plugin_name", "volume_mode"],
      registers,
      collect() {
        this.reset();
        for (const volume of caches()?.volumes.list() ?? [])
          this.inc({ plugin_name: pluginOf(volume), volume_mode: volume.spec?.volumeMode ?? "Filesystem" });
      },
    });
    const claimGauge = (name: string, help: string, bound: boolean): void => {
      new Gauge({
        name,
        help,
        labelNames: ["namespace", "storage_class", "volume_attributes_class"],
        registers,
        collect() {
          this.reset();
          for (const claim of caches()?.claims.list() ?? [])
            if ((claim.status?.phase === "Bound") === bound)
              this.inc({
                namespace: claim.metadata?.namespace ?? "",
                storage_class: claim.spec?.storageClassName ?? "",
                volume_attributes_class: claim.spec?.volumeAttributesClassName ?? "",
              });
        },
      });
    };
    claimGauge(
      "pv_collector_bound_pvc_count",
      "Gauge measuring number of persistent volume claim currently bound",
      true,
    );
    claimGauge(
      "pv_collector_unbound_pvc_count",
      "Gauge measuring number of persistent volume claim currently unbound",
      false,
    );
    const seLinuxConflicts = () => this.#seLinuxConflicts?.() ?? [];
    new Gauge({
      name: "selinux_warning_controller_selinux_volume_conflict",
      help: "Conflict between two Pods using the same volume",
      labelNames: [
        "property",
        "pod1_namespace",
        "pod1_name",
        "pod1_value",
        "pod2_namespace",
        "pod2_name",
        "pod2_value",
      ],
      registers,
      collect() {
        this.reset();
        for (const conflict of seLinuxConflicts())
          this.set(
            {
              property: conflict.property,
              pod1_namespace: conflict.pod.namespace,
              pod1_name: conflict.pod.name,
              pod1_value: conflict.value,
              pod2_namespace: conflict.otherPod.namespace,
              pod2_name: conflict.otherPod.name,
              pod2_value: conflict.otherValue,
            },
            1,
          );
      },
    });
    new Gauge({
      name: "attachdetach_controller_total_volumes",
      help: "Number of volumes in A/D Controller",
      labelNames: ["plugin_name", "state"],
      registers,
      collect() {
        this.reset();
        for (const attachment of caches()?.attachments.list() ?? []) {
          const plugin = `kubernetes.io/csi:${attachment.spec?.attacher ?? ""}`;
          this.inc({ plugin_name: plugin, state: "desired_state_of_world" });
          if (attachment.status?.attached === true)
            this.inc({ plugin_name: plugin, state: "actual_state_of_world" });
        }
      },
    });
  }

  /** Reads the selinux-warning-controller's conflicts from this source from now on. */
  attachSELinuxConflicts(source: () => readonly SELinuxConflictSample[]): void {
    this.#seLinuxConflicts = source;
  }

  /** Reads from these informers from now on (requests them, so they run with the loops). */
  attach(informers: InformerFactory): void {
    this.#caches = {
      volumes: informers.informer<PersistentVolume>(GVR.persistentVolumes).store,
      claims: informers.informer<PersistentVolumeClaim>(GVR.persistentVolumeClaims).store,
      attachments: informers.informer<VolumeAttachment>(GVR.volumeAttachments).store,
    };
  }
}
