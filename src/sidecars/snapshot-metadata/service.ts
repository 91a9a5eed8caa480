// The Kubernetes SnapshotMetadata service's two streamed calls, as external-snapshot-metadata
// serves them: validate the request (INVALID_ARGUMENT naming the empty field, upstream's
// messages), check the caller (auth.ts), refuse while the driver is not validated
// (UNAVAILABLE), turn VolumeSnapshot names into CSI snapshot ids (snapshots.ts; the delta's base
// comes as an id already, since v0.2), call the driver's CSI SnapshotMetadata service with the
// snapshotter secret of the (target) snapshot's class, and stream the driver's answers back
// unchanged but for the message type. A driver's gRPC status passes through; anything else is
// INTERNAL. A stream longer than --max-streaming-duration-min is cut (DEADLINE_EXCEEDED).
// Every call is observed in the metrics with the status it ended with.

import type { Logger } from "../../base/index.ts";
import {
  CsiError,
  GrpcStatus,
  grpcCode,
  grpcDetails,
  type CallContext,
  type CsiClient,
  type GetMetadataAllocatedResponse as CsiAllocatedResponse,
  type SnapshotMetadataApi,
  type SnapshotMetadataApiService,
} from "../../csi/index.ts";
import type { KubeClient } from "../../kube/index.ts";
import { checkCaller } from "./auth.ts";
import {
  METADATA_ALLOCATED_OPERATION,
  METADATA_DELTA_OPERATION,
  type SnapshotMetadataMetrics,
} from "./metrics.ts";
import { resolveSnapshot, snapshotterSecrets } from "./snapshots.ts";

/** Upstream's validation messages. */
export const VALIDATION_MESSAGES = {
  securityToken: "securityToken is missing",
  namespace: "namespace parameter cannot be empty",
  snapshotName: "snapshotName cannot be empty",
  baseSnapshotId: "baseSnapshotId cannot be empty",
  targetSnapshotName: "targetSnapshotName cannot be empty",
  driverNotReady: "the CSI driver is not yet ready",
} as const;

export interface ServiceDeps {
  client: KubeClient;
  csi: CsiClient;
  driverName: string;
  /** --audience ("" = the SnapshotMetadataService object's). */
  audience: string;
  maxStreamingDurationMs: number;
  /** False until the driver was probed and found to serve SNAPSHOT_METADATA_SERVICE. */
  driverReady: () => boolean;
  metrics: SnapshotMetadataMetrics;
  logger: Logger;
}

type ResponseOut = SnapshotMetadataApi.GetMetadataAllocatedResponseInput;

function invalid(message: string): CsiError {
  return new CsiError(GrpcStatus.INVALID_ARGUMENT, message);
}

/** The driver's message as the Kubernetes API's (same fields, another package). */
function converted(message: CsiAllocatedResponse): ResponseOut {
  return {
    blockMetadataType: message.blockMetadataType,
    volumeCapacityBytes: message.volumeCapacityBytes,
    blockMetadata: message.blockMetadata.map((b) => ({ byteOffset: b.byteOffset, sizeBytes: b.sizeBytes })),
  };
}

/** A driver failure as the client sees it: its status passed on, or INTERNAL. */
function driverFailure(error: unknown): CsiError {
  if (error instanceof CsiError) return error;
  const code = grpcCode(error);
  // UNKNOWN (2) is what a non-status failure becomes: not the driver's word.
  if (code !== undefined && code !== 2) return new CsiError(code, grpcDetails(error));
  return new CsiError(GrpcStatus.INTERNAL, `failed to get response from CSI driver: ${grpcDetails(error)}`);
}

/**
 * Runs one served call: the stream `body` yields, bounded by the streaming limit, observed in
 * the metrics with its outcome.
 */
async function* served(
  deps: ServiceDeps,
  operation: string,
  snapshots: { target: string; base?: string },
  context: CallContext,
  body: (signal: AbortSignal) => AsyncIterable<ResponseOut>,
): AsyncIterable<ResponseOut> {
  const started = performance.now();
  const limit = new AbortController();
  const timer = setTimeout(
    () =>
      limit.abort(new CsiError(GrpcStatus.DEADLINE_EXCEEDED, "the maximum streaming duration was reached")),
    deps.maxStreamingDurationMs,
  );
  const signal = AbortSignal.any([context.signal, limit.signal]);
  let code: number = GrpcStatus.OK;
  try {
    for await (const message of body(signal)) {
      signal.throwIfAborted();
      yield message;
    }
  } catch (error) {
    const failure = signal.aborted && signal.reason instanceof CsiError ? signal.reason : error;
    code = failure instanceof CsiError ? failure.code : (grpcCode(failure) ?? GrpcStatus.INTERNAL);
    throw failure;
  } finally {
    clearTimeout(timer);
    deps.metrics.observe(operation, code, (performance.now() - started) / 1000, snapshots);
  }
}

