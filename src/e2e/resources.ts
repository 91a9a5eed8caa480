// A test's own resources and the helpers its steps use: a namespace per test
// (`e2e-<suite>-<random>`), a StorageClass per test naming the driver (as upstream's external
// driver makes one per test), claims from it, pods using them (a busybox-style shell command:
// `sh -c`), bounded waits for Bound and Running, exec in a pod through the API server (pods/exec,
// as `kubectl exec`), and a cleanup that deletes pods, claims, the class and the namespace and
// waits, bounded, until they are gone — so the volume is released before the next test.

import { randomBytes } from "node:crypto";
import {
  GVR,
  type Namespace,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type StorageClass,
} from "../api/index.ts";
import { CsikitError, errorMessage } from "../base/index.ts";
import { pollUntil } from "../cluster/index.ts";
import { execInPod, isNotFound, type ExecResult, type KubeClient } from "../kube/index.ts";
import type { E2eDriver, E2eTimeouts } from "./model.ts";

/** Where test pods mount their volume. */
export const MOUNT_PATH = "/mnt/volume1";

/** A failed check of a test (not a setup error): its message is the test's failure. */
export class E2eCheckError extends CsikitError {
  constructor(message: string) {
    super("CSIKIT_ERR_E2E_CHECK", message);
  }
}

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

export interface PodOptions {
  /** The shell command the container runs (`sh -c <command>`); default: wait to be deleted. */
  command?: string;
  /** Name suffix (default "pod-<n>"). */
  name?: string;
}

export class TestNamespace {
  readonly name: string;
  readonly #client: KubeClient;
  readonly #driver: E2eDriver;
  readonly #timeouts: E2eTimeouts;
  readonly #image: string;
  readonly #signal: AbortSignal;
  readonly #classes: string[] = [];
  #count = 0;

  constructor(
    client: KubeClient,
    options: { suite: string; driver: E2eDriver; timeouts: E2eTimeouts; image: string; signal: AbortSignal },
  ) {
    this.#client = client;
    this.name = namespaceName(options.suite);
    this.#driver = options.driver;
    this.#timeouts = options.timeouts;
    this.#image = options.image;
    this.#signal = options.signal;
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

  #next(kind: string): string {
    this.#count++;
    return `${kind}-${this.#count}`;
  }

  /**
   * A StorageClass for this test: a copy of the driver's existing class when the test driver
   * names one, else one whose provisioner is the driver. Deleted by cleanup().
   */
  async createClass(options: { mountOptions?: readonly string[] } = {}): Promise<StorageClass> {
    let spec: Omit<StorageClass, "apiVersion" | "kind" | "metadata"> = {
      provisioner: this.#driver.name,
      ...(this.#driver.classParameters ? { parameters: { ...this.#driver.classParameters } } : {}),
    };
    if (this.#driver.existingClassName !== undefined) {
      const {
        apiVersion: _a,
        kind: _k,
        metadata: _m,
        ...rest
      } = await this.#client.get<StorageClass>(GVR.storageClasses, this.#driver.existingClassName);
      spec = rest;
    }
    const name = `${this.name}-sc${this.#classes.length + 1}`;
    this.#classes.push(name);
    return this.#client.create<StorageClass>(
      GVR.storageClasses,
      {
        apiVersion: "storage.k8s.io/v1",
        kind: "StorageClass",
        metadata: { name },
        ...spec,
        reclaimPolicy: "Delete",
        ...(options.mountOptions && options.mountOptions.length > 0
          ? { mountOptions: [...options.mountOptions] }
          : {}),
      },
      this.#signal,
    );
  }

  async createClaim(className: string): Promise<PersistentVolumeClaim> {
    return this.#client.create<PersistentVolumeClaim>(
      GVR.persistentVolumeClaims,
      {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        metadata: { name: this.#next("pvc"), namespace: this.name },
        spec: {
          accessModes: ["ReadWriteOnce"],
          storageClassName: className,
          resources: { requests: { storage: this.#driver.claimSize } },
        },
      },
      this.#signal,
    );
  }

  /** Waits (bounded by ClaimProvision) until the claim is Bound and returns its volume. */
  async waitBound(claim: string): Promise<PersistentVolume> {
    const bound = await pollUntil(
      `claim ${this.name}/${claim} to be Bound`,
      this.#timeouts.claimProvisionMs,
      this.#signal,
      async () => {
        const c = await this.#client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, claim, {
          namespace: this.name,
        });
        return c.status?.phase === "Bound" ? c : undefined;
      },
      250,
    );
    return this.#client.get<PersistentVolume>(GVR.persistentVolumes, bound.spec?.volumeName ?? "");
  }

