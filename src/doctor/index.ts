// `csikit doctor`: finds what is left over or stuck on a cluster and, under a driver's socket and
// node roots, on the backend and the node — leaked volumes and snapshots, PVs whose volume is
// gone, finalizers held past their owner's life, attachments to deleted nodes, mounts and loop
// devices no pod owns — and repairs what is safe to repair. Collectors (collect-*.ts) gather;
// checks (check-*.ts, diagnose.ts) are pure; fix.ts repairs one finding; render.ts prints.
export {
  runDoctor,
  type DoctorOptions,
  type DoctorReport,
  type FixResult,
  type FixStatus,
} from "./doctor.ts";
export { diagnose } from "./diagnose.ts";
export { renderJson, renderText } from "./render.ts";
export { parseMountInfo } from "./collect-node-root.ts";
export type * from "./types.ts";
export { applyFix, FixRefused, type FixContext, type FixOutcome } from "./fix.ts";
