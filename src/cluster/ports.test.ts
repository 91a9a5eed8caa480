// Ports for `up`'s servers come from below the kernel's ephemeral range, so no outgoing
// connection can take one between the pick and the bind; each is checked free and handed out once.

import assert from "node:assert/strict";
import { createServer, type Server } from "node:net";
import { test } from "node:test";
import { ephemeralRangeStart, PortPicker, portIsFree } from "./ports.ts";

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}

test("the ephemeral range's start is read from the kernel's setting, with Linux's default otherwise", () => {
  assert.equal(
    ephemeralRangeStart(() => "40000\t60999\n"),
    40000,
  );
  assert.equal(
    ephemeralRangeStart(() => "garbage"),
    32768,
  );
  assert.equal(
    ephemeralRangeStart(() => {
      throw new Error("no /proc");
    }),
    32768,
  );
});

test("picked ports are distinct, below the ephemeral range, and skip a bound one", async (t) => {
  // A port bound by someone else (from the ephemeral range, then one from the picker's range).
  const start = ephemeralRangeStart();
  const picker = new PortPicker({ random: () => 0.5 });
  const first = await picker.next();
  assert.ok(first >= 20_000 && first < start, `${first} below ${start}`);
  const squatter = await listen(first + 1);
  t.after(() => squatter.close());
  const second = await picker.next();
  assert.notEqual(second, first + 1, "a bound port is skipped");
  assert.ok(second > first + 1, "the walk goes on upwards");
  assert.equal(await portIsFree(first + 1), false);
  const many = new Set([first, second]);
  for (let i = 0; i < 20; i += 1) many.add(await picker.next());
  assert.equal(many.size, 22, "never the same port twice");
});

test("the walk wraps around to the range's start and fails clearly when nothing is free", async (t) => {
  const a = await listen(0);
  t.after(() => a.close());
  const port = (a.address() as { port: number }).port;
  // A range of one bound port: no free port, a clear error.
  const full = new PortPicker({ low: port, high: port, random: () => 0 });
  await assert.rejects(full.next(), (error: Error) => {
    assert.match(
      error.message,
      new RegExp(`no free TCP port on 127\\.0\\.0\\.1 between ${port} and ${port}`),
    );
    return true;
  });
  // From the last port of a two-port range it wraps to the first.
  const wrap = new PortPicker({ low: port - 1, high: port, random: () => 0.99 });
  if (await portIsFree(port - 1)) assert.equal(await wrap.next(), port - 1);
});
