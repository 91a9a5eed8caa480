// A test's own resources and the steps its body takes with them, in the shape of upstream's
// storage framework: a namespace per test (`e2e-<suite>-<random>`), a StorageClass per test made
// from the driver's class source (FromName, FromExistingClassName, FromFile) and the pattern (its
// fsType, binding mode, expansion), claims in the pattern's volume mode, a volume per pattern
// (dynamic claim, generic ephemeral, CSI inline: upstream's CreateVolumeResource), pods using them
// (a busybox-style `sh -c`), bounded waits, exec through the API server (pods/exec, as `kubectl
// exec`), and a cleanup that deletes what the test made — pods, snapshots, claims and their
// volumes, the cluster-scoped objects — and waits, bounded, until each is gone, so the volumes are
// released before the next test.

import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import {
  GVR,
  type GroupVersionKindResource,
  type Namespace,
  type PersistentVolume,
  type PersistentVolumeAccessMode,
  type PersistentVolumeClaim,
  type Pod,
  type StorageClass,
} from "../api/index.ts";
import { CsikitError, errorMessage } from "../base/index.ts";
import { pollUntil } from "../cluster/index.ts";
import { execInPod, isNotFound, type ExecResult, type KubeClient, type KubeObject } from "../kube/index.ts";
import type { DriverDefinition, Suite, TestPattern, TimeoutKey } from "./catalogue/index.ts";
import { claimSize, E2eCheckError, type E2eTimeouts } from "./model.ts";

export { E2eCheckError };

/** Where test pods mount (or map, for a block volume) their first volume: /mnt/volume1, … */
export const MOUNT_PATH = "/mnt/volume1";
export const mountPath = (index: number): string => `/mnt/volume${index + 1}`;

/** The StorageClass parameter a CSI provisioner reads the file system type from. */
export const FSTYPE_PARAMETER = "csi.storage.k8s.io/fstype";

/** A DNS-1123 label: lowercase, digits and '-', at most 63 characters. */
export function namespaceName(suite: string): string {
  const stem =
    suite
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 40) || "test";
  return `e2e-${stem}-${randomBytes(3).toString("hex").slice(0, 5)}`;
}

type Spec<T> = Omit<T, "apiVersion" | "kind" | "metadata">;
type VolumeSource = Omit<NonNullable<NonNullable<Pod["spec"]>["volumes"]>[number], "name">;
type Container = NonNullable<Pod["spec"]>["containers"][number];

export interface ClassOptions {
  mountOptions?: readonly string[];
  /** Default: the pattern's allowExpansion (upstream sets it on every test's class). */
  allowVolumeExpansion?: boolean;
  /** Default: the pattern's binding mode, else the class source's. */
  bindingMode?: "Immediate" | "WaitForFirstConsumer";
  allowedTopologies?: StorageClass["allowedTopologies"];
  /** Merged over the class source's parameters. */
  parameters?: Readonly<Record<string, string>>;
  reclaimPolicy?: "Delete" | "Retain";
}

export interface ClaimOptions {
  /** Default: the pattern's (Block or Filesystem; unset leaves the API's default). */
  volumeMode?: "Block" | "Filesystem";
  accessModes?: readonly PersistentVolumeAccessMode[];
  /** Default: the suite's size (claimSize). */
  size?: string;
  dataSource?: { apiGroup?: string; kind: string; name: string };
  dataSourceRef?: { apiGroup?: string; kind: string; name: string; namespace?: string };
  volumeAttributesClassName?: string;
  /** Pre-provisioned: the PV to bind to. */
  volumeName?: string;
}

/** A volume in a pod: its source, and whether the container maps it as a device (Block). */
export interface PodVolume {
  source: VolumeSource;
  block?: boolean;
  /** Default mountPath(index). */
  path?: string;
  readOnly?: boolean;
  subPath?: string;
}

