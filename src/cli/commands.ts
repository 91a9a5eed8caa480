// The list of subcommands, in the order `csikit --help` shows them.
import { apiserverCommand } from "./apiserver.ts";
import type { Command } from "./command.ts";
import { controllersCommand } from "./controllers.ts";
import { hostpathCommand } from "./hostpath.ts";
import { nodeCommand } from "./node.ts";
import { sanityCommand } from "./sanity.ts";
import { startCommand } from "./start.ts";

export const commands: readonly Command[] = [
  apiserverCommand,
  controllersCommand,
  hostpathCommand,
  nodeCommand,
  sanityCommand,
  startCommand,
];
