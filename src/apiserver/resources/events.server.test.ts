// core/v1 events and events.k8s.io/v1 events are one stored object served in two shapes, over a
// real server: a write through either API is read, listed, watched, patched and deleted through
// the other with converted fields and the same resourceVersion, uid and creationTimestamp;
// finalizers and deletion hold across both; each API selects fields on its own shape; kubectl
// get events and kubectl describe show events written through events.k8s.io.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { request as httpsRequest } from "node:https";
import { raw, startTestServer, type TestServer } from "../../../test/harness/apiserver.ts";
import { kubectl, kubectlMissing } from "../../../test/harness/kubectl.ts";

type Json = Record<string, unknown>;

const NS = "evns";
const CORE = `/api/v1/namespaces/${NS}/events`;
const EVENTS = `/apis/events.k8s.io/v1/namespaces/${NS}/events`;

let server: TestServer;

before(async () => {
  server = await startTestServer();
  await call("POST", "/api/v1/namespaces", { metadata: { name: NS } }, 201);
});
after(async () => {
  await server?.dispose();
});

/** One request; asserts the status code and answers the JSON body. */
async function call(method: string, path: string, body: unknown, expect: number, contentType?: string) {
  const response = await raw(server.handle, {
    method,
    path,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    ...(contentType !== undefined ? { headers: { "Content-Type": contentType } } : {}),
  });
  assert.equal(response.status, expect, `${method} ${path}: ${response.text}`);
  return response.json() as Json;
}

const meta = (object: Json): Json => object.metadata as Json;

/** The events.k8s.io/v1 shape of an event about the claim `claim` (uid optional). */
function newEvent(name: string, claim: string, extra: Json = {}): Json {
  return {
    apiVersion: "events.k8s.io/v1",
    kind: "Event",
    metadata: { name },
    eventTime: "2026-01-01T00:00:00.000000Z",
    regarding: { apiVersion: "v1", kind: "PersistentVolumeClaim", namespace: NS, name: claim },
    note: `provisioning volume for claim ${claim}`,
    reason: "Provisioning",
    action: "Provision",
    type: "Normal",
    reportingController: "hostpath.csi.k8s.io",
    reportingInstance: "provisioner-0",
    ...extra,
  };
}

/** The core/v1 shape of an old-style event (no eventTime). */
function oldEvent(name: string): Json {
  return {
    metadata: { name },
    involvedObject: { apiVersion: "v1", kind: "Pod", namespace: NS, name: "web-0" },
    message: "MountVolume.SetUp failed",
    reason: "FailedMount",
    type: "Warning",
    source: { component: "kubelet", host: "node-1" },
    firstTimestamp: "2026-01-01T00:00:00Z",
    lastTimestamp: "2026-01-01T00:01:00Z",
    count: 3,
  };
}

interface WatchEvent {
  type: string;
  object: Json;
}

/**
 * Watches `path` from `resourceVersion`, runs `act`, and answers the events received once
 * `until` holds (or fails when the stream ends first).
 */
async function watchWhile(
  path: string,
  resourceVersion: string,
  act: () => Promise<void>,
  until: (events: WatchEvent[]) => boolean,
): Promise<WatchEvent[]> {
  const events: WatchEvent[] = [];
  const { handle } = server;
  let abort = (): void => {};
  const done = new Promise<void>((resolve, reject) => {
    const req = httpsRequest(
      `${handle.url}${path}?watch=1&resourceVersion=${resourceVersion}`,
      { headers: { Authorization: `Bearer ${handle.adminToken}` }, ca: handle.caCertPem },
      (res) => {
        let buffered = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          buffered += chunk;
          for (let nl = buffered.indexOf("\n"); nl >= 0; nl = buffered.indexOf("\n")) {
            events.push(JSON.parse(buffered.slice(0, nl)) as WatchEvent);
            buffered = buffered.slice(nl + 1);
          }
          if (until(events)) resolve();
        });
        res.on("end", () => reject(new Error(`watch ended after ${events.map((e) => e.type).join(",")}`)));
        res.on("error", () => {});
      },
    );
    req.on("error", (error) => (until(events) ? resolve() : reject(error)));
    req.end();
    abort = () => req.destroy();
  });
  try {
    await act();
    await done;
  } finally {
    abort();
  }
  return events;
}

