// AbortSignal helpers: combining a parent signal with a timeout, and waiting for abort.

/** A promise that resolves (never rejects) once `signal` aborts. */
export function whenAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}

/** A child controller aborted when the parent aborts; call `dispose` to detach it. */
export function childController(parent?: AbortSignal): { controller: AbortController; dispose: () => void } {
  const controller = new AbortController();
  if (!parent) return { controller, dispose: () => {} };
  if (parent.aborted) {
    controller.abort(parent.reason);
    return { controller, dispose: () => {} };
  }
  const onAbort = (): void => controller.abort(parent.reason);
  parent.addEventListener("abort", onAbort, { once: true });
  return { controller, dispose: () => parent.removeEventListener("abort", onAbort) };
}

/** A signal that aborts on SIGINT or SIGTERM: the way every long-running subcommand stops. */
export function processSignal(): AbortSignal {
  const controller = new AbortController();
  const stop = (sig: NodeJS.Signals): void => {
    if (!controller.signal.aborted) controller.abort(new Error(`received ${sig}`));
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  return controller.signal;
}
