import { test } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject, ResourceDef } from "../rest/resource.ts";
import { configMaps, secrets, serviceAccounts } from "./config.ts";
import { leases } from "./coordination.ts";
import { coreEvents, eventsV1 } from "./events.ts";
import { persistentVolumeClaims, persistentVolumes } from "./volumes.ts";
import { namespaces, nodes, pods } from "./workloads.ts";

const NOW = Date.parse("2026-01-01T01:00:00Z");
const CREATED = "2026-01-01T00:00:00Z";

function created(def: ResourceDef, object: KubeObject): KubeObject {
  const copy = structuredClone(object);
  def.applyDefaults(copy);
  return copy;
}

function fields(causes: { field: string }[]): string[] {
  return causes.map((c) => c.field);
}

function setAt(object: KubeObject, path: string, value: unknown): KubeObject {
  const copy = structuredClone(object);
  const steps = path.split(".");
  let current = copy as Record<string, unknown>;
  for (const step of steps.slice(0, -1)) {
    current[step] ??= {};
    current = current[step] as Record<string, unknown>;
  }
  const last = steps.at(-1) ?? "";
  if (value === undefined) delete current[last];
  else current[last] = value;
  return copy;
}

const pvc = () =>
  created(persistentVolumeClaims, {
    metadata: { name: "data", namespace: "default", creationTimestamp: CREATED },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Gi" } },
      storageClassName: "fast",
    },
  });

test("PVC defaults and create validation", () => {
  const claim = pvc();
  assert.equal((claim.spec as Record<string, unknown>).volumeMode, "Filesystem");
  assert.equal((claim.status as Record<string, unknown>).phase, "Pending");
  assert.deepEqual(persistentVolumeClaims.validateCreate(claim), []);
  const restore = setAt(claim, "spec.dataSource", {
    apiGroup: "snapshot.storage.k8s.io",
    kind: "VolumeSnapshot",
    name: "snap",
  });
  assert.deepEqual(persistentVolumeClaims.validateCreate(restore), []);
  const cases: [string, unknown, string, string][] = [
    ["spec.accessModes", [], "spec.accessModes", "Required value: at least 1 access mode is required"],
    [
      "spec.accessModes",
      ["ReadWriteSometimes"],
      "spec.accessModes",
      'Unsupported value: "ReadWriteSometimes": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"',
    ],
    [
      "spec.accessModes",
      ["ReadWriteOncePod", "ReadWriteOnce"],
      "spec.accessModes",
      "Forbidden: may not use ReadWriteOncePod with other access modes",
    ],
    ["spec.resources", undefined, "spec.resources[storage]", "Required value"],
    [
      "spec.resources.requests.storage",
      "0",
      "spec.resources[storage]",
      'Invalid value: "0": must be greater than zero',
    ],
    [
      "spec.volumeMode",
      "Raw",
      "spec.volumeMode",
      'Unsupported value: "Raw": supported values: "Block", "Filesystem"',
    ],
    ["spec.storageClassName", "Fast_Class", "spec.storageClassName", ""],
    ["metadata.namespace", "", "metadata.namespace", "Required value"],
    [
      "spec.dataSource",
      { kind: "VolumeSnapshot", name: "snap" },
      "spec.dataSource",
      `Invalid value: "VolumeSnapshot": must be 'PersistentVolumeClaim' when referencing the default apiGroup`,
    ],
  ];
  for (const [path, value, field, message] of cases) {
    const causes = persistentVolumeClaims.validateCreate(setAt(claim, path, value));
    assert.deepEqual(fields(causes), [field], `${path}=${JSON.stringify(value)}`);
    if (message !== "") assert.equal(causes[0]?.message, message);
  }
});

