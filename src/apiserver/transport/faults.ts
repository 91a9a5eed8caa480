// Fault injection for tests (CONVENTIONS.md §20): a narrow, explicit hook that a test passes to
// startApiServer to say "fail the next N <verb>s of <resource> with <code>", or "hold the next
// <verb> of <resource> until I release it" (to place another write inside a client's request
// deterministically, e.g. between a controller's check and its create). The server consults it
// only when one was passed; nothing here is reachable from the CLI.

import type { Verb } from "./routing.ts";
import { CommitFaults } from "../storage/index.ts";
import { ApiError, conflict, OPTIMISTIC_LOCK_MESSAGE } from "./status.ts";

export interface FaultSpec {
  verb: Verb;
  /** Plural resource name, e.g. "persistentvolumes". */
  resource: string;
  /** Only requests to this subresource ("status"); default: the main resource only. */
  subresource?: string;
  /** HTTP status code of the injected failure (409, 500, 503, 429, ...). */
  code: number;
  /** How many matching requests fail. Default 1. */
  count?: number;
  message?: string;
}

const REASONS: Record<number, string> = {
  400: "BadRequest",
  403: "Forbidden",
  404: "NotFound",
  409: "Conflict",
  410: "Expired",
  422: "Invalid",
  429: "TooManyRequests",
  500: "InternalError",
  503: "ServiceUnavailable",
  504: "Timeout",
};

interface ArmedFault extends FaultSpec {
  remaining: number;
}

export interface HoldSpec {
  verb: Verb;
  /** Plural resource name, e.g. "volumesnapshotcontents". */
  resource: string;
  /** Only requests to this subresource; default: the main resource only. */
  subresource?: string;
}

/** A request held before it is served. */
export interface HeldRequest {
  /** Resolves once a matching request arrived and is being held. */
  reached: Promise<void>;
  /** Lets the held request go on (idempotent; also before it arrived: it is then not held). */
  release(): void;
}

interface ArmedHold extends HoldSpec {
  arrived(): void;
  released: Promise<void>;
}

/** A hold never outlives this, so a test that forgets to release cannot hang the server. */
const MAX_HOLD_MS = 120_000;

export class FaultInjector {
  /** Hooks of the storage's commit worker: hold or fail COMMITs (see storage/commit-faults.ts). */
  readonly commits = new CommitFaults();
  #armed: ArmedFault[] = [];
  #holds: ArmedHold[] = [];
  #fired = 0;

  /** Holds the next matching request, before it is served, until release(). */
  holdNext(spec: HoldSpec): HeldRequest {
    let arrived = (): void => undefined;
    let release = (): void => undefined;
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    const hold: ArmedHold = { ...spec, arrived, released };
    this.#holds.push(hold);
    return {
      reached,
      release: () => {
        const index = this.#holds.indexOf(hold);
        if (index >= 0) this.#holds.splice(index, 1);
        release();
      },
    };
  }

  /** Waits while a hold is armed for the request (resolved at once otherwise). */
  async gate(request: { verb: Verb; resource: string; subresource: string }): Promise<void> {
    const index = this.#holds.findIndex(
      (h) =>
        h.verb === request.verb &&
        h.resource === request.resource &&
        (h.subresource ?? "") === request.subresource,
    );
    if (index < 0) return;
    const hold = this.#holds[index]!;
    this.#holds.splice(index, 1);
    hold.arrived();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      hold.released,
      new Promise<void>((resolve) => (timer = setTimeout(resolve, MAX_HOLD_MS).unref())),
    ]);
    clearTimeout(timer);
  }

  /** Arms a fault; later specs for the same request wait until earlier ones are used up. */
  failNext(spec: FaultSpec): void {
    this.#armed.push({ ...spec, remaining: spec.count ?? 1 });
  }

  /** How many requests were failed so far. */
  get fired(): number {
    return this.#fired;
  }

  clear(): void {
    this.#armed = [];
  }

  /** The error to answer instead of serving the request, if a fault is armed for it. */
  take(request: {
    verb: Verb;
    group: string;
    resource: string;
    subresource: string;
    name: string;
  }): ApiError | undefined {
    const index = this.#armed.findIndex(
      (f) =>
        f.verb === request.verb &&
        f.resource === request.resource &&
        (f.subresource ?? "") === request.subresource,
    );
    if (index < 0) return undefined;
    const fault = this.#armed[index]!;
    fault.remaining--;
    if (fault.remaining <= 0) this.#armed.splice(index, 1);
    this.#fired++;
    if (fault.code === 409 && fault.message === undefined) {
      return conflict(request.group, request.resource, request.name, OPTIMISTIC_LOCK_MESSAGE);
    }
    const message =
      fault.message ?? `injected fault: ${fault.verb} ${fault.resource} failed with ${fault.code}`;
    return new ApiError(fault.code, REASONS[fault.code] ?? "InternalError", message, {
      kind: request.resource,
      ...(request.name ? { name: request.name } : {}),
      ...(request.group ? { group: request.group } : {}),
    });
  }
}
