// Where a benchmark ran, printed beside its tables: the filesystem of a state directory (tmpfs
// and a real disk differ 20× for durable writes) and the machine (cores, Node, load).

import { statfsSync } from "node:fs";
import { cpus, loadavg } from "node:os";

/** statfs f_type magic numbers of the filesystems a bench is likely to meet. */
const FILESYSTEMS = new Map<number, string>([
  [0xef53, "ext2/3/4"],
  [0x01021994, "tmpfs"],
  [0x58465342, "xfs"],
  [0x9123683e, "btrfs"],
  [0x794c7630, "overlayfs"],
  [0x2fc12fc1, "zfs"],
]);

/** The filesystem `path` is on: its name for the common ones, else statfs's f_type in hex. */
export function filesystemOf(path: string): string {
  const type = statfsSync(path).type;
  return FILESYSTEMS.get(type) ?? `0x${type.toString(16)}`;
}

/** One line for a table's caption, e.g. `2 × AMD EPYC 7B13; node v24.21.0; load average 0.40`. */
export function machine(): string {
  const cores = cpus();
  return `${cores.length} × ${cores[0]?.model.trim() ?? "?"}; node ${process.version}; load average ${loadavg()[0]!.toFixed(2)}`;
}