test("PVC update: spec immutable except storage increase and VAC name of bound claims", () => {
  const old = pvc();
  const bound = setAt(setAt(old, "status.phase", "Bound"), "status.capacity", { storage: "1Gi" });
  const boundWithVolume = setAt(bound, "spec.volumeName", "pv-1");
  // the PV controller may set volumeName once
  assert.deepEqual(persistentVolumeClaims.validateUpdate(boundWithVolume, bound), []);
  assert.deepEqual(
    fields(
      persistentVolumeClaims.validateUpdate(
        setAt(boundWithVolume, "spec.volumeName", "pv-2"),
        boundWithVolume,
      ),
    ),
    ["spec"],
  );
  // expansion of a bound claim
  assert.deepEqual(
    persistentVolumeClaims.validateUpdate(setAt(bound, "spec.resources.requests.storage", "2Gi"), bound),
    [],
  );
  // same size spelled differently is no change
  assert.deepEqual(
    persistentVolumeClaims.validateUpdate(setAt(bound, "spec.resources.requests.storage", "1024Mi"), bound),
    [],
  );
  // resizing an unbound claim is a spec change
  const unbound = persistentVolumeClaims.validateUpdate(
    setAt(old, "spec.resources.requests.storage", "2Gi"),
    old,
  );
  assert.deepEqual(fields(unbound), ["spec"]);
  assert.equal(
    unbound[0]?.message,
    "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
  );
  // shrinking to the status capacity is refused (RecoverVolumeExpansionFailure)
  const grown = setAt(setAt(bound, "spec.resources.requests.storage", "3Gi"), "status.capacity", {
    storage: "2Gi",
  });
  const shrink = persistentVolumeClaims.validateUpdate(
    setAt(grown, "spec.resources.requests.storage", "2Gi"),
    grown,
  );
  assert.deepEqual(fields(shrink), ["spec.resources.requests.storage"]);
  assert.equal(shrink[0]?.message, "Forbidden: field can not be less than status.capacity");
  // volumeAttributesClassName may change, but not back to unset or empty
  assert.deepEqual(
    persistentVolumeClaims.validateUpdate(setAt(bound, "spec.volumeAttributesClassName", "gold"), bound),
    [],
  );
  const gold = setAt(bound, "spec.volumeAttributesClassName", "gold");
  assert.deepEqual(
    persistentVolumeClaims.validateUpdate(setAt(gold, "spec.volumeAttributesClassName", "silver"), gold),
    [],
  );
  // Unset: allowed while no class has been applied (a rollback of an infeasible first class,
  // Kubernetes 1.34), forbidden once one is current.
  assert.deepEqual(
    persistentVolumeClaims.validateUpdate(setAt(gold, "spec.volumeAttributesClassName", undefined), gold),
    [],
  );
  const applied = setAt(gold, "status.currentVolumeAttributesClassName", "gold");
  assert.deepEqual(
    persistentVolumeClaims
      .validateUpdate(setAt(applied, "spec.volumeAttributesClassName", undefined), applied)
      .map((c) => c.message),
    ["Forbidden: update to nil is forbidden when status.currentVolumeAttributesClassName is not nil"],
  );
  // a class may be set once on a claim without one
  const classless = setAt(old, "spec.storageClassName", undefined);
  assert.deepEqual(
    persistentVolumeClaims.validateUpdate(setAt(classless, "spec.storageClassName", "fast"), classless),
    [],
  );
  assert.deepEqual(
    fields(persistentVolumeClaims.validateUpdate(setAt(old, "spec.storageClassName", "slow"), old)),
    ["spec"],
  );
  // access modes never change; volumeMode is reported twice as upstream does
  assert.deepEqual(
    fields(persistentVolumeClaims.validateUpdate(setAt(bound, "spec.accessModes", ["ReadOnlyMany"]), bound)),
    ["spec"],
  );
  assert.deepEqual(
    fields(persistentVolumeClaims.validateUpdate(setAt(bound, "spec.volumeMode", "Block"), bound)),
    ["spec", "volumeMode"],
  );
});