export interface PodOptions {
  volumes?: readonly PodVolume[];
  /** The shell command the container runs (`sh -c <command>`); default: wait to be deleted. */
  command?: string;
  /** Name (default "pod-<n>"). */
  name?: string;
  /** Pin the pod to this node (scheduled there through node affinity, as upstream's NodeSelection). */
  node?: string;
  /** Keep the pod off these nodes (anti-affinity on the hostname label). */
  avoidNodes?: readonly string[];
  /** Any further change to the pod before it is created. */
  mutate?: (pod: Pod) => void;
}

/** What upstream's CreateVolumeResource makes for a pattern: the pod's volume source and its parts. */
export interface VolumeResource {
  source: VolumeSource;
  block: boolean;
  className?: string;
  claimName?: string;
}

export class TestNamespace {
  readonly name: string;
  readonly #client: KubeClient;
  readonly #driver: DriverDefinition;
  readonly #suite: Suite;
  readonly #pattern: TestPattern;
  readonly #timeouts: E2eTimeouts;
  readonly #image: string;
  readonly #signal: AbortSignal;
  /** Cluster-scoped objects this test made, deleted by cleanup() in reverse order. */
  readonly #clusterObjects: { gvr: GroupVersionKindResource; name: string }[] = [];
  #count = 0;

  constructor(
    client: KubeClient,
    options: {
      suite: Suite;
      driver: DriverDefinition;
      pattern: TestPattern;
      timeouts: E2eTimeouts;
      image: string;
      signal: AbortSignal;
    },
  ) {
    this.#client = client;
    this.name = namespaceName(options.suite.name);
    this.#driver = options.driver;
    this.#suite = options.suite;
    this.#pattern = options.pattern;
    this.#timeouts = options.timeouts;
    this.#image = options.image;
    this.#signal = options.signal;
  }

  get client(): KubeClient {
    return this.#client;
  }

  /** The size this suite's claims ask for. */
  get claimSize(): string {
    return claimSize(this.#driver, this.#suite.minSize);
  }

  async create(): Promise<void> {
    await this.#client.create<Namespace>(
      GVR.namespaces,
      {
        apiVersion: "v1",
        kind: "Namespace",
        metadata: { name: this.name, labels: { "e2e-framework": "csikit" } },
      },
      this.#signal,
    );
  }

  /** A fresh name for an object of this test: "<kind>-<n>". */
  nextName(kind: string): string {
    this.#count++;
    return `${kind}-${this.#count}`;
  }

  /** A cluster-scoped name unique to this test: "<namespace>-<kind><n>". */
  clusterName(kind: string): string {
    this.#count++;
    return `${this.name}-${kind}${this.#count}`;
  }

  /** Creates an object; a cluster-scoped one is deleted by cleanup() (namespaced ones go with the namespace). */
  async createObject<T extends KubeObject>(gvr: GroupVersionKindResource, object: T): Promise<T> {
    const created = await this.#client.create<T>(gvr, object, this.#signal);
    if (!gvr.namespaced) this.#clusterObjects.push({ gvr, name: created.metadata?.name ?? "" });
    return created;
  }