/** Caller check and driver readiness, common to both calls. */
async function admit(
  deps: ServiceDeps,
  request: { securityToken: string; namespace: string },
  signal: AbortSignal,
): Promise<void> {
  await checkCaller(
    { client: deps.client, driverName: deps.driverName, audience: deps.audience, logger: deps.logger },
    { token: request.securityToken, namespace: request.namespace },
    signal,
  );
  if (!deps.driverReady()) throw new CsiError(GrpcStatus.UNAVAILABLE, VALIDATION_MESSAGES.driverNotReady);
}

async function* driverStream(stream: AsyncIterable<CsiAllocatedResponse>): AsyncIterable<ResponseOut> {
  try {
    for await (const message of stream) yield converted(message);
  } catch (error) {
    throw driverFailure(error);
  }
}

export function snapshotMetadataService(deps: ServiceDeps): SnapshotMetadataApiService {
  return {
    getMetadataAllocated(request, context) {
      const snapshots = { target: request.snapshotName };
      return served(deps, METADATA_ALLOCATED_OPERATION, snapshots, context, async function* (signal) {
        if (request.securityToken === "") throw invalid(VALIDATION_MESSAGES.securityToken);
        if (request.namespace === "") throw invalid(VALIDATION_MESSAGES.namespace);
        if (request.snapshotName === "") throw invalid(VALIDATION_MESSAGES.snapshotName);
        await admit(deps, request, signal);
        const resolved = await resolveSnapshot(
          deps.client,
          { namespace: request.namespace, name: request.snapshotName, driverName: deps.driverName },
          signal,
        );
        const secrets = await snapshotterSecrets(deps.client, resolved, signal);
        deps.logger.info(4, "calling CSI driver", {
          op: "GetMetadataAllocated",
          namespace: request.namespace,
          snapshotName: request.snapshotName,
          snapshotId: resolved.snapshotHandle,
        });
        yield* driverStream(
          deps.csi.snapshotMetadata.getMetadataAllocated(
            {
              snapshotId: resolved.snapshotHandle,
              startingOffset: request.startingOffset,
              maxResults: request.maxResults,
              ...(secrets ? { secrets } : {}),
            },
            { signal },
          ),
        );
      });
    },

    getMetadataDelta(request, context) {
      const snapshots = { target: request.targetSnapshotName, base: request.baseSnapshotId };
      return served(deps, METADATA_DELTA_OPERATION, snapshots, context, async function* (signal) {
        if (request.securityToken === "") throw invalid(VALIDATION_MESSAGES.securityToken);
        if (request.namespace === "") throw invalid(VALIDATION_MESSAGES.namespace);
        if (request.baseSnapshotId === "") throw invalid(VALIDATION_MESSAGES.baseSnapshotId);
        if (request.targetSnapshotName === "") throw invalid(VALIDATION_MESSAGES.targetSnapshotName);
        await admit(deps, request, signal);
        const target = await resolveSnapshot(
          deps.client,
          { namespace: request.namespace, name: request.targetSnapshotName, driverName: deps.driverName },
          signal,
        );
        // The target was taken after the base: its class's secret, as upstream.
        const secrets = await snapshotterSecrets(deps.client, target, signal);
        deps.logger.info(4, "calling CSI driver", {
          op: "GetMetadataDelta",
          namespace: request.namespace,
          baseSnapshotId: request.baseSnapshotId,
          targetSnapshotName: request.targetSnapshotName,
          targetSnapshotId: target.snapshotHandle,
        });
        yield* driverStream(
          deps.csi.snapshotMetadata.getMetadataDelta(
            {
              baseSnapshotId: request.baseSnapshotId,
              targetSnapshotId: target.snapshotHandle,
              startingOffset: request.startingOffset,
              maxResults: request.maxResults,
              ...(secrets ? { secrets } : {}),
            },
            { signal },
          ),
        );
      });
    },
  };
}