test("PVC printing", () => {
  const claim = setAt(
    setAt(setAt(pvc(), "spec.volumeName", "pvc-123"), "status", {
      phase: "Bound",
      capacity: { storage: "1024Mi" },
      accessModes: ["ReadWriteOnce", "ReadOnlyMany"],
    }),
    "metadata.creationTimestamp",
    CREATED,
  );
  assert.deepEqual(persistentVolumeClaims.tableRow(claim, NOW), [
    "data",
    "Bound",
    "pvc-123",
    "1Gi",
    "RWO,ROX",
    "fast",
    "<unset>",
    "60m",
    "Filesystem",
  ]);
  assert.deepEqual(persistentVolumeClaims.tableRow(pvc(), NOW), [
    "data",
    "Pending",
    "",
    "",
    "",
    "fast",
    "<unset>",
    "60m",
    "Filesystem",
  ]);
  const deleting = setAt(pvc(), "metadata.deletionTimestamp", CREATED);
  assert.equal(persistentVolumeClaims.tableRow(deleting, NOW)[1], "Terminating");
  assert.deepEqual(
    persistentVolumeClaims.tableColumns.map((c) => `${c.name}${c.priority > 0 ? "*" : ""}`),
    [
      "Name",
      "Status",
      "Volume",
      "Capacity",
      "Access Modes",
      "StorageClass",
      "VolumeAttributesClass",
      "Age",
      "VolumeMode*",
    ],
  );
});

const pv = () =>
  created(persistentVolumes, {
    metadata: { name: "pv-1", creationTimestamp: CREATED },
    spec: {
      capacity: { storage: "5Gi" },
      accessModes: ["ReadWriteOnce"],
      storageClassName: "fast",
      csi: { driver: "hostpath.csi.k8s.io", volumeHandle: "vol-1" },
    },
  });

test("PV defaults, validation, source immutability, printing", () => {
  const volume = pv();
  const spec = volume.spec as Record<string, unknown>;
  assert.equal(spec.persistentVolumeReclaimPolicy, "Retain");
  assert.equal(spec.volumeMode, "Filesystem");
  assert.equal((volume.status as Record<string, unknown>).phase, "Pending");
  assert.deepEqual(persistentVolumes.validateCreate(volume), []);
  assert.deepEqual(fields(persistentVolumes.validateCreate(setAt(volume, "spec.csi", undefined))), ["spec"]);
  assert.equal(
    persistentVolumes.validateCreate(setAt(volume, "spec.csi", undefined))[0]?.message,
    "Required value: must specify a volume type",
  );
  assert.deepEqual(fields(persistentVolumes.validateCreate(setAt(volume, "spec.hostPath", { path: "/x" }))), [
    "spec.hostPath",
  ]);
  assert.deepEqual(fields(persistentVolumes.validateCreate(setAt(volume, "spec.csi.volumeHandle", ""))), [
    "spec.csi.volumeHandle",
  ]);
  assert.deepEqual(fields(persistentVolumes.validateCreate(setAt(volume, "spec.capacity", undefined))), [
    "spec.capacity",
  ]);
  assert.deepEqual(
    fields(persistentVolumes.validateCreate(setAt(volume, "spec.persistentVolumeReclaimPolicy", "Keep"))),
    ["spec.persistentVolumeReclaimPolicy"],
  );

  const moved = persistentVolumes.validateUpdate(setAt(volume, "spec.csi.volumeHandle", "vol-2"), volume);
  assert.deepEqual(fields(moved), ["spec.persistentvolumesource"]);
  assert.match(
    moved[0]?.message ?? "",
    /^Forbidden: spec.persistentvolumesource is immutable after creation/,
  );
  // a controllerExpandSecretRef may be added once
  assert.deepEqual(
    persistentVolumes.validateUpdate(
      setAt(volume, "spec.csi.controllerExpandSecretRef", { name: "s", namespace: "n" }),
      volume,
    ),
    [],
  );
  assert.deepEqual(
    fields(
      persistentVolumes
        .validateCreate(setAt(setAt(volume, "spec.csi", undefined), "spec.volumeAttributesClassName", "gold"))
        .filter((c) => c.field !== "spec"),
    ),
    ["spec.csi"],
  );
  // binding and reclaim-policy changes are allowed
  const bound = setAt(
    setAt(volume, "spec.claimRef", { namespace: "default", name: "data" }),
    "spec.persistentVolumeReclaimPolicy",
    "Delete",
  );
  assert.deepEqual(persistentVolumes.validateUpdate(bound, volume), []);

  const printed = setAt(bound, "status", { phase: "Bound" });
  assert.deepEqual(persistentVolumes.tableRow(printed, NOW), [
    "pv-1",
    "5Gi",
    "RWO",
    "Delete",
    "Bound",
    "default/data",
    "fast",
    "<unset>",
    "",
    "60m",
    "Filesystem",
  ]);
  assert.deepEqual(persistentVolumes.shortNames, ["pv"]);
  assert.deepEqual(persistentVolumes.fieldSelectors["metadata.namespace"], undefined);
});

