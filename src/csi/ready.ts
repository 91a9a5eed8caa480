// Waiting for a CSI driver to become ready, with the semantics of the kubernetes-csi sidecars:
// csi-lib-utils' connection.Connect (block until the Unix socket accepts a connection, warning
// every 10s) followed by rpc.ProbeForever (call Probe at a fixed 1s interval).
//
// Invariants, each as upstream:
// - Connection not up yet (channel not READY: socket absent, refused, or dropped between probes):
//   wait for it; this is Connect's part and never fails by itself.
// - Probe answered ready:true, or without `ready` ("the caller SHALL assume that the plugin is in
//   a ready state"): resolve.
// - Probe answered ready:false, or failed with DEADLINE_EXCEEDED: probe again on the next tick.
// - Probe failed with any other gRPC status (INTERNAL, FAILED_PRECONDITION, UNIMPLEMENTED, an
//   UNAVAILABLE the driver itself sent on a live connection, ...): reject at once with that
//   code; the sidecars exit then. An error without a gRPC code is rethrown as is.
// - Ticks are a fixed grid, as Go's time.Ticker: a probe that overran one or more ticks is
//   followed at once by the next one (the missed ticks collapse into one), never by a burst.
// Deliberate differences: the first probe is sent as soon as the connection is up rather than
// one interval later (the ticker's first tick only delays start-up); an aborted signal rejects
// with its reason (ProbeForever returns nil on ctx.Done, which would read as "ready" here); an
// optional overall timeout rejects with DEADLINE_EXCEEDED naming the last reason.

import { connectivityState } from "@grpc/grpc-js";
import type { Clock, Logger } from "../base/index.ts";
import { childController, errorMessage } from "../base/index.ts";
import { CsiError, GrpcStatus, grpcCode, grpcDetails, statusName } from "./errors.ts";
import type { ProbeResponse } from "./types.ts";

/** Time between two Probe calls: csi-lib-utils' probeInterval. */
export const PROBE_INTERVAL_MS = 1000;

/** How often a connection that is still not up is reported: Connect's connectionLoggingInterval. */
export const CONNECT_WARNING_INTERVAL_MS = 10_000;

/** Longest wait for a connectivity state change before the state is looked at again. */
export const STATE_RECHECK_MS = 1000;

/** The part of a grpc-js channel waitForReady needs: its connectivity state. */
export interface ConnectivityChannel {
  getConnectivityState(tryToConnect: boolean): connectivityState;
  watchConnectivityState(current: connectivityState, deadline: Date | number, callback: () => void): void;
}

export interface ProbeUntilReadyOptions {
  /** Socket path, for logs and errors. */
  path: string;
  /** The client's channel: its connectivity state says whether the socket is connected. */
  channel: ConnectivityChannel;
  /** One Probe call; it must stop when `signal` aborts. */
  probe: (signal: AbortSignal) => Promise<ProbeResponse>;
  logger: Logger;
  clock: Clock;
  signal?: AbortSignal | undefined;
  /** Overall limit in ms (DEADLINE_EXCEEDED when it passes). Default: none, as the sidecars wait. */
  timeoutMs?: number | undefined;
}

/** Resolves once the driver is ready; see the header for what retries and what rejects. */
export async function probeUntilReady(options: ProbeUntilReadyOptions): Promise<void> {
  const { controller, dispose } = childController(options.signal);
  const waiting = { reason: "the connection is not up yet", timedOut: false };
  const cancelTimeout =
    options.timeoutMs === undefined
      ? undefined
      : options.clock.setTimer(options.timeoutMs, () => {
          waiting.timedOut = true;
          controller.abort(new Error("waitForReady timed out"));
        });
  try {
    await probeLoop(options, controller.signal, waiting);
  } catch (error) {
    if (!waiting.timedOut || options.signal?.aborted) throw error;
    throw new CsiError(
      GrpcStatus.DEADLINE_EXCEEDED,
      `CSI driver at ${options.path} was not ready within ${options.timeoutMs}ms: ${waiting.reason}`,
    );
  } finally {
    cancelTimeout?.();
    dispose();
  }
}

