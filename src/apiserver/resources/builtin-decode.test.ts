import { test } from "node:test";
import assert from "node:assert/strict";
import { base64ErrorOffset, builtinDecodeError } from "./builtin-decode.ts";

const INT32 = (struct: string, path: string, what = "string") =>
  `json: cannot unmarshal ${what} into Go struct field ${struct}.${path} of type int32`;
const QUANTITY =
  "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

test("mistyped values fail with encoding/json's message naming the Go struct, JSON path and type", () => {
  const cases: [string, unknown, string][] = [
    [
      "V1Pod",
      { spec: { containers: [{ name: "c", ports: [{ containerPort: "80" }] }] } },
      INT32("ContainerPort", "spec.containers.ports.containerPort"),
    ],
    [
      "V1Pod",
      { spec: { containers: [{ name: "c", ports: [{ containerPort: 80.5 }] }] } },
      INT32("ContainerPort", "spec.containers.ports.containerPort", "number 80.5"),
    ],
    [
      "V1Pod",
      { spec: { containers: [{ name: "c", ports: [{ containerPort: 2 ** 31 }] }] } },
      INT32("ContainerPort", "spec.containers.ports.containerPort", "number 2147483648"),
    ],
    [
      "V1Pod",
      { spec: { containers: [{ livenessProbe: { httpGet: { port: true } } }] } },
      INT32("HTTPGetAction", "spec.containers.livenessProbe.httpGet.port", "bool"),
    ],
    [
      "V1Pod",
      { metadata: { labels: { a: 1 } } },
      "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string",
    ],
    [
      "V1Pod",
      { spec: "x" },
      "json: cannot unmarshal string into Go struct field Pod.spec of type v1.PodSpec",
    ],
    [
      "V1PersistentVolumeClaim",
      { spec: { accessModes: "ReadWriteOnce" } },
      "json: cannot unmarshal string into Go struct field PersistentVolumeClaimSpec.spec.accessModes of type []string",
    ],
    ["V1PersistentVolumeClaim", { spec: { resources: { requests: { storage: "1Gb" } } } }, QUANTITY],
    ["V1PersistentVolumeClaim", { spec: { resources: { requests: { storage: true } } } }, QUANTITY],
    [
      "V1PersistentVolume",
      { spec: { capacity: "1Gi" } },
      "json: cannot unmarshal string into Go struct field PersistentVolumeSpec.spec.capacity of type v1.ResourceList",
    ],
    [
      "V1StorageClass",
      { allowVolumeExpansion: "true" },
      "json: cannot unmarshal string into Go struct field StorageClass.allowVolumeExpansion of type bool",
    ],
    [
      "V1StorageClass",
      { parameters: { a: 1 } },
      "json: cannot unmarshal number into Go struct field StorageClass.parameters of type string",
    ],
    [
      "V1CSIDriver",
      { spec: { attachRequired: "yes" } },
      "json: cannot unmarshal string into Go struct field CSIDriverSpec.spec.attachRequired of type bool",
    ],
    [
      "V1CSIDriver",
      { spec: { tokenRequests: [{ audience: "a", expirationSeconds: "600" }] } },
      "json: cannot unmarshal string into Go struct field TokenRequest.spec.tokenRequests.expirationSeconds of type int64",
    ],
    [
      "V1CSINode",
      { spec: { drivers: [{ name: "d", nodeID: "n", allocatable: { count: "3" } }] } },
      INT32("VolumeNodeResources", "spec.drivers.allocatable.count"),
    ],
    [
      "V1VolumeAttachment",
      { spec: { attacher: "a", nodeName: "n", source: { persistentVolumeName: 7 } } },
      "json: cannot unmarshal number into Go struct field VolumeAttachmentSource.spec.source.persistentVolumeName of type string",
    ],
    [
      "V1Node",
      { spec: { unschedulable: "false" } },
      "json: cannot unmarshal string into Go struct field NodeSpec.spec.unschedulable of type bool",
    ],
    [
      "V1ConfigMap",
      { data: { a: 1 } },
      "json: cannot unmarshal number into Go struct field ConfigMap.data of type string",
    ],
    ["V1Secret", { data: { a: "abc!" } }, "illegal base64 data at input byte 3"],
    [
      "V1Secret",
      { data: { a: 5 } },
      "json: cannot unmarshal number into Go struct field Secret.data of type []uint8",
    ],
    [
      "V1Pod",
      { metadata: { creationTimestamp: "yesterday" } },
      'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"',
    ],
  ];
  for (const [model, object, message] of cases) {
    assert.equal(builtinDecodeError(model, object), message, `${model} ${JSON.stringify(object)}`);
  }
});

test("well-typed values decode: null, Quantity numbers, IntOrString, RFC 3339 times, unknown fields", () => {
  const cases: [string, unknown][] = [
    [
      "V1Pod",
      {
        metadata: { name: "p", creationTimestamp: null, labels: { a: "b" } },
        spec: {
          containers: [
            {
              name: "c",
              ports: [{ containerPort: 80 }],
              resources: { limits: { cpu: 1, memory: "1Gi" } },
              livenessProbe: { httpGet: { port: "http" } },
              readinessProbe: { tcpSocket: { port: 8080 } },
            },
          ],
          volumes: [{ name: "v", emptyDir: { sizeLimit: "1Mi" } }],
        },
        bogus: { anything: 1 },
      },
    ],
    [
      "V1PersistentVolumeClaim",
      { spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: 5 } } } },
    ],
    ["V1Secret", { data: { a: "aGVsbG8=", b: "" }, stringData: { c: "not base64!" } }],
    [
      "CoreV1Event",
      { eventTime: "2024-01-01T00:00:00.123456Z", lastTimestamp: "2024-01-01T00:00:00+02:00", count: 1 },
    ],
    [
      "V1CustomResourceDefinition",
      { spec: { versions: [{ name: "v1", schema: { openAPIV3Schema: { default: 5 } } }] } },
    ],
  ];
  for (const [model, object] of cases) {
    assert.equal(builtinDecodeError(model, object), undefined, `${model} ${JSON.stringify(object)}`);
  }
});

test("base64 error offsets are Go's StdEncoding ones", () => {
  const cases: [string, number | undefined][] = [
    ["", undefined],
    ["YQ==", undefined],
    ["aGVs\nbG8=", undefined],
    ["YQ=", 3],
    ["YQ", 0],
    ["Y", 0],
    ["abc!", 3],
    ["aGVsbG8=x", 8],
    ["Y===", 1],
  ];
  for (const [input, offset] of cases) assert.equal(base64ErrorOffset(input), offset, JSON.stringify(input));
});