test("namespaces, nodes", () => {
  const ns = created(namespaces, { metadata: { name: "team-a", creationTimestamp: CREATED } });
  assert.equal((ns.status as Record<string, unknown>).phase, "Active");
  assert.deepEqual((ns.metadata as Record<string, unknown>).labels, {
    "kubernetes.io/metadata.name": "team-a",
  });
  assert.deepEqual(namespaces.validateCreate(ns), []);
  assert.deepEqual(fields(namespaces.validateCreate(created(namespaces, { metadata: { name: "a.b" } }))), [
    "metadata.name",
  ]);
  assert.equal(namespaces.verbs.includes("deletecollection"), false);
  assert.deepEqual(namespaces.tableRow(ns, NOW), ["team-a", "Active", "60m"]);

  const node = created(nodes, {
    metadata: {
      name: "node-1",
      creationTimestamp: CREATED,
      labels: { "node-role.kubernetes.io/control-plane": "" },
    },
    spec: { unschedulable: true },
    status: {
      conditions: [{ type: "Ready", status: "True" }],
      addresses: [{ type: "InternalIP", address: "127.0.0.1" }],
      nodeInfo: { kubeletVersion: "v1.33.0" },
    },
  });
  assert.deepEqual(nodes.tableRow(node, NOW), [
    "node-1",
    "Ready,SchedulingDisabled",
    "control-plane",
    "60m",
    "v1.33.0",
    "127.0.0.1",
    "<none>",
    "<unknown>",
    "<unknown>",
    "<unknown>",
  ]);
  assert.equal(nodes.fieldSelectors["spec.unschedulable"]?.(node), "true");
  assert.deepEqual(nodes.shortNames, ["no"]);
});

const pod = () =>
  created(pods, {
    metadata: { name: "web", namespace: "default", creationTimestamp: CREATED },
    spec: {
      containers: [{ name: "app", image: "busybox", volumeMounts: [{ name: "data", mountPath: "/data" }] }],
      volumes: [{ name: "data", persistentVolumeClaim: { claimName: "data" } }],
    },
  });

