import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { nodeFileName } from "./ids.ts";
import { MOUNT_RW, startTestDriver } from "./test-helpers.ts";

test("a state dir of the whole-file JSON format (version 1) is migrated at the first start, volumes kept", async (t) => {
  const driver = await startTestDriver(t);
  const { client } = driver;
  const kept = (await client.controller.createVolume({ name: "kept", volumeCapabilities: [MOUNT_RW] }))
    .volume!;
  const gone = (await client.controller.createVolume({ name: "gone", volumeCapabilities: [MOUNT_RW] }))
    .volume!;
  await driver.server.close();
  // Rewrite the files exactly as csikit before the journal left them: one JSON document per
  // file, version 1, no journal.
  const controllerFile = join(driver.stateDir, "controller.json");
  const current = JSON.parse(await readFile(controllerFile, "utf8")) as Record<string, unknown>;
  const v1 = {
    version: 1,
    volumes: current.volumes,
    snapshots: current.snapshots,
    groupSnapshots: current.groupSnapshots,
    knownNodes: current.knownNodes,
  };
  await writeFile(controllerFile, JSON.stringify(v1, null, 1) + "\n");
  const nodeFile = join(driver.stateDir, `node-${nodeFileName("node-1")}.json`);
  await writeFile(nodeFile, JSON.stringify({ version: 1, ephemeral: {} }, null, 1) + "\n");
  await rm(join(driver.stateDir, "controller.journal"));
  await rm(join(driver.stateDir, `node-${nodeFileName("node-1")}.journal`));

  await driver.restart();
  const listed = (await client.controller.listVolumes({})).entries.map((e) => e.volume?.volumeId).sort();
  assert.deepEqual(listed, [kept.volumeId, gone.volumeId].sort());
  // The same name is the same volume (idempotent), and deleting works on a migrated record.
  const again = await client.controller.createVolume({ name: "kept", volumeCapabilities: [MOUNT_RW] });
  assert.equal(again.volume?.volumeId, kept.volumeId);
  await client.controller.deleteVolume({ volumeId: gone.volumeId });
  await assert.rejects(stat(join(driver.stateDir, "volumes", gone.volumeId)), { code: "ENOENT" });
  // Rewritten as version 2 (which needs its journal, so an older csikit refuses it).
  for (const file of [controllerFile, nodeFile])
    assert.equal((JSON.parse(await readFile(file, "utf8")) as { version: number }).version, 2, file);
  await stat(join(driver.stateDir, "controller.journal"));

  await driver.restart();
  const after = (await client.controller.listVolumes({})).entries.map((e) => e.volume?.volumeId);
  assert.deepEqual(after, [kept.volumeId]);
});
