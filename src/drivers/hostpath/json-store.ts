// A JSON document kept in memory and persisted crash-safely (json-file.ts) on every change.
// Invariants: readers get the committed document; `update` runs its mutator synchronously on a
// private copy, so check-and-reserve logic inside one mutator is atomic with respect to every
// other update; the copy becomes current only after it is durably on disk, and updates are
// applied one at a time in call order.

import { CsikitError } from "../../base/index.ts";
import { readJsonFile, writeJsonFile } from "./json-file.ts";

export interface JsonStoreOptions<T> {
  file: string;
  /** The document when the file does not exist yet. */
  empty: () => T;
  /** Checks a parsed file; throws with a message naming the file when it is not a T. */
  validate: (value: unknown, file: string) => T;
}

export class JsonStore<T> {
  readonly file: string;
  readonly #options: JsonStoreOptions<T>;
  #current: T | undefined;
  #tail: Promise<unknown> = Promise.resolve();

  constructor(options: JsonStoreOptions<T>) {
    this.file = options.file;
    this.#options = options;
  }

  /** Loads the file (or the empty document); call once before use. */
  async load(): Promise<T> {
    const raw = await readJsonFile(this.file);
    this.#current = raw === undefined ? this.#options.empty() : this.#options.validate(raw, this.file);
    return this.#current;
  }

  /** The committed document. Treat it as read-only. */
  get current(): T {
    if (this.#current === undefined)
      throw new CsikitError("CSIKIT_ERR_INTERNAL", `state ${this.file} used before load()`);
    return this.#current;
  }

  /**
   * Applies `mutate` to a copy and persists it. Whatever `mutate` returns is returned; if it
   * throws, nothing is written and the error propagates.
   */
  update<R>(mutate: (draft: T) => R): Promise<R> {
    const next = this.#tail.then(async () => {
      const draft = structuredClone(this.current);
      const result = mutate(draft);
      await writeJsonFile(this.file, draft);
      this.#current = draft;
      return result;
    });
    this.#tail = next.catch(() => undefined);
    return next;
  }
}
