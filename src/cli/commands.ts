// The list of subcommands, in the order `csikit --help` shows them.
import type { Command } from "./command.ts";

export const commands: readonly Command[] = [];
