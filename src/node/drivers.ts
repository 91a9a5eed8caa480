// The registered CSI drivers of this node (the kubelet's csiDrivers map): name → endpoint, a
// CSI client and the node capabilities learned at registration. Volume operations look a
// driver up here; a missing driver is an error in the kubelet's words, retried with backoff.

import { CsikitError } from "../base/index.ts";
import { CsiClient, type CsiClientOptions } from "../csi/index.ts";

export interface RegisteredDriver {
  name: string;
  endpoint: string;
  /** The registration socket it came from (deregistered when that socket goes). */
  socketPath: string;
  client: CsiClient;
  /** Node RPC capabilities (STAGE_UNSTAGE_VOLUME, GET_VOLUME_STATS, EXPAND_VOLUME, ...). */
  nodeCapabilities: ReadonlySet<string>;
}

export class DriverRegistry {
  readonly #drivers = new Map<string, RegisteredDriver>();
  readonly #listeners = new Set<(name: string) => void>();
  readonly #clientOptions: CsiClientOptions;

  constructor(clientOptions: CsiClientOptions) {
    this.#clientOptions = clientOptions;
  }

  connect(endpoint: string): CsiClient {
    return CsiClient.connect(endpoint, this.#clientOptions);
  }

  /** Called with the driver's name whenever one is added or removed. */
  onChange(listener: (name: string) => void): void {
    this.#listeners.add(listener);
  }

  add(driver: RegisteredDriver): void {
    const previous = this.#drivers.get(driver.name);
    if (previous && previous.client !== driver.client) previous.client.close();
    this.#drivers.set(driver.name, driver);
    for (const listener of this.#listeners) listener(driver.name);
  }

  remove(name: string): void {
    const previous = this.#drivers.get(name);
    if (!previous) return;
    previous.client.close();
    this.#drivers.delete(name);
    for (const listener of this.#listeners) listener(name);
  }

  get(name: string): RegisteredDriver | undefined {
    return this.#drivers.get(name);
  }

  /** The driver or the kubelet's error for an unregistered one. */
  require(name: string): RegisteredDriver {
    const driver = this.#drivers.get(name);
    if (!driver) {
      throw new CsikitError(
        "CSIKIT_ERR_DRIVER_NOT_FOUND",
        `driver name ${name} not found in the list of registered CSI drivers`,
      );
    }
    return driver;
  }

  bySocket(socketPath: string): RegisteredDriver | undefined {
    for (const driver of this.#drivers.values()) if (driver.socketPath === socketPath) return driver;
    return undefined;
  }

  names(): string[] {
    return [...this.#drivers.keys()];
  }

  closeAll(): void {
    for (const driver of this.#drivers.values()) driver.client.close();
    this.#drivers.clear();
  }
}
