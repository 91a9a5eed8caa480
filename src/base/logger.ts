// Structured logging in the klog style: `info` lines gated by verbosity (`-v=N`, as the
// sidecars use: 0 always, 4 debug, 5 per-request traces), `error`/`warn` always, key/value
// fields, text or JSON output. Contextual loggers (`with`) carry fields such as controller and
// key. Nothing here redacts: callers pass already-sanitized values (CSI requests go through
// csi/sanitize.ts before they reach a logger).

export type LogFormat = "text" | "json";
export type LogLevel = "error" | "warn" | "info";
export type LogFields = Record<string, unknown>;

export interface LogSink {
  write(line: string): void;
}

export interface LoggerOptions {
  /** Highest verbosity printed by `info(v, ...)`. Default 0. */
  verbosity?: number;
  /** Output format. Default "text". */
  format?: LogFormat;
  /** Where lines go. Default process.stderr. */
  sink?: LogSink;
  /** Clock for timestamps (ms since epoch). Default Date.now. */
  now?: () => number;
}

export class Logger {
  readonly verbosity: number;
  readonly #format: LogFormat;
  readonly #sink: LogSink;
  readonly #now: () => number;
  readonly #fields: LogFields;

  constructor(options: LoggerOptions = {}, fields: LogFields = {}) {
    this.verbosity = options.verbosity ?? 0;
    this.#format = options.format ?? "text";
    this.#sink = options.sink ?? { write: (line) => process.stderr.write(line) };
    this.#now = options.now ?? Date.now;
    this.#fields = fields;
  }

  /** A logger that adds `fields` to every line. */
  with(fields: LogFields): Logger {
    return new Logger(
      { verbosity: this.verbosity, format: this.#format, sink: this.#sink, now: this.#now },
      { ...this.#fields, ...fields },
    );
  }

  /** True when `info(v, ...)` would print: guard expensive formatting with it. */
  enabled(v: number): boolean {
    return v <= this.verbosity;
  }

  info(v: number, message: string, fields?: LogFields): void {
    if (v <= this.verbosity) this.#emit("info", message, fields);
  }

  warn(message: string, fields?: LogFields): void {
    this.#emit("warn", message, fields);
  }

  error(message: string, fields?: LogFields): void {
    this.#emit("error", message, fields);
  }

  #emit(level: LogLevel, message: string, fields?: LogFields): void {
    const all = { ...this.#fields, ...fields };
    const time = new Date(this.#now()).toISOString();
    if (this.#format === "json") {
      this.#sink.write(JSON.stringify({ ts: time, level, msg: message, ...serializeFields(all) }) + "\n");
      return;
    }
    const parts = [time, level.toUpperCase().padEnd(5), JSON.stringify(message)];
    for (const [key, value] of Object.entries(serializeFields(all))) {
      parts.push(`${key}=${typeof value === "string" ? JSON.stringify(value) : JSON.stringify(value)}`);
    }
    this.#sink.write(parts.join(" ") + "\n");
  }
}

function serializeFields(fields: LogFields): LogFields {
  const out: LogFields = {};
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    if (value instanceof Error) out[key] = value.message;
    else if (typeof value === "bigint") out[key] = value.toString();
    else out[key] = value;
  }
  return out;
}

/** A logger that drops everything: for library defaults and quiet tests. */
export const silentLogger = new Logger({ verbosity: -1, sink: { write: () => {} } });

/** A logger that keeps its lines in memory, for tests that assert on log output. */
export function memoryLogger(options: Omit<LoggerOptions, "sink"> = {}): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const logger = new Logger({ ...options, sink: { write: (line) => lines.push(line) } });
  return { logger, lines };
}
