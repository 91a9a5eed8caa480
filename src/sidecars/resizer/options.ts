// The resizer's options: what `csikit resizer` parses from upstream external-resizer v1.13's
// flags (src/cli/resizer.ts) and what `csikit up` passes in-process. Every field names its flag;
// defaults are upstream's (cmd/csi-resizer/main.go).

import type { Clock, Logger } from "../../base/index.ts";
import type { CommonSidecarOptions } from "../../kube/index.ts";

export interface ResizerFeatures {
  /** RecoverVolumeExpansionFailure (beta in 1.32, default true): allocatedResources/Statuses, shrinking after a failure. */
  recoverVolumeExpansionFailure: boolean;
  /** VolumeAttributesClass (beta in 1.32, default false): the modify controller (ControllerModifyVolume). */
  volumeAttributesClass: boolean;
  /** AnnotateFsResize (alpha, default false): volume.alpha.kubernetes.io/pre-resize-capacity on the PV. */
  annotateFsResize: boolean;
}

/** Feature gates external-resizer v1.13.2 knows, with their defaults (pkg/features at Kubernetes 1.32). */
export const RESIZER_FEATURE_GATE_DEFAULTS: Readonly<Record<string, boolean>> = {
  RecoverVolumeExpansionFailure: true,
  VolumeAttributesClass: false,
  AnnotateFsResize: false,
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
  /** --handle-volume-inuse-error (true): after FAILED_PRECONDITION, wait until no pod uses the claim. */
  handleVolumeInUseError: boolean;
  features: ResizerFeatures;
  logger?: Logger;
  clock?: Clock;
  /** Called once the HTTP endpoint listens (tests use port 0). */
  onHttpEndpoint?: (url: string) => void;
}
