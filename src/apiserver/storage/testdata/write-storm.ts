// Test fixture for durability.test.ts (not part of csikit): opens the store at argv[2] and writes
// until killed, alternating a create and an update per key, and prints one line per write only
// after the store acknowledged it: "<revision> <key> <sequence>".

import { openSqliteStore } from "../sqlite-store.ts";

const path = process.argv[2];
if (!path) throw new Error("usage: write-storm.ts DATABASE");
const store = openSqliteStore({ path });
for (let sequence = 0; ; sequence++) {
  const key = `/storm/${Math.floor(sequence / 2)}`;
  const object = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "x" },
    data: { sequence: String(sequence) },
  };
  const written = sequence % 2 === 0 ? store.create(key, object) : store.update(key, object);
  process.stdout.write(`${written.revision} ${key} ${sequence}\n`);
  // Let the parent read our output (and kill us) while the storm goes on.
  if (sequence % 10 === 0) await new Promise<void>((resolve) => setImmediate(resolve));
}
