// A CSI driver with one seeded bug, to prove that `csikit e2e` catches what it should: csikit's
// hostpath runs in this process on a private socket, and a CSI server on the endpoint the cluster
// dials forwards every call to it — except the calls the chosen bug changes:
//
//   publish-no-bind  NodePublishVolume answers OK without binding the volume: the pod writes into
//                    an empty directory (or file) of the node, not into the volume.
//   expand-lies      ControllerExpandVolume and NodeExpandVolume answer the size asked for and
//                    change nothing.
//   snapshot-empty   CreateSnapshot snapshots a fresh, empty volume of the source's shape instead
//                    of the source: a restore has no data.
//   block-as-fs      NodePublishVolume of a raw block volume publishes it as a file system.
//
// Started by `csikit up --driver-command` per driver instance (usage below); it reads the
// cluster's layout from --statedir only to give hostpath the flags `up` gives it.
//
//   node scripts/bug-seeded-driver.ts --bug=NAME --mode={mode} --endpoint={endpoint} \
//     --nodeid={nodeid} --statedir={statedir} [--drivername=NAME]

import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { ClusterLayout } from "../src/cluster/index.ts";
import { hostpathCommand } from "../src/cli/hostpath.ts";
import { parseProgramFlags, runCommand } from "../src/cli/command.ts";
import {
  CsiClient,
  serveCsi,
  type CallContext,
  type CreateVolumeRequest,
  type CsiServerOptions,
  type NodePublishVolumeRequest,
} from "../src/csi/index.ts";

import { BUGS, type Bug } from "../test/harness/bug-table.ts";

type Handler = (request: never, context: CallContext) => Promise<unknown>;
type Overrides = Partial<
  Record<"identity" | "controller" | "node" | "groupController", Record<string, Handler>>
>;

/** The calls a bug changes; every other call goes to hostpath unchanged. */
function overrides(bug: Bug, driver: CsiClient): Overrides {
  switch (bug) {
    case "publish-no-bind":
      return {
        node: {
          nodePublishVolume: async (request: NodePublishVolumeRequest) => {
            if (request.volumeCapability?.block) {
              await mkdir(dirname(request.targetPath), { recursive: true });
              await writeFile(request.targetPath, "", { flag: "a" });
            } else await mkdir(request.targetPath, { recursive: true });
            return {};
          },
        },
      };
    case "expand-lies":
      return {
        controller: {
          controllerExpandVolume: async (request: { capacityRange: { requiredBytes: string } | null }) => ({
            capacityBytes: request.capacityRange?.requiredBytes ?? "0",
            nodeExpansionRequired: true,
          }),
        },
        node: {
          nodeExpandVolume: async (request: { capacityRange: { requiredBytes: string } | null }) => ({
            capacityBytes: request.capacityRange?.requiredBytes ?? "0",
          }),
        },
      };
    case "snapshot-empty": {
      // What each volume was created as, so an empty twin of the same shape can be made.
      const created = new Map<string, CreateVolumeRequest>();
      return {
        controller: {
          createVolume: async (request: CreateVolumeRequest, context: CallContext) => {
            const response = await driver.controller.createVolume(request, { signal: context.signal });
            if (response.volume) created.set(response.volume.volumeId, request);
            return response;
          },
          createSnapshot: async (
            request: { name: string; sourceVolumeId: string; parameters: Record<string, string> },
            context: CallContext,
          ) => {
            const source = created.get(request.sourceVolumeId);
            if (source === undefined)
              return driver.controller.createSnapshot(request, { signal: context.signal });
            const twin = await driver.controller.createVolume(
              {
                name: `empty-${request.name}`,
                capacityRange: source.capacityRange,
                volumeCapabilities: source.volumeCapabilities,
                parameters: source.parameters,
                accessibilityRequirements: source.accessibilityRequirements,
              },
              { signal: context.signal },
            );
            const snapshot = await driver.controller.createSnapshot(
              { ...request, sourceVolumeId: twin.volume?.volumeId ?? "" },
              { signal: context.signal },
            );
            return {
              ...snapshot,
              snapshot: snapshot.snapshot && { ...snapshot.snapshot, sourceVolumeId: request.sourceVolumeId },
            };
          },
        },
      };
    }
    case "block-as-fs":
      return {
        node: {
          nodePublishVolume: async (request: NodePublishVolumeRequest, context: CallContext) => {
            if (!request.volumeCapability?.block)
              return driver.node.nodePublishVolume(request, { signal: context.signal });
            const { block: _block, ...capability } = request.volumeCapability;
            return driver.node.nodePublishVolume(
              {
                ...request,
                volumeCapability: {
                  ...capability,
                  accessType: "mount",
                  mount: { fsType: "", mountFlags: [], volumeMountGroup: "" },
                },
              },
              { signal: context.signal },
            );
          },
        },
      };
  }
}

