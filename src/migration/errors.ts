// The library's one error type: every failed translation names the object, the plugin and what
// is wrong with it, so `csikit migrate` and the components can print it as is.

export class TranslationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TranslationError";
  }
}