async function probeLoop(
  options: ProbeUntilReadyOptions,
  signal: AbortSignal,
  waiting: { reason: string },
): Promise<void> {
  const { clock, logger, path } = options;
  let firstProbe: number | undefined;
  for (let attempt = 1; ; attempt++) {
    await whenConnected(options, signal);
    const started = clock.now();
    firstProbe ??= started;
    const outcome = await probeOnce(options, signal);
    if (outcome === READY) {
      logger.info(4, "CSI driver is ready", { endpoint: path, attempts: attempt });
      return;
    }
    waiting.reason = outcome;
    logger.info(4, "CSI driver is not ready yet, probing again", {
      endpoint: path,
      attempt,
      reason: outcome,
    });
    await clock.sleep(untilNextTick(firstProbe, started, clock.now()), signal);
  }
}

/** Delay until the first tick of the grid anchored at `anchor` that falls after `probeStarted`. */
export function untilNextTick(anchor: number, probeStarted: number, now: number): number {
  const ticks = Math.floor((probeStarted - anchor) / PROBE_INTERVAL_MS) + 1;
  return Math.max(0, anchor + ticks * PROBE_INTERVAL_MS - now);
}

const READY = Symbol("ready");

/** READY, or the reason to probe again; throws when waiting must stop. */
async function probeOnce(
  options: ProbeUntilReadyOptions,
  signal: AbortSignal,
): Promise<typeof READY | string> {
  let response: ProbeResponse;
  try {
    response = await options.probe(signal);
  } catch (error) {
    signal.throwIfAborted();
    const code = grpcCode(error);
    if (code === GrpcStatus.DEADLINE_EXCEEDED) return `Probe timed out: ${errorMessage(error)}`;
    // A transport failure leaves the channel not READY; whenConnected then waits for the socket.
    if (code === GrpcStatus.UNAVAILABLE && !isReady(options.channel)) {
      return `the connection was lost: ${errorMessage(error)}`;
    }
    if (code === undefined) throw error;
    throw new CsiError(
      code,
      `CSI driver at ${options.path} failed Probe with ${statusName(code)}: ${grpcDetails(error)}`,
      {
        cause: error,
      },
    );
  }
  if (response.ready === null || response.ready.value) return READY;
  return "the driver answered ready: false";
}

function isReady(channel: ConnectivityChannel): boolean {
  return channel.getConnectivityState(false) === connectivityState.READY;
}

/** The part of ProbeUntilReadyOptions that waiting for the connection alone needs. */
export type WhenConnectedOptions = Pick<ProbeUntilReadyOptions, "path" | "channel" | "logger" | "clock">;

/**
 * Waits until the channel is READY, asking it to connect; warns every 10s meanwhile. Never
 * fails by itself (csi-lib-utils' Connect without a timeout): only `signal` or a closed client
 * ends the wait early.
 */
export async function whenConnected(options: WhenConnectedOptions, signal: AbortSignal): Promise<void> {
  const { channel, clock, logger, path } = options;
  let state = channel.getConnectivityState(true);
  if (state === connectivityState.READY) return;
  logger.info(4, "Connecting to CSI driver", { endpoint: path });
  let cancelWarning = (): void => {};
  const warnLater = (): void => {
    cancelWarning = clock.setTimer(CONNECT_WARNING_INTERVAL_MS, () => {
      logger.warn("Still connecting to CSI driver", { endpoint: path, state: connectivityState[state] });
      warnLater();
    });
  };
  warnLater();
  try {
    while (state !== connectivityState.READY) {
      signal.throwIfAborted();
      if (state === connectivityState.SHUTDOWN) {
        throw new CsiError(
          GrpcStatus.CANCELLED,
          `the client of ${path} was closed while waiting for the driver`,
        );
      }
      await stateChange(channel, state, signal);
      state = channel.getConnectivityState(true);
    }
  } finally {
    cancelWarning();
  }
}

/** Resolves on the channel's next state change or when `signal` aborts (the caller checks it). */
function stateChange(
  channel: ConnectivityChannel,
  from: connectivityState,
  signal: AbortSignal,
): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = (): void => {
      signal.removeEventListener("abort", done);
      resolve();
    };
    signal.addEventListener("abort", done, { once: true });
    // Bounded: a state change the watcher missed (or a channel that sits in one state) cannot
    // stall the wait; the caller looks at the state again after at most STATE_RECHECK_MS.
    channel.watchConnectivityState(from, Date.now() + STATE_RECHECK_MS, done);
  });
}
