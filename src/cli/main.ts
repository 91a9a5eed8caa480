// The csikit command: `csikit <subcommand> [flags]`. One file per subcommand; this file only
// dispatches.

// First: on an older Node it says which one csikit needs before anything else loads.
import "./node-version.ts";
import { stopWhenSupervisorGone } from "../base/index.ts";
import { csikitVersion, runCommand } from "./command.ts";
import { commands, type CommandEntry } from "./commands.ts";

function usage(list: readonly CommandEntry[]): string {
  const width = Math.max(...list.map((c) => c.name.length));
  const lines = ["Usage: csikit <command> [flags]", "", "Commands:"];
  for (const command of list) lines.push(`  ${command.name.padEnd(width)}  ${command.summary}`);
  lines.push("", "Run `csikit <command> --help` for the flags of a command.");
  return lines.join("\n") + "\n";
}

export async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    process.stdout.write(usage(commands));
    return name === undefined ? 2 : 0;
  }
  if (name === "--version" || name === "-version" || name === "version") {
    process.stdout.write(`csikit ${csikitVersion()}\n`);
    return 0;
  }
  // A two-word command ("snapshot-metadata list") wins over its first word.
  const twoWords = rest[0] === undefined ? undefined : commands.find((c) => c.name === `${name} ${rest[0]}`);
  const entry = twoWords ?? commands.find((c) => c.name === name);
  if (!entry) {
    process.stderr.write(`csikit: unknown command ${JSON.stringify(name)}\n\n${usage(commands)}`);
    return 2;
  }
  // Under `csikit up`: stop once up is gone, however it ended.
  stopWhenSupervisorGone();
  // Only now is the command (and what it depends on) loaded.
  return runCommand(await entry.load(), twoWords ? rest.slice(1) : rest);
}

process.exitCode = await main(process.argv.slice(2));
