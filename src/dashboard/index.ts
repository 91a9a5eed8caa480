// The live dashboard (`csikit dashboard`, and `csikit up`'s dashboard line): an HTTPS page on
// loopback fed by watches on the API server and the components' /metrics endpoints.
export { startDashboard, parseListen, type Dashboard, type DashboardOptions } from "./server.ts";
export type { Endpoint } from "./metrics.ts";
export { journey, STEPS, type ClaimRow, type JourneyStep } from "./journey.ts";
