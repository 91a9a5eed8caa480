// The resizer's options: what `csikit resizer` parses from upstream external-resizer v2.2.1's
// flags (src/cli/resizer.ts) and what `csikit up` passes in-process. Every field names its flag;
// defaults are upstream's (cmd/csi-resizer/main.go, pkg/features at v2.2.1).

import type { Clock, Logger } from "../../base/index.ts";
import type { SharedSidecarRuntime, CommonSidecarOptions } from "../../kube/index.ts";

export interface ResizerFeatures {
  /** RecoverVolumeExpansionFailure (GA in v2.2.0, default true): allocatedResources/Statuses, shrinking after a failure. */
  recoverVolumeExpansionFailure: boolean;
  /**
   * VolumeAttributesClass (GA in v2.0.0, default true): the modify controller (ControllerModifyVolume),
   * run only for a driver with MODIFY_VOLUME and an API server that serves VolumeAttributesClasses.
   */
  volumeAttributesClass: boolean;
  /** AnnotateFsResize (beta in v2.2.0, default true): volume.alpha.kubernetes.io/pre-resize-capacity on the PV. */
  annotateFsResize: boolean;
}

/** Feature gates external-resizer v2.2.1 knows, with their defaults (pkg/features). */
export const RESIZER_FEATURE_GATE_DEFAULTS: Readonly<Record<string, boolean>> = {
  RecoverVolumeExpansionFailure: true,
  VolumeAttributesClass: true,
  AnnotateFsResize: true,
};

export interface ResizerOptions extends CommonSidecarOptions {
  /** --timeout (10s): deadline of every CSI call. */
  timeoutMs: number;
  /** --workers (10): concurrent resize operations, and separately concurrent modify operations. */
  workers: number;
  /** --resync-period (10m): informer resync period; every cached claim is enqueued again. 0 = off. */
  resyncPeriodMs: number;
  /** --extra-modify-metadata (false): add pvc/pv names to ControllerModifyVolume's mutable_parameters. */
  extraModifyMetadata: boolean;
  /**
   * --handle-volume-inuse-error (true): after FAILED_PRECONDITION, wait until no pod uses the claim.
   * The pods of the claim's namespace are listed when such a claim is retried (in-use.ts); no
   * cluster-wide pod cache is kept.
   */
  handleVolumeInUseError: boolean;
  features: ResizerFeatures;
  logger?: Logger;
  clock?: Clock;
  /** Called once the HTTP endpoint listens (tests use port 0). */
  onHttpEndpoint?: (url: string) => void;
  /** Set by `csikit sidecars`: the CSI connection, informers and endpoint shared in the process. */
  shared?: SharedSidecarRuntime;
}