describe("core/v1 and events.k8s.io/v1 events share one storage", () => {
  test("created through core: read, listed and watched through events.k8s.io, converted", async () => {
    const list = await call("GET", EVENTS, undefined, 200);
    const fromRevision = String(meta(list).resourceVersion);
    let created: Json = {};
    let updated: Json = {};
    let deleted: Json = {};
    const seen = await watchWhile(
      EVENTS,
      fromRevision,
      async () => {
        created = await call("POST", CORE, oldEvent("mount-failed"), 201);
        const viaEvents = await call("GET", `${EVENTS}/mount-failed`, undefined, 200);
        assert.equal(viaEvents.apiVersion, "events.k8s.io/v1");
        assert.deepEqual(viaEvents.regarding, oldEvent("x").involvedObject);
        assert.equal(viaEvents.note, "MountVolume.SetUp failed");
        assert.deepEqual(viaEvents.deprecatedSource, { component: "kubelet", host: "node-1" });
        assert.equal(viaEvents.deprecatedFirstTimestamp, "2026-01-01T00:00:00Z");
        assert.equal(viaEvents.deprecatedLastTimestamp, "2026-01-01T00:01:00Z");
        assert.equal(viaEvents.deprecatedCount, 3);
        assert.equal(viaEvents.reason, "FailedMount");
        assert.equal(viaEvents.type, "Warning");
        for (const coreField of ["involvedObject", "message", "source", "firstTimestamp", "count"])
          assert.equal(viaEvents[coreField], undefined, `no ${coreField} in the events.k8s.io shape`);
        for (const field of ["uid", "resourceVersion", "creationTimestamp", "name", "namespace"])
          assert.equal(meta(viaEvents)[field], meta(created)[field], `metadata.${field}`);

        const listed = await call("GET", EVENTS, undefined, 200);
        const items = listed.items as Json[];
        assert.deepEqual(
          items.map((item) => [meta(item).name, meta(item).resourceVersion, item.note]),
          [["mount-failed", meta(created).resourceVersion, "MountVolume.SetUp failed"]],
        );

        // An update through core is seen through events.k8s.io, with core's new resourceVersion.
        updated = await call(
          "PUT",
          `${CORE}/mount-failed`,
          { ...created, message: "MountVolume.SetUp failed again", count: 4 },
          200,
        );
        const after = await call("GET", `${EVENTS}/mount-failed`, undefined, 200);
        assert.equal(after.note, "MountVolume.SetUp failed again");
        assert.equal(after.deprecatedCount, 4);
        assert.equal(meta(after).resourceVersion, meta(updated).resourceVersion);
        assert.notEqual(meta(updated).resourceVersion, meta(created).resourceVersion);

        // A delete through core removes it from both.
        deleted = await call("DELETE", `${CORE}/mount-failed`, undefined, 200);
        await call("GET", `${EVENTS}/mount-failed`, undefined, 404);
        await call("GET", `${CORE}/mount-failed`, undefined, 404);
      },
      (events) => events.some((e) => e.type === "DELETED"),
    );
    assert.equal((deleted.details as Json).uid, meta(created).uid);
    assert.deepEqual(
      seen.map((e) => [e.type, e.object.apiVersion, e.object.note, meta(e.object).uid]),
      [
        ["ADDED", "events.k8s.io/v1", "MountVolume.SetUp failed", meta(created).uid],
        ["MODIFIED", "events.k8s.io/v1", "MountVolume.SetUp failed again", meta(created).uid],
        ["DELETED", "events.k8s.io/v1", "MountVolume.SetUp failed again", meta(created).uid],
      ],
    );
    assert.equal(meta(seen[0]!.object).resourceVersion, meta(created).resourceVersion);
    assert.equal(meta(seen[1]!.object).resourceVersion, meta(updated).resourceVersion);
    assert.deepEqual(seen[2]!.object.regarding, oldEvent("x").involvedObject);
  });

  test("created through events.k8s.io: read through core; patch, finalizers and delete across both", async () => {
    const created = await call("POST", EVENTS, newEvent("provisioning", "data"), 201);
    const viaCore = await call("GET", `${CORE}/provisioning`, undefined, 200);
    assert.equal(viaCore.apiVersion, "v1");
    assert.deepEqual(viaCore.involvedObject, newEvent("x", "data").regarding);
    assert.equal(viaCore.message, "provisioning volume for claim data");
    assert.equal(viaCore.reportingComponent, "hostpath.csi.k8s.io");
    assert.equal(viaCore.reportingInstance, "provisioner-0");
    assert.equal(viaCore.eventTime, "2026-01-01T00:00:00.000000Z");
    assert.equal(viaCore.action, "Provision");
    for (const v1Field of ["regarding", "note", "reportingController"])
      assert.equal(viaCore[v1Field], undefined, `no ${v1Field} in the core shape`);
    for (const field of ["uid", "resourceVersion", "creationTimestamp"])
      assert.equal(meta(viaCore)[field], meta(created)[field], `metadata.${field}`);

    // A merge patch through events.k8s.io (series, a finalizer) is seen through core.
    const patched = await call(
      "PATCH",
      `${EVENTS}/provisioning`,
      {
        metadata: { finalizers: ["example.com/hold"] },
        series: { count: 2, lastObservedTime: "2026-01-01T00:05:00.000000Z" },
      },
      200,
      "application/merge-patch+json",
    );
    const patchedCore = await call("GET", `${CORE}/provisioning`, undefined, 200);
    assert.deepEqual(patchedCore.series, { count: 2, lastObservedTime: "2026-01-01T00:05:00.000000Z" });
    assert.deepEqual(meta(patchedCore).finalizers, ["example.com/hold"]);
    assert.equal(meta(patchedCore).resourceVersion, meta(patched).resourceVersion);

    // Delete through core: the finalizer keeps it, marked, in both shapes.
    const marked = await call("DELETE", `${CORE}/provisioning`, undefined, 200);
    assert.ok(meta(marked).deletionTimestamp, "kept with a deletionTimestamp");
    const markedV1 = await call("GET", `${EVENTS}/provisioning`, undefined, 200);
    assert.equal(meta(markedV1).deletionTimestamp, meta(marked).deletionTimestamp);
    assert.equal(meta(markedV1).resourceVersion, meta(marked).resourceVersion);

    // Removing the finalizer through events.k8s.io completes the delete for both.
    await call(
      "PATCH",
      `${EVENTS}/provisioning`,
      { metadata: { finalizers: null } },
      200,
      "application/merge-patch+json",
    );
    await call("GET", `${CORE}/provisioning`, undefined, 404);
    await call("GET", `${EVENTS}/provisioning`, undefined, 404);
  });

  test("an update through events.k8s.io is seen through core; delete through events.k8s.io removes both", async () => {
    const created = await call("POST", EVENTS, newEvent("attach", "data", { reason: "Attaching" }), 201);
    const updated = await call(
      "PUT",
      `${EVENTS}/attach`,
      { ...created, series: { count: 5, lastObservedTime: "2026-01-01T00:09:00.000000Z" } },
      200,
    );
    const viaCore = await call("GET", `${CORE}/attach`, undefined, 200);
    assert.equal((viaCore.series as Json).count, 5);
    assert.equal(meta(viaCore).resourceVersion, meta(updated).resourceVersion);
    assert.equal(meta(viaCore).uid, meta(created).uid);
    const deleted = await call("DELETE", `${EVENTS}/attach`, undefined, 200);
    assert.equal((deleted.details as Json).group, "events.k8s.io");
    await call("GET", `${CORE}/attach`, undefined, 404);
    await call("GET", `${EVENTS}/attach`, undefined, 404);
  });

  test("field selectors: each API selects on its own shape", async () => {
    await call("POST", EVENTS, newEvent("sel-new", "claim-a", { type: "Warning" }), 201);
    await call("POST", CORE, oldEvent("sel-old"), 201);
    const names = async (path: string, selector: string): Promise<string[]> => {
      const list = await call("GET", `${path}?fieldSelector=${encodeURIComponent(selector)}`, undefined, 200);
      return (list.items as Json[]).map((item) => String(meta(item).name)).sort();
    };
    assert.deepEqual(await names(EVENTS, "regarding.name=claim-a"), ["sel-new"]);
    assert.deepEqual(await names(EVENTS, "regarding.kind=Pod"), ["sel-old"]);
    assert.deepEqual(await names(EVENTS, "reportingController=hostpath.csi.k8s.io"), ["sel-new"]);
    assert.deepEqual(await names(EVENTS, "type=Warning,reason=FailedMount"), ["sel-old"]);
    assert.deepEqual(await names(EVENTS, "source=kubelet"), ["sel-old"]);
    assert.deepEqual(await names(CORE, "involvedObject.name=claim-a"), ["sel-new"]);
    assert.deepEqual(await names(CORE, "reportingComponent=hostpath.csi.k8s.io"), ["sel-new"]);
    assert.deepEqual(await names(CORE, "source=kubelet,involvedObject.kind=Pod"), ["sel-old"]);
    for (const [path, label] of [
      [EVENTS, "involvedObject.name"],
      [EVENTS, "reportingComponent"],
      [CORE, "regarding.name"],
      [CORE, "reportingController"],
    ] as const) {
      const response = await raw(server.handle, { path: `${path}?fieldSelector=${label}%3Dx` });
      assert.equal(response.status, 400, `${path} ${label}`);
      assert.match(String(response.json().message), new RegExp(`field label not supported: ${label}`));
    }
    await call("DELETE", `${EVENTS}/sel-new`, undefined, 200);
    await call("DELETE", `${CORE}/sel-old`, undefined, 200);
  });

  test("events.k8s.io lists page through core-stored events with limit and continue", async () => {
    for (const name of ["page-a", "page-b", "page-c"]) await call("POST", CORE, oldEvent(name), 201);
    const names: string[] = [];
    let token = "";
    for (let pages = 0; pages < 5; pages++) {
      const continued = token === "" ? "" : `&continue=${encodeURIComponent(token)}`;
      const page = await call("GET", `${EVENTS}?limit=1${continued}`, undefined, 200);
      names.push(...(page.items as Json[]).map((item) => `${String(meta(item).name)}:${String(item.note)}`));
      const next = meta(page).continue;
      token = typeof next === "string" ? next : "";
      if (token === "") break;
    }
    const note = "MountVolume.SetUp failed";
    assert.deepEqual(names, [`page-a:${note}`, `page-b:${note}`, `page-c:${note}`]);
    for (const name of ["page-a", "page-b", "page-c"])
      await call("DELETE", `${EVENTS}/${name}`, undefined, 200);
  });

  test("deleting the namespace removes events written through either API, once", async () => {
    const doomed = "evgone";
    await call("POST", "/api/v1/namespaces", { metadata: { name: doomed } }, 201);
    const v1Path = `/apis/events.k8s.io/v1/namespaces/${doomed}/events`;
    const corePath = `/api/v1/namespaces/${doomed}/events`;
    const v1Event = newEvent("new-style", "data");
    (v1Event.regarding as Json).namespace = doomed;
    await call("POST", v1Path, v1Event, 201);
    const old = oldEvent("old-style");
    (old.involvedObject as Json).namespace = doomed;
    await call("POST", corePath, old, 201);
    await call("DELETE", `/api/v1/namespaces/${doomed}`, undefined, 200);
    for (let polls = 0; ; polls++) {
      const response = await raw(server.handle, { path: `/api/v1/namespaces/${doomed}` });
      if (response.status === 404) break;
      assert.ok(polls < 200, "the namespace is gone within 200 polls");
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    assert.deepEqual((await call("GET", v1Path, undefined, 200)).items, []);
    assert.deepEqual((await call("GET", corePath, undefined, 200)).items, []);
  });

  test(
    "kubectl get events and kubectl describe show an event written through events.k8s.io",
    { skip: kubectlMissing() },
    async () => {
      const claim = await call(
        "POST",
        `/api/v1/namespaces/${NS}/persistentvolumeclaims`,
        {
          metadata: { name: "described" },
          spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
        },
        201,
      );
      const event = newEvent("described-provisioning", "described");
      (event.regarding as Json).uid = meta(claim).uid;
      await call("POST", EVENTS, event, 201);

      const get = await kubectl(["get", "events", "-n", NS], { kubeconfig: server.handle.kubeconfigPath });
      assert.equal(get.code, 0, get.stderr);
      assert.match(
        get.stdout,
        /Normal\s+Provisioning\s+persistentvolumeclaim\/described\s+provisioning volume for claim described/,
      );
      const describe = await kubectl(["describe", "pvc", "described", "-n", NS], {
        kubeconfig: server.handle.kubeconfigPath,
      });
      assert.equal(describe.code, 0, describe.stderr);
      assert.match(
        describe.stdout,
        /Normal\s+Provisioning\s+\S+\s+hostpath\.csi\.k8s\.io\s+provisioning volume for claim described/,
      );
    },
  );
});
