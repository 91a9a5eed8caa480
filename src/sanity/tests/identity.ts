// Identity service: GetPluginInfo's name/version rules, GetPluginCapabilities, Probe.

import { check, expectOk } from "../expect.ts";
import { describe } from "../framework.ts";
import type { SanityTest } from "../framework.ts";

/** Domain-name notation, at most 63 characters, alphanumeric at both ends (spec, GetPluginInfo). */
const PLUGIN_NAME = /^[a-zA-Z0-9](?:[a-zA-Z0-9.-]{0,61}[a-zA-Z0-9])?$/;

export function identityTests(): SanityTest[] {
  return [
    ...describe("Identity", "GetPluginInfo", {}, ({ it }) => {
      it("returns a name in domain-name notation of at most 63 characters", async (t) => {
        const info = await expectOk(t.identity.getPluginInfo({}), "GetPluginInfo");
        check(info.name !== "", "GetPluginInfo: name is empty (REQUIRED)");
        check(
          info.name.length <= 63,
          `GetPluginInfo: name ${JSON.stringify(info.name)} is longer than 63 characters`,
        );
        check(
          PLUGIN_NAME.test(info.name),
          `GetPluginInfo: name ${JSON.stringify(info.name)} must begin and end with [a-zA-Z0-9] with only dashes, dots and alphanumerics between`,
        );
      });
      it("returns a non-empty vendor_version", async (t) => {
        const info = await expectOk(t.identity.getPluginInfo({}), "GetPluginInfo");
        check(info.vendorVersion !== "", "GetPluginInfo: vendor_version is empty (REQUIRED)");
      });
      it("answers the same name and version on every call", async (t) => {
        const first = await expectOk(t.identity.getPluginInfo({}), "GetPluginInfo");
        const second = await expectOk(t.identity.getPluginInfo({}), "GetPluginInfo (again)");
        check(
          first.name === second.name && first.vendorVersion === second.vendorVersion,
          `GetPluginInfo: answers differ: ${first.name}@${first.vendorVersion} then ${second.name}@${second.vendorVersion}`,
        );
      });
    }),
    ...describe("Identity", "GetPluginCapabilities", {}, ({ it }) => {
      it("returns only known capability types", async (t) => {
        const response = await expectOk(t.identity.getPluginCapabilities({}), "GetPluginCapabilities");
        for (const capability of response.capabilities) {
          const type = capability.service?.type ?? capability.volumeExpansion?.type;
          check(
            type !== undefined,
            `GetPluginCapabilities: an entry sets neither service nor volume_expansion`,
          );
          check(type !== "UNKNOWN", "GetPluginCapabilities: an entry has type UNKNOWN");
        }
      });
      it("answers the same capabilities on every call", async (t) => {
        const list = async (): Promise<string> => {
          const response = await expectOk(t.identity.getPluginCapabilities({}), "GetPluginCapabilities");
          return response.capabilities
            .map((c) => c.service?.type ?? c.volumeExpansion?.type ?? "")
            .sort()
            .join(",");
        };
        const first = await list();
        const second = await list();
        check(first === second, `GetPluginCapabilities: answers differ: [${first}] then [${second}]`);
      });
      it("reports no capability twice", async (t) => {
        const response = await expectOk(t.identity.getPluginCapabilities({}), "GetPluginCapabilities");
        const names = response.capabilities.map((c) => c.service?.type ?? c.volumeExpansion?.type ?? "");
        const duplicate = names.find((name, i) => names.indexOf(name) !== i);
        check(duplicate === undefined, `GetPluginCapabilities: ${duplicate} is reported twice`);
      });
    }),
    ...describe("Identity", "Probe", {}, ({ it }) => {
      it("succeeds and reports ready (or leaves ready unset)", async (t) => {
        const response = await expectOk(t.identity.probe({}), "Probe");
        check(
          response.ready === null || response.ready.value,
          "Probe: ready is false after the plugin became ready",
        );
      });
      it("may be called repeatedly", async (t) => {
        for (let i = 0; i < 3; i++) await expectOk(t.identity.probe({}), `Probe #${i + 1}`);
      });
    }),
  ];
}
