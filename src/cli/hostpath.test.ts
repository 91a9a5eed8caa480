import { test } from "node:test";
import assert from "node:assert/strict";
import { FlagError, Flags, LOGGING_FLAGS, parseFlags } from "../base/index.ts";
import { hostpathCommand, hostpathOptions, parseCapacity } from "./hostpath.ts";

function options(argv: string[]): ReturnType<typeof hostpathOptions> {
  return hostpathOptions(new Flags(parseFlags({ ...LOGGING_FLAGS, ...hostpathCommand.flags }, argv)));
}

test("hostpath flags: upstream defaults, quantities, and upstream spellings", () => {
  const defaults = options(["--nodeid=n1"]);
  assert.equal(defaults.endpoint, "unix:///csi/csi.sock");
  assert.equal(defaults.driverName, "hostpath.csi.k8s.io");
  assert.equal(defaults.enableTopology, true);
  assert.equal(defaults.nodeService, true);
  assert.equal(defaults.controllerService, true);
  assert.equal(defaults.maxVolumeSize, 1024 ** 4);
  assert.deepEqual(defaults.capacity, {});
  const custom = options([
    "-nodeid",
    "n2",
    "--capacity=fast=100Mi",
    "--capacity",
    "1Gi",
    "--max-volume-size=16Mi",
    "--enable-topology=false",
    "--controller-service=false",
    "--statedir=/srv/hp",
    "--maxvolumespernode=3",
  ]);
  assert.deepEqual(custom.capacity, { fast: 100 * 1024 * 1024, "": 1024 ** 3 });
  assert.equal(custom.maxVolumeSize, 16 * 1024 * 1024);
  assert.equal(custom.enableTopology, false);
  assert.equal(custom.controllerService, false);
  assert.equal(custom.stateDir, "/srv/hp");
  assert.equal(custom.maxVolumesPerNode, 3);
});

test("hostpath flags: missing node id and bad quantities name the flag", () => {
  assert.throws(
    () => options([]),
    (e: unknown) => e instanceof FlagError && /-nodeid/.test(e.message),
  );
  assert.throws(() => parseCapacity(["fast=lots"]), /-capacity/);
  assert.throws(() => options(["--nodeid=n", "--max-volume-size=-1"]), /-max-volume-size/);
});
