// The list of subcommands, in the order `csikit --help` shows them.
import { apiserverCommand } from "./apiserver.ts";
import type { Command } from "./command.ts";
import { hostpathCommand } from "./hostpath.ts";
import { provisionerCommand } from "./provisioner.ts";
import { sanityCommand } from "./sanity.ts";
import { startCommand } from "./start.ts";

export const commands: readonly Command[] = [
  apiserverCommand,
  hostpathCommand,
  provisionerCommand,
  sanityCommand,
  startCommand,
];
