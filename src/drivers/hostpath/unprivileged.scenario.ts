// Started by node.test.ts as an unprivileged user: a NodeStageVolume must answer
// FAILED_PRECONDITION naming why it may not mount. Prints the outcome; exits non-zero otherwise.

import { join } from "node:path";
import { CsiClient, grpcCode, statusName } from "../../csi/index.ts";
import { serveHostpathDriver } from "./server.ts";

const dir = process.env.HOSTPATH_TEST_DIR ?? "";
const endpoint = `unix://${join(dir, "csi.sock")}`;
const server = await serveHostpathDriver({
  nodeId: "n",
  stateDir: join(dir, "state"),
  endpoint,
  shutdownGraceMs: 100,
  allowedPathRoots: [dir],
});
const client = CsiClient.connect(endpoint, { timeoutMs: 10_000 });
try {
  const capability = { mount: {}, accessMode: { mode: "SINGLE_NODE_WRITER" as const } };
  const volume = await client.controller.createVolume({ name: "v", volumeCapabilities: [capability] });
  await client.node.nodeStageVolume({
    volumeId: volume.volume?.volumeId ?? "",
    stagingTargetPath: join(dir, "staging"),
    volumeCapability: capability,
  });
  process.stdout.write("unexpected: NodeStageVolume succeeded\n");
  process.exitCode = 1;
} catch (error) {
  const code = grpcCode(error) ?? -1;
  process.stdout.write(`${statusName(code)}: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = statusName(code) === "FAILED_PRECONDITION" ? 0 : 1;
} finally {
  client.close();
  await server.close();
}