/** A service object that answers each method from `own`, else forwards it to the driver. */
function forwarding(
  client: Record<string, (request: never, options: { signal: AbortSignal }) => Promise<unknown>>,
  own: Record<string, Handler> = {},
): object {
  return new Proxy(
    {},
    {
      get: (_target, name: string) =>
        own[name] ??
        ((request: never, context: CallContext) => client[name]!(request, { signal: context.signal })),
    },
  );
}

/** hostpath's flags for this instance, as `csikit up` gives them (src/cluster/components.ts). */
function hostpathArgs(
  flags: { mode: string; nodeid: string; statedir: string; drivername: string },
  socket: string,
): string[] {
  const layout = new ClusterLayout(flags.statedir);
  const common = [
    `--drivername=${flags.drivername}`,
    `--state-dir=${layout.driverStateDir}`,
    `--endpoint=unix://${socket}`,
    `--nodeid=${flags.nodeid}`,
  ];
  return flags.mode === "controller"
    ? [
        ...common,
        "--node-service=false",
        "--controller-service=true",
        "--enable-attach=true",
        "--enable-controller-modify-volume=true",
        `--allowed-path-roots=${layout.nodesDir}`,
      ]
    : [
        ...common,
        "--node-service=true",
        "--controller-service=false",
        `--allowed-path-roots=${layout.rootOf(flags.nodeid)}`,
      ];
}

async function main(): Promise<number> {
  const flags = parseProgramFlags(
    "bug-seeded-driver",
    "node scripts/bug-seeded-driver.ts --bug=NAME --mode=controller|node --endpoint=PATH --nodeid=ID --statedir=DIR",
    {
      bug: { type: "string", help: `The seeded bug: ${BUGS.join(", ")}.` },
      mode: { type: "string", help: "controller or node (up's {mode})." },
      endpoint: { type: "string", help: "The socket the cluster dials." },
      nodeid: { type: "string", help: "The node ID (up's {nodeid})." },
      statedir: { type: "string", help: "The cluster's state dir (csikit e2e's {statedir})." },
      drivername: { type: "string", default: "hostpath.csi.k8s.io", help: "The CSI driver name." },
    },
  );
  const bug = flags.string("bug") as Bug;
  if (!BUGS.includes(bug)) throw new Error(`--bug=${JSON.stringify(bug)}: want one of ${BUGS.join(", ")}`);
  const mode = flags.string("mode");
  if (mode !== "controller" && mode !== "node")
    throw new Error(`--mode=${JSON.stringify(mode)}: want controller or node`);
  const privateDir = await mkdtemp(join(tmpdir(), "bug-driver-"));
  const socket = join(privateDir, "hostpath.sock");
  const hostpath = runCommand(
    hostpathCommand,
    hostpathArgs(
      {
        mode,
        nodeid: flags.string("nodeid"),
        statedir: flags.string("statedir"),
        drivername: flags.string("drivername"),
      },
      socket,
    ),
  );
  const driver = CsiClient.connect(socket);
  await driver.waitForReady({ timeoutMs: 60_000 });
  const own = overrides(bug, driver);
  const services: Partial<CsiServerOptions> = {
    identity: forwarding(driver.identity, own.identity),
    ...(mode === "controller"
      ? {
          controller: forwarding(driver.controller, own.controller),
          groupController: forwarding(driver.groupController, own.groupController),
        }
      : { node: forwarding(driver.node, own.node) }),
  };
  const server = await serveCsi({ endpoint: flags.string("endpoint"), ...services });
  // hostpath ends on SIGTERM/SIGINT (runCommand's signal); so does the server in front of it.
  const code = await hostpath;
  await server.close();
  driver.close();
  await rm(privateDir, { recursive: true, force: true });
  return code;
}

if (import.meta.main) process.exitCode = await main();