  /** The driver's class (its source in the test driver file), without metadata. */
  async driverClassSpec(): Promise<Spec<StorageClass>> {
    const source = this.#driver.StorageClass;
    if (source.FromName) return { provisioner: this.#driver.DriverInfo.Name };
    if (source.FromExistingClassName !== "") {
      const {
        apiVersion: _a,
        kind: _k,
        metadata: _m,
        ...rest
      } = await this.#client.get<StorageClass>(GVR.storageClasses, source.FromExistingClassName);
      return rest;
    }
    if (source.FromFile !== "") {
      const manifest = parseYaml(await readFile(source.FromFile, "utf8")) as StorageClass | null;
      if (manifest?.kind !== "StorageClass")
        throw new CsikitError(
          "CSIKIT_ERR_E2E_DRIVER",
          `StorageClass.FromFile ${source.FromFile}: not a StorageClass manifest (kind ${JSON.stringify(manifest?.kind)})`,
        );
      const { apiVersion: _a, kind: _k, metadata: _m, ...rest } = manifest;
      return rest;
    }
    throw new CsikitError(
      "CSIKIT_ERR_E2E_DRIVER",
      `the test driver of ${this.#driver.DriverInfo.Name} sets no StorageClass source (FromName, FromExistingClassName or FromFile)`,
    );
  }

  /** A StorageClass for this test, from the driver's class source and the pattern. */
  async createClass(options: ClassOptions = {}): Promise<StorageClass> {
    const spec = await this.driverClassSpec();
    const parameters = {
      ...spec.parameters,
      ...(this.#pattern.fsType !== "" ? { [FSTYPE_PARAMETER]: this.#pattern.fsType } : {}),
      ...options.parameters,
    };
    const bindingMode =
      options.bindingMode ?? (this.#pattern.bindingMode !== "" ? this.#pattern.bindingMode : undefined);
    const mountOptions = options.mountOptions ?? spec.mountOptions;
    return this.createObject<StorageClass>(GVR.storageClasses, {
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name: this.clusterName("sc") },
      ...spec,
      ...(Object.keys(parameters).length > 0 ? { parameters } : {}),
      reclaimPolicy: options.reclaimPolicy ?? "Delete",
      allowVolumeExpansion: options.allowVolumeExpansion ?? this.#pattern.allowExpansion,
      ...(bindingMode !== undefined ? { volumeBindingMode: bindingMode } : {}),
      ...(mountOptions && mountOptions.length > 0 ? { mountOptions: [...mountOptions] } : {}),
      ...(options.allowedTopologies ? { allowedTopologies: options.allowedTopologies } : {}),
    });
  }

  /** The claim spec a test asks for, with the pattern's volume mode. */
  claimSpec(className: string, options: ClaimOptions = {}): NonNullable<PersistentVolumeClaim["spec"]> {
    const volumeMode =
      options.volumeMode ?? (this.#pattern.volMode !== "" ? this.#pattern.volMode : undefined);
    return {
      accessModes: [...(options.accessModes ?? ["ReadWriteOnce"])],
      storageClassName: className,
      resources: { requests: { storage: options.size ?? this.claimSize } },
      ...(volumeMode ? { volumeMode } : {}),
      ...(options.dataSource ? { dataSource: options.dataSource } : {}),
      ...(options.dataSourceRef ? { dataSourceRef: options.dataSourceRef } : {}),
      ...(options.volumeAttributesClassName
        ? { volumeAttributesClassName: options.volumeAttributesClassName }
        : {}),
      ...(options.volumeName ? { volumeName: options.volumeName } : {}),
    };
  }

  async createClaim(className: string, options: ClaimOptions = {}): Promise<PersistentVolumeClaim> {
    return this.#client.create<PersistentVolumeClaim>(
      GVR.persistentVolumeClaims,
      {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        metadata: { name: this.nextName("pvc"), namespace: this.name },
        spec: this.claimSpec(className, options),
      },
      this.#signal,
    );
  }

  /**
   * The pattern's volume (upstream's CreateVolumeResource): a dynamic claim of a class made for
   * the test, a generic ephemeral volume of such a class, or a CSI inline volume with the driver's
   * first InlineVolumes attributes.
   */
  async createVolume(options: { class?: ClassOptions; claim?: ClaimOptions } = {}): Promise<VolumeResource> {
    const block = (options.claim?.volumeMode ?? this.#pattern.volMode) === "Block";
    switch (this.#pattern.volType) {
      case "DynamicPV": {
        const storageClass = await this.createClass(options.class);
        const className = storageClass.metadata?.name ?? "";
        const claim = await this.createClaim(className, options.claim);
        const claimName = claim.metadata?.name ?? "";
        return { source: { persistentVolumeClaim: { claimName } }, block, className, claimName };
      }
      case "GenericEphemeralVolume": {
        const storageClass = await this.createClass(options.class);
        const className = storageClass.metadata?.name ?? "";
        return {
          source: { ephemeral: { volumeClaimTemplate: { spec: this.claimSpec(className, options.claim) } } },
          block,
          className,
        };
      }
      case "CSIInlineVolume": {
        const inline = this.#driver.InlineVolumes[0];
        return {
          source: {
            csi: {
              driver: this.#driver.DriverInfo.Name,
              ...(inline?.ReadOnly ? { readOnly: true } : {}),
              volumeAttributes: { ...inline?.Attributes },
            },
          },
          block: false,
        };
      }
      default:
        throw new CsikitError(
          "CSIKIT_ERR_E2E_PATTERN",
          `csikit e2e makes no ${this.#pattern.volType} volumes (an external driver's are dynamic)`,
        );
    }
  }

  /** A pod's volume for a claim (Block when `block`). */
  static claimVolume(claimName: string, options: Omit<PodVolume, "source"> = {}): PodVolume {
    return { source: { persistentVolumeClaim: { claimName } }, ...options };
  }

  /** Waits (bounded by ClaimProvision) until the claim is Bound and returns its volume. */
  async waitBound(claim: string): Promise<PersistentVolume> {
    const bound = await this.waitFor(
      `claim ${this.name}/${claim} to be Bound`,
      "ClaimProvision",
      async () => {
        const c = await this.getClaim(claim);
        return c.status?.phase === "Bound" ? c : undefined;
      },
    );
    return this.#client.get<PersistentVolume>(GVR.persistentVolumes, bound.spec?.volumeName ?? "");
  }

  async getClaim(claim: string): Promise<PersistentVolumeClaim> {
    return this.#client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, claim, {
      namespace: this.name,
    });
  }

  async getPod(pod: string): Promise<Pod> {
    return this.#client.get<Pod>(GVR.pods, pod, { namespace: this.name });
  }

  /** Polls `probe` until it returns a value, bounded by the named timeout (or ms). */
  async waitFor<T>(
    what: string,
    timeout: TimeoutKey | number,
    probe: () => Promise<T | undefined | false>,
    intervalMs = 250,
  ): Promise<T> {
    const ms = typeof timeout === "number" ? timeout : this.#timeouts[timeout];
    return pollUntil(what, ms, this.#signal, probe, intervalMs);
  }

  /** A pod running `sh -c <command>` with the volumes mounted (or mapped) at /mnt/volume<n>. */
  async createPod(options: PodOptions = {}): Promise<Pod> {
    const volumes = options.volumes ?? [];
    // `exec` so the shell's sleep gets the SIGTERM of the pod's deletion itself and ends at once.
    const container: Container = {
      name: "volume-tester",
      image: this.#image,
      command: ["sh", "-c", options.command ?? "exec sleep 3600"],
    };
    const mounts = volumes
      .map((volume, index) => ({ volume, index }))
      .filter(({ volume }) => volume.block !== true)
      .map(({ volume, index }) => ({
        name: `volume${index + 1}`,
        mountPath: volume.path ?? mountPath(index),
        ...(volume.readOnly ? { readOnly: true } : {}),
        ...(volume.subPath !== undefined ? { subPath: volume.subPath } : {}),
      }));
    const devices = volumes
      .map((volume, index) => ({ volume, index }))
      .filter(({ volume }) => volume.block === true)
      .map(({ volume, index }) => ({
        name: `volume${index + 1}`,
        devicePath: volume.path ?? mountPath(index),
      }));
    if (mounts.length > 0) container.volumeMounts = mounts;
    if (devices.length > 0) container.volumeDevices = devices;
    const affinity =
      options.node !== undefined || (options.avoidNodes?.length ?? 0) > 0
        ? {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [
                  {
                    matchExpressions: [
                      ...(options.node !== undefined
                        ? [{ key: "kubernetes.io/hostname", operator: "In", values: [options.node] }]
                        : []),
                      ...((options.avoidNodes?.length ?? 0) > 0
                        ? [
                            {
                              key: "kubernetes.io/hostname",
                              operator: "NotIn",
                              values: [...options.avoidNodes!],
                            },
                          ]
                        : []),
                    ],
                  },
                ],
              },
            },
          }
        : undefined;
    const pod: Pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: options.name ?? this.nextName("pod"), namespace: this.name },
      spec: {
        restartPolicy: "Never",
        terminationGracePeriodSeconds: 5,
        containers: [container],
        ...(volumes.length > 0
          ? { volumes: volumes.map((volume, index) => ({ name: `volume${index + 1}`, ...volume.source })) }
          : {}),
        ...(affinity ? { affinity } : {}),
      },
    };
    options.mutate?.(pod);
    return this.#client.create<Pod>(GVR.pods, pod, this.#signal);
  }

  /** Waits (bounded by PodStart) until the pod is Running; a pod that ends first fails the wait. */
  async waitRunning(pod: string): Promise<Pod> {
    // pollUntil takes a throw for "not yet": an ended pod is returned and failed here instead.
    const seen = await this.waitFor(`pod ${this.name}/${pod} to be Running`, "PodStart", async () => {
      const p = await this.getPod(pod);
      const phase = p.status?.phase;
      return phase === "Running" || phase === "Failed" || phase === "Succeeded" ? p : undefined;
    });
    const phase = seen.status?.phase;
    if (phase !== "Running")
      throw new E2eCheckError(
        `pod ${this.name}/${pod} ended (${phase}) before it was seen Running: ${seen.status?.message ?? seen.status?.reason ?? "no message"}`,
      );
    return seen;
  }

  /** Waits (bounded by PodStart) until the pod ended; returns it (phase Succeeded or Failed). */
  async waitEnded(pod: string): Promise<Pod> {
    return this.waitFor(`pod ${this.name}/${pod} to end`, "PodStart", async () => {
      const p = await this.getPod(pod);
      return p.status?.phase === "Succeeded" || p.status?.phase === "Failed" ? p : undefined;
    });
  }

  /** Creates the pod and waits until it is Running; returns its name. */
  async runPod(options: PodOptions = {}): Promise<string> {
    const pod = await this.createPod(options);
    const name = pod.metadata?.name ?? "";
    await this.waitRunning(name);
    return name;
  }

  /** Runs `sh -c <script>` in the pod through the API server (pods/exec). */
  async exec(pod: string, script: string, stdin?: string): Promise<ExecResult> {
    return execInPod(this.#client, this.name, pod, ["sh", "-c", script], {
      timeoutMs: this.#timeouts.Exec,
      signal: this.#signal,
      ...(stdin !== undefined ? { stdin } : {}),
    });
  }

  /** exec that must exit 0; returns its stdout. */
  async execOk(pod: string, script: string, stdin?: string): Promise<string> {
    const result = await this.exec(pod, script, stdin);
    if (result.code !== 0)
      throw new E2eCheckError(
        `in pod ${pod}: sh -c ${JSON.stringify(script)} exited ${result.code}: ${result.stderr.trim() || result.stdout.trim()}`,
      );
    return result.stdout;
  }

  /** Deletes the pod (force: grace period 0, as `kubectl delete --force`) and waits until it is gone. */
  async deletePod(pod: string, options: { force?: boolean; wait?: boolean } = {}): Promise<void> {
    try {
      await this.#client.delete(GVR.pods, pod, {
        namespace: this.name,
        ...(options.force ? { gracePeriodSeconds: 0 } : {}),
      });
    } catch (error) {
      if (isNotFound(error)) return;
      throw error;
    }
    if (options.wait !== false) await this.waitGone(GVR.pods, pod, this.name);
  }

  /** Deletes an object and waits (bounded) until it is gone. */
  async deleteAndWait(gvr: GroupVersionKindResource, name: string, namespace?: string): Promise<void> {
    const where = namespace !== undefined ? { namespace } : {};
    try {
      await this.#client.delete(gvr, name, where);
    } catch (error) {
      if (isNotFound(error)) return;
      throw error;
    }
    await this.waitGone(gvr, name, namespace);
  }

  async waitGone(gvr: GroupVersionKindResource, name: string, namespace?: string): Promise<void> {
    const where = namespace !== undefined ? { namespace } : {};
    const ms = this.#timeouts.PodDelete;
    // Its own signal: cleanup runs after an abort too, still bounded.
    await pollUntil(
      `${gvr.resource} ${namespace ? `${namespace}/` : ""}${name} to be deleted`,
      ms,
      AbortSignal.timeout(ms + 1000),
      async () => {
        try {
          await this.#client.get(gvr, name, where);
          return false;
        } catch (error) {
          if (isNotFound(error)) return true;
          throw error;
        }
      },
      250,
    );
  }

  async #names(gvr: GroupVersionKindResource): Promise<string[]> {
    try {
      const list = await this.#client.list<KubeObject>(gvr, { namespace: this.name });
      return list.items.map((item) => item.metadata?.name ?? "").filter((n) => n !== "");
    } catch (error) {
      // A cluster without the snapshot CRDs has nothing of them to clean up.
      if (isNotFound(error)) return [];
      throw error;
    }
  }

  /**
   * Deletes everything the test made: pods first (the volumes are unpublished), snapshots, then
   * claims (a Delete-policy volume is deleted by the provisioner: its PV is awaited, proving the
   * driver released it; a Retain one's PV is deleted here), the cluster-scoped objects newest
   * first and the namespace. Runs even after an abort; every wait is bounded.
   */
  async cleanup(): Promise<void> {
    const errors: string[] = [];
    const attempt = async (what: string, step: () => Promise<void>): Promise<void> => {
      try {
        await step();
      } catch (error) {
        errors.push(`${what}: ${errorMessage(error)}`);
      }
    };
    await attempt("pods", async () => {
      await Promise.all(
        (await this.#names(GVR.pods)).map((pod) => this.deleteAndWait(GVR.pods, pod, this.name)),
      );
    });
    await attempt("snapshots", async () => {
      await Promise.all(
        (await this.#names(GVR.volumeSnapshots)).map((snapshot) =>
          this.deleteAndWait(GVR.volumeSnapshots, snapshot, this.name),
        ),
      );
    });
    await attempt("claims", async () => {
      const claims = await this.#client.list<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
        namespace: this.name,
      });
      await Promise.all(
        claims.items.map(async (claim) => {
          await this.deleteAndWait(GVR.persistentVolumeClaims, claim.metadata?.name ?? "", this.name);
          const volume = claim.spec?.volumeName;
          if (!volume) return;
          let pv: PersistentVolume;
          try {
            pv = await this.#client.get<PersistentVolume>(GVR.persistentVolumes, volume);
          } catch (error) {
            if (isNotFound(error)) return;
            throw error;
          }
          if (pv.spec?.persistentVolumeReclaimPolicy === "Delete")
            await this.waitGone(GVR.persistentVolumes, volume);
          else await this.deleteAndWait(GVR.persistentVolumes, volume);
        }),
      );
    });
    for (const { gvr, name } of [...this.#clusterObjects].reverse())
      await attempt(`${gvr.resource} ${name}`, () => this.deleteAndWait(gvr, name));
    await attempt("namespace", () => this.deleteAndWait(GVR.namespaces, this.name));
    if (errors.length > 0) throw new CsikitError("CSIKIT_ERR_E2E_CLEANUP", errors.join("; "));
  }
}