test("pods: defaults, validation, update rules, grace, printing", () => {
  const p = pod();
  const spec = p.spec as Record<string, unknown>;
  assert.equal(spec.restartPolicy, "Always");
  assert.equal(spec.dnsPolicy, "ClusterFirst");
  assert.equal(spec.schedulerName, "default-scheduler");
  assert.equal(spec.terminationGracePeriodSeconds, 30);
  assert.equal(spec.serviceAccountName, "default");
  const container = (spec.containers as Record<string, unknown>[])[0];
  assert.equal(container?.terminationMessagePath, "/dev/termination-log");
  assert.equal(container?.imagePullPolicy, "Always");
  assert.equal((p.status as Record<string, unknown>).phase, "Pending");
  assert.equal((p.status as Record<string, unknown>).qosClass, "BestEffort");
  assert.deepEqual(spec.tolerations, [
    { key: "node.kubernetes.io/not-ready", operator: "Exists", effect: "NoExecute", tolerationSeconds: 300 },
    {
      key: "node.kubernetes.io/unreachable",
      operator: "Exists",
      effect: "NoExecute",
      tolerationSeconds: 300,
    },
  ]);
  assert.deepEqual(pods.validateCreate(p), []);
  const guaranteed = created(pods, {
    metadata: { name: "g", namespace: "default" },
    spec: { containers: [{ name: "a", image: "b", resources: { limits: { cpu: "1", memory: "1Gi" } } }] },
  });
  assert.equal((guaranteed.status as Record<string, unknown>).qosClass, "Guaranteed");
  assert.deepEqual((guaranteed.spec as { containers: { resources: unknown }[] }).containers[0]?.resources, {
    limits: { cpu: "1", memory: "1Gi" },
    requests: { cpu: "1", memory: "1Gi" },
  });
  const burstable = created(pods, {
    metadata: { name: "b", namespace: "default" },
    spec: { containers: [{ name: "a", image: "b", resources: { requests: { memory: "1Gi" } } }] },
  });
  assert.equal((burstable.status as Record<string, unknown>).qosClass, "Burstable");
  assert.deepEqual(pods.categories, ["all"]);

  assert.deepEqual(fields(pods.validateCreate(setAt(p, "spec.containers", []))), ["spec.containers"]);
  const missingVolume = pods.validateCreate(setAt(p, "spec.volumes", undefined));
  assert.deepEqual(fields(missingVolume), ["spec.containers[0].volumeMounts[0].name"]);
  assert.equal(missingVolume[0]?.message, 'Not found: "data"');
  // mountPropagation: a known mode; Bidirectional only for a privileged container (upstream's messages).
  const propagated = (mode: string, privileged?: boolean) => {
    const copy = structuredClone(p);
    const container = (copy.spec as { containers: Record<string, unknown>[] }).containers[0]!;
    (container.volumeMounts as Record<string, unknown>[])[0]!.mountPropagation = mode;
    if (privileged !== undefined) container.securityContext = { privileged };
    return pods.validateCreate(copy);
  };
  const propagation = "spec.containers[0].volumeMounts[0].mountPropagation";
  const bidirectional = propagated("Bidirectional");
  assert.deepEqual(fields(bidirectional), [propagation]);
  assert.equal(
    bidirectional[0]?.message,
    "Forbidden: Bidirectional mount propagation is available only to privileged containers",
  );
  assert.deepEqual(fields(propagated("Bidirectional", false)), [propagation]);
  assert.deepEqual(propagated("Bidirectional", true), []);
  assert.deepEqual(propagated("HostToContainer"), []);
  assert.deepEqual(propagated("None"), []);
  assert.equal(
    propagated("rshared")[0]?.message,
    'Unsupported value: "rshared": supported values: "Bidirectional", "HostToContainer", "None"',
  );
  assert.deepEqual(fields(pods.validateCreate(setAt(p, "spec.restartPolicy", "Sometimes"))), [
    "spec.restartPolicy",
  ]);

  assert.deepEqual(
    pods.validateUpdate(setAt(p, "spec.containers", [{ ...container, image: "busybox:2" }]), p),
    [],
  );
  const moved = pods.validateUpdate(setAt(p, "spec.nodeName", "node-2"), p);
  assert.deepEqual(fields(moved), ["spec"]);
  assert.match(moved[0]?.message ?? "", /^Forbidden: pod updates may not change fields other than/);

  assert.equal(pods.deleteGracePeriod?.(p, undefined), 0, "unscheduled pods go at once");
  const scheduled = setAt(p, "spec.nodeName", "node-1");
  assert.equal(pods.deleteGracePeriod?.(scheduled, undefined), 30);
  assert.equal(pods.deleteGracePeriod?.(scheduled, 0), 0);

  const running = setAt(setAt(scheduled, "status.phase", "Running"), "status.containerStatuses", [
    { name: "app", ready: true, restartCount: 2 },
  ]);
  assert.deepEqual(pods.tableRow(running, NOW), [
    "web",
    "1/1",
    "Running",
    "2",
    "60m",
    "<none>",
    "node-1",
    "<none>",
    "<none>",
  ]);
  assert.equal(pods.tableRow(setAt(running, "metadata.deletionTimestamp", CREATED), NOW)[2], "Terminating");
  assert.equal(pods.fieldSelectors["spec.nodeName"]?.(running), "node-1");
  assert.equal(pods.fieldSelectors["status.phase"]?.(running), "Running");
  assert.deepEqual(pods.patchStrategies["spec.containers"], { mergeKey: "name" });
  assert.deepEqual(pods.patchStrategies["spec.containers[].volumeMounts"], { mergeKey: "mountPath" });
  assert.deepEqual(pods.patchStrategies["metadata.finalizers"], { merge: "set" });
});

