// The CSI trace's response cut (the sidecars' --max-grpc-log-length, csi-lib-utils'
// SetMaxGRPCLogLength): -1 and 0 keep everything, a positive length cuts the JSON and says by
// how much.

import assert from "node:assert/strict";
import { test } from "node:test";
import { loggedResponse } from "./trace.ts";

test("a logged response is cut to --max-grpc-log-length as csi-lib-utils does", () => {
  const response = { publishContext: { device: "/dev/sda" } };
  assert.deepEqual(loggedResponse(response, -1), response);
  assert.deepEqual(loggedResponse(response, 0), response);
  assert.deepEqual(loggedResponse(response, 1000), response);
  const text = JSON.stringify(response);
  assert.equal(
    loggedResponse(response, 10),
    `${text.slice(0, 10)} [response body too large, log truncated by ${text.length - 10} characters]`,
  );
});