  /** A pod mounting the claim at MOUNT_PATH, running `sh -c <command>`. */
  async createPod(claim: string, options: PodOptions = {}): Promise<Pod> {
    // `exec` so the shell's sleep gets the SIGTERM of the pod's deletion itself and ends at once.
    const command = options.command ?? "exec sleep 3600";
    return this.#client.create<Pod>(
      GVR.pods,
      {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: options.name ?? this.#next("pod"), namespace: this.name },
        spec: {
          restartPolicy: "Never",
          terminationGracePeriodSeconds: 5,
          containers: [
            {
              name: "volume-tester",
              image: this.#image,
              command: ["sh", "-c", command],
              volumeMounts: [{ name: "volume1", mountPath: MOUNT_PATH }],
            },
          ],
          volumes: [{ name: "volume1", persistentVolumeClaim: { claimName: claim } }],
        },
      },
      this.#signal,
    );
  }

  /** Waits (bounded by PodStart) until the pod is Running; a pod that ends first fails the wait. */
  async waitRunning(pod: string): Promise<Pod> {
    // pollUntil takes a throw for "not yet": an ended pod is returned and failed here instead.
    const seen = await pollUntil(
      `pod ${this.name}/${pod} to be Running`,
      this.#timeouts.podStartMs,
      this.#signal,
      async () => {
        const p = await this.#client.get<Pod>(GVR.pods, pod, { namespace: this.name });
        const phase = p.status?.phase;
        return phase === "Running" || phase === "Failed" || phase === "Succeeded" ? p : undefined;
      },
      250,
    );
    const phase = seen.status?.phase;
    if (phase !== "Running")
      throw new E2eCheckError(
        `pod ${this.name}/${pod} ended (${phase}) before it was seen Running: ${seen.status?.message ?? seen.status?.reason ?? "no message"}`,
      );
    return seen;
  }

  /** Runs `sh -c <script>` in the pod through the API server (pods/exec). */
  async exec(pod: string, script: string, stdin?: string): Promise<ExecResult> {
    return execInPod(this.#client, this.name, pod, ["sh", "-c", script], {
      timeoutMs: this.#timeouts.execMs,
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

  /** Deletes the pod and waits (bounded) until it is gone: its volume is then unpublished. */
  async deletePod(pod: string): Promise<void> {
    await this.#deleteAndWait(GVR.pods, pod, this.name);
  }

  async #deleteAndWait(gvr: (typeof GVR)[keyof typeof GVR], name: string, namespace?: string): Promise<void> {
    const where = namespace !== undefined ? { namespace } : {};
    try {
      await this.#client.delete(gvr, name, where);
    } catch (error) {
      if (isNotFound(error)) return;
      throw error;
    }
    await this.#waitGone(gvr, name, namespace);
  }

  async #waitGone(gvr: (typeof GVR)[keyof typeof GVR], name: string, namespace?: string): Promise<void> {
    const where = namespace !== undefined ? { namespace } : {};
    await pollUntil(
      `${gvr.resource} ${namespace ? `${namespace}/` : ""}${name} to be deleted`,
      this.#timeouts.deleteMs,
      AbortSignal.timeout(this.#timeouts.deleteMs + 1000),
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

  /**
   * Deletes everything the test made: pods first (the volumes are unpublished), then claims (the
   * volumes deleted by the provisioner: each claim's PV is awaited too), the classes and the
   * namespace. Runs even after an abort; every wait is bounded by the delete timeout.
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
    const listed = async <T extends { metadata?: { name?: string } }>(
      gvr: (typeof GVR)[keyof typeof GVR],
    ): Promise<string[]> => {
      try {
        const list = await this.#client.list<T & Pod>(gvr, { namespace: this.name });
        return list.items.map((item) => item.metadata?.name ?? "").filter((n) => n !== "");
      } catch (error) {
        if (isNotFound(error)) return [];
        throw error;
      }
    };
    await attempt("pods", async () => {
      await Promise.all((await listed(GVR.pods)).map((pod) => this.#deleteAndWait(GVR.pods, pod, this.name)));
    });
    await attempt("claims", async () => {
      const claims = await this.#client.list<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
        namespace: this.name,
      });
      await Promise.all(
        claims.items.map(async (claim) => {
          await this.#deleteAndWait(GVR.persistentVolumeClaims, claim.metadata?.name ?? "", this.name);
          const volume = claim.spec?.volumeName;
          // Not deleted by us: the provisioner deletes a Delete-policy volume (DeleteVolume) and then
          // its PV; waiting for that proves the driver released it.
          if (volume) await this.#waitGone(GVR.persistentVolumes, volume);
        }),
      );
    });
    for (const name of this.#classes)
      await attempt(`class ${name}`, () => this.#deleteAndWait(GVR.storageClasses, name));
    await attempt("namespace", () => this.#deleteAndWait(GVR.namespaces, this.name));
    if (errors.length > 0) throw new CsikitError("CSIKIT_ERR_E2E_CLEANUP", errors.join("; "));
  }
}
