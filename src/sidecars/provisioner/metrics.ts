// The provisioning library's metrics, named as sig-storage-lib-external-provisioner exports
// them (FACTS.md "Metrics"): controller_persistentvolumeclaim_provision_{total,failed_total,
// duration_seconds}{class,source} and controller_persistentvolume_delete_{total,failed_total,
// duration_seconds}{class}. `source` is the data source kind ("" for an empty volume).

import type { Registry } from "prom-client";
import { Counter, Histogram } from "../../kube/index.ts";

export class ProvisionerMetrics {
  readonly provisionTotal: Counter;
  readonly provisionFailed: Counter;
  readonly provisionDuration: Histogram;
  readonly deleteTotal: Counter;
  readonly deleteFailed: Counter;
  readonly deleteDuration: Histogram;

  constructor(registry: Registry) {
    const registers = [registry];
    this.provisionTotal = new Counter({
      name: "controller_persistentvolumeclaim_provision_total",
      help: "Total number of persistent volumes provisioned succesfully. Broken down by storage class name and source of the claim.",
      labelNames: ["class", "source"],
      registers,
    });
    this.provisionFailed = new Counter({
      name: "controller_persistentvolumeclaim_provision_failed_total",
      help: "Total number of persistent volume provision failed attempts. Broken down by storage class name and source of the claim.",
      labelNames: ["class", "source"],
      registers,
    });
    this.provisionDuration = new Histogram({
      name: "controller_persistentvolumeclaim_provision_duration_seconds",
      help: "Latency in seconds to provision persistent volumes. Failed provisioning attempts are ignored. Broken down by storage class name and source of the claim.",
      labelNames: ["class", "source"],
      registers,
    });
    this.deleteTotal = new Counter({
      name: "controller_persistentvolume_delete_total",
      help: "Total number of persistent volumes deleted succesfully. Broken down by storage class name.",
      labelNames: ["class"],
      registers,
    });
    this.deleteFailed = new Counter({
      name: "controller_persistentvolume_delete_failed_total",
      help: "Total number of persistent volume delete failed attempts. Broken down by storage class name.",
      labelNames: ["class"],
      registers,
    });
    this.deleteDuration = new Histogram({
      name: "controller_persistentvolume_delete_duration_seconds",
      help: "Latency in seconds to delete persistent volumes. Failed deletion attempts are ignored. Broken down by storage class name.",
      labelNames: ["class"],
      registers,
    });
  }
}
