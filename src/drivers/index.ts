// CSI drivers shipped with csikit. Each driver is a folder reached through its own index.ts.
export * from "./hostpath/index.ts";
