// The REST verbs over the revision-log store, one module per concern; this file gathers them.
export * from "./rest-types.ts";
export * from "./rest-read.ts";
export * from "./rest-write.ts";
export * from "./rest-delete.ts";