test("secrets, configmaps, serviceaccounts", () => {
  const secret = created(secrets, {
    metadata: { name: "creds", namespace: "default", creationTimestamp: CREATED },
    stringData: { password: "hunter2" },
  });
  assert.equal(secret.type, "Opaque");
  assert.deepEqual(secret.data, { password: Buffer.from("hunter2").toString("base64") });
  assert.equal(secret.stringData, undefined);
  assert.deepEqual(secrets.validateCreate(secret), []);
  assert.deepEqual(fields(secrets.validateCreate(setAt(secret, "data", { "bad key": "eA==" }))), [
    "data[bad key]",
  ]);
  assert.deepEqual(fields(secrets.validateCreate(setAt(secret, "type", "kubernetes.io/tls"))), [
    "data[tls.crt]",
    "data[tls.key]",
  ]);
  assert.deepEqual(fields(secrets.validateUpdate(setAt(secret, "type", "Other"), secret)), ["type"]);
  const frozen = setAt(secret, "immutable", true);
  assert.deepEqual(fields(secrets.validateUpdate(setAt(frozen, "data", {}), frozen)), ["data"]);
  assert.equal(secrets.fieldSelectors.type?.(secret), "Opaque");
  assert.deepEqual(secrets.tableRow(secret, NOW), ["creds", "Opaque", 1, "60m"]);

  const cm = created(configMaps, {
    metadata: { name: "cfg", namespace: "default", creationTimestamp: CREATED },
    data: { a: "1" },
    binaryData: { a: "eA==" },
  });
  assert.deepEqual(fields(configMaps.validateCreate(cm)), ["data[a]"]);
  assert.deepEqual(configMaps.shortNames, ["cm"]);
  assert.deepEqual(configMaps.tableRow(cm, NOW), ["cfg", 2, "60m"]);

  const sa = created(serviceAccounts, {
    metadata: { name: "default", namespace: "default", creationTimestamp: CREATED },
  });
  assert.deepEqual(serviceAccounts.tableRow(sa, NOW), ["default", 0, "60m"]);
  assert.deepEqual(serviceAccounts.shortNames, ["sa"]);
});

test("events: namespace rule, field selectors, printer", () => {
  const event = created(coreEvents, {
    metadata: { name: "data.1", namespace: "default" },
    involvedObject: { kind: "PersistentVolumeClaim", namespace: "default", name: "data", uid: "u1" },
    reason: "ProvisioningSucceeded",
    message: "Successfully provisioned volume pvc-1 ",
    source: { component: "hostpath.csi.k8s.io_external-provisioner" },
    firstTimestamp: "2026-01-01T00:50:00Z",
    lastTimestamp: "2026-01-01T00:59:00Z",
    count: 3,
    type: "Normal",
  });
  assert.deepEqual(coreEvents.validateCreate(event), []);
  assert.deepEqual(fields(coreEvents.validateCreate(setAt(event, "involvedObject.namespace", "other"))), [
    "involvedObject.namespace",
  ]);
  // events about cluster-scoped objects live in "default"
  assert.deepEqual(coreEvents.validateCreate(setAt(event, "involvedObject.namespace", undefined)), []);
  assert.equal(coreEvents.fieldSelectors["involvedObject.name"]?.(event), "data");
  assert.equal(coreEvents.fieldSelectors.source?.(event), "hostpath.csi.k8s.io_external-provisioner");
  assert.deepEqual(coreEvents.tableRow(event, NOW), [
    "60s",
    "Normal",
    "ProvisioningSucceeded",
    "persistentvolumeclaim/data",
    "",
    "hostpath.csi.k8s.io_external-provisioner",
    "Successfully provisioned volume pvc-1",
    "10m",
    3,
    "data.1",
  ]);
  assert.deepEqual(
    coreEvents.tableColumns.filter((c) => c.priority === 0).map((c) => c.name),
    ["Last Seen", "Type", "Reason", "Object", "Message"],
  );

  const v1 = created(eventsV1, {
    metadata: { name: "e", namespace: "default" },
    eventTime: "2026-01-01T00:59:30.000000Z",
    reportingController: "csikit/pv-controller",
    reportingInstance: "pv-controller-1",
    action: "Binding",
    reason: "WaitForFirstConsumer",
    regarding: { kind: "PersistentVolumeClaim", namespace: "default", name: "data" },
    note: "waiting for first consumer",
    type: "Normal",
  });
  assert.deepEqual(eventsV1.validateCreate(v1), []);
  assert.deepEqual(fields(eventsV1.validateCreate(setAt(v1, "reportingController", undefined))), [
    "reportingController",
  ]);
  assert.equal(eventsV1.tableRow(v1, NOW)[0], "30s");
  assert.equal(eventsV1.fieldSelectors["regarding.name"]?.(v1), "data");
});

