// The first module src/cli/main.ts loads: a Node that can load this file (type stripping is on
// by default from 22.18) but is older than the one csikit is built and tested on gets one line
// saying which Node it needs and how to run the project's own, instead of a failure deep in a
// module that needs a newer API. (A Node older than 22.18 cannot load a .ts file at all; the
// launcher, bin/csikit.js, says the same for those.)

export const NEEDED_NODE_MAJOR = 24;

/** The one-line problem with running under `version` (e.g. "v22.18.0"), or undefined. */
export function nodeVersionProblem(version: string, execPath: string): string | undefined {
  const major = Number(/^v?(\d+)/.exec(version)?.[1] ?? "0");
  if (major >= NEEDED_NODE_MAJOR) return undefined;
  return (
    `csikit needs Node.js ${NEEDED_NODE_MAJOR} or later, this is ${version} (${execPath}); ` +
    `run it with \`npx csikit …\` or \`npm run csikit -- …\`, which use the project's Node ${NEEDED_NODE_MAJOR} (installed by \`npm ci\`)`
  );
}

const problem = nodeVersionProblem(process.version, process.execPath);
if (problem !== undefined) {
  process.stderr.write(problem + "\n");
  process.exit(1);
}