test("leases", () => {
  const lease = created(leases, {
    metadata: {
      name: "external-attacher-leader-hostpath-csi-k8s-io",
      namespace: "kube-system",
      creationTimestamp: CREATED,
    },
    spec: {
      holderIdentity: "attacher-1",
      leaseDurationSeconds: 15,
      renewTime: "2026-01-01T00:59:59.000000Z",
    },
  });
  assert.deepEqual(leases.validateCreate(lease), []);
  assert.deepEqual(fields(leases.validateCreate(setAt(lease, "spec.leaseDurationSeconds", 0))), [
    "spec.leaseDurationSeconds",
  ]);
  assert.deepEqual(leases.tableRow(lease, NOW), [
    "external-attacher-leader-hostpath-csi-k8s-io",
    "attacher-1",
    "60m",
  ]);
});

test("quantities are stored in canonical form; generation and create-status flags", () => {
  const claim = created(persistentVolumeClaims, {
    metadata: { name: "c", namespace: "default" },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1024Mi" }, limits: { storage: 2147483648 } },
    },
  });
  assert.deepEqual((claim.spec as { resources: unknown }).resources, {
    requests: { storage: "1Gi" },
    limits: { storage: "2147483648" },
  });
  const malformed = created(persistentVolumeClaims, {
    metadata: { name: "c", namespace: "default" },
    spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "lots" } } },
  });
  assert.deepEqual(fields(persistentVolumeClaims.validateCreate(malformed)), ["spec.resources[storage]"]);
  const volume = created(persistentVolumes, {
    metadata: { name: "pv" },
    spec: {
      capacity: { storage: "1.5Gi" },
      accessModes: ["ReadWriteOnce"],
      csi: { driver: "d.example.com", volumeHandle: "h" },
    },
  });
  assert.equal((volume.spec as { capacity: { storage: string } }).capacity.storage, "1536Mi");
  assert.equal(nodes.keepStatusOnCreate, true);
  assert.equal(pods.keepStatusOnCreate, undefined);
  assert.equal(persistentVolumeClaims.tracksGeneration, false);
});

test("events convert between core/v1 and events.k8s.io/v1 shapes both ways", async () => {
  const { coreEventFromEventsV1, eventsV1FromCoreEvent } = await import("./events.ts");
  const v1: KubeObject = {
    apiVersion: "events.k8s.io/v1",
    kind: "Event",
    metadata: { name: "e", namespace: "default" },
    eventTime: "2026-01-01T00:00:00.000000Z",
    regarding: { kind: "Pod", name: "p", namespace: "default" },
    note: "hello",
    reportingController: "c",
    reportingInstance: "i",
    deprecatedCount: 2,
    deprecatedSource: { component: "old" },
    reason: "R",
    action: "A",
    type: "Normal",
  };
  const core = coreEventFromEventsV1(v1);
  assert.equal(core.apiVersion, "v1");
  assert.deepEqual(core.involvedObject, { kind: "Pod", name: "p", namespace: "default" });
  assert.equal(core.message, "hello");
  assert.equal(core.reportingComponent, "c");
  assert.equal(core.count, 2);
  assert.deepEqual(core.source, { component: "old" });
  assert.equal(core.regarding, undefined);
  assert.deepEqual(coreEvents.validateCreate(core), []);
  assert.deepEqual(eventsV1FromCoreEvent(core), v1);
});
