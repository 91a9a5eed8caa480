// Upstream's "should provision storage with any volume data source": a claim whose dataSourceRef
// names an object of a custom kind (a "Hello" holding a file name and contents) gets a volume
// holding that file. Upstream deploys the hello-populator controller image for it; pods on a
// csikit up cluster run host commands, not images, so here the test itself does what a populator
// built on lib-volume-populator does, only through the cluster API: it makes a "prime" claim of
// the same class (on the node the scheduler selected for the original claim), has a pod write the
// file into it, points the prime volume's claimRef at the original claim and deletes the prime
// claim — the PV controller then binds the original claim to the populated volume.

import {
  ANNOTATIONS,
  GVR,
  type CustomResourceDefinition,
  type GroupVersionKindResource,
  type PersistentVolume,
  type PersistentVolumeClaim,
} from "../../api/index.ts";
import type { KubeObject } from "../../kube/index.ts";
import type { TestContext } from "../suite.ts";
import { E2eCheckError, E2eSkip } from "../model.ts";
import { MOUNT_PATH, TestNamespace } from "../resources.ts";
import { nameOf } from "./data-sources.ts";

const FILE = "example.txt";

/** A namespaced CRD "Hello" of a group unique to the test, awaited until Established. */
async function createHelloKind(namespace: TestNamespace): Promise<GroupVersionKindResource> {
  const group = `${namespace.name}.populator.csikit.io`;
  const kind: GroupVersionKindResource = {
    group,
    version: "v1alpha1",
    resource: "hellos",
    kind: "Hello",
    namespaced: true,
  };
  const name = `hellos.${group}`;
  await namespace.createObject<CustomResourceDefinition>(GVR.customResourceDefinitions, {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name },
    spec: {
      group,
      names: { plural: "hellos", singular: "hello", kind: "Hello", listKind: "HelloList" },
      scope: "Namespaced",
      versions: [
        {
          name: "v1alpha1",
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: "object",
              properties: {
                spec: {
                  type: "object",
                  properties: { fileName: { type: "string" }, fileContents: { type: "string" } },
                  required: ["fileName", "fileContents"],
                },
              },
            },
          },
        },
      ],
    },
  });
  await namespace.waitFor(`CRD ${name} to be Established`, "PodStartShort", async () => {
    const crd = await namespace.client.get<CustomResourceDefinition>(GVR.customResourceDefinitions, name);
    return crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True");
  });
  return kind;
}

export async function anyVolumeDataSource(context: TestContext): Promise<void> {
  const { namespace, client } = context;
  if (context.pattern.volMode === "Block")
    throw new E2eSkip("Test for Block volumes is not implemented - skipping");
  const helloKind = await createHelloKind(namespace);
  const contents = `Hello from namespace ${namespace.name}`;
  const hello = await client.create<KubeObject & { spec: { fileName: string; fileContents: string } }>(
    helloKind,
    {
      apiVersion: `${helloKind.group}/${helloKind.version}`,
      kind: "Hello",
      metadata: { name: "example-hello", namespace: namespace.name },
      spec: { fileName: FILE, fileContents: contents },
    },
  );
  const storageClass = await namespace.createClass();
  const className = nameOf(storageClass);
  const claim = await namespace.createClaim(className, {
    dataSourceRef: { apiGroup: helloKind.group, kind: "Hello", name: nameOf(hello) },
  });
  const claimName = nameOf(claim);
  const consumer = await namespace.createPod({ volumes: [TestNamespace.claimVolume(claimName)] });

  // The populator: waits for the scheduler's choice of node when binding is delayed.
  const delayed = storageClass.volumeBindingMode === "WaitForFirstConsumer";
  const selected = await namespace.waitFor(
    `claim ${claimName} to get a node or be immediate`,
    "ClaimProvision",
    async () => {
      const current = await namespace.getClaim(claimName);
      const node = current.metadata?.annotations?.[ANNOTATIONS.selectedNode.key];
      return delayed ? node : (node ?? "");
    },
  );
  const prime = await namespace.client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: {
      name: `prime-${claim.metadata?.uid ?? claimName}`,
      namespace: namespace.name,
      ...(selected !== "" ? { annotations: { [ANNOTATIONS.selectedNode.key]: selected } } : {}),
    },
    spec: namespace.claimSpec(className),
  });
  const primeName = nameOf(prime);
  const writer = await namespace.createPod({
    volumes: [TestNamespace.claimVolume(primeName)],
    command: `printf '%s' "$CONTENTS" > ${MOUNT_PATH}/${FILE} && sync`,
    ...(selected !== "" ? { node: selected } : {}),
    mutate: (pod) => {
      const container = pod.spec?.containers[0];
      if (container) container.env = [{ name: "CONTENTS", value: contents }];
    },
  });
  const ended = await namespace.waitEnded(nameOf(writer));
  if (ended.status?.phase !== "Succeeded")
    throw new E2eCheckError(`the populator pod ${nameOf(writer)} ended ${ended.status?.phase}`);
  await namespace.deletePod(nameOf(writer));
  const pv = await namespace.waitBound(primeName);
  await client.patch<PersistentVolume>(GVR.persistentVolumes, nameOf(pv), {
    spec: {
      claimRef: {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        namespace: namespace.name,
        name: claimName,
        uid: claim.metadata?.uid,
        resourceVersion: null,
      },
    },
  });
  await namespace.deleteAndWait(GVR.persistentVolumeClaims, primeName, namespace.name);

  // The check: the consumer runs on the populated volume and finds the file.
  const bound = await namespace.waitBound(claimName);
  if (bound.metadata?.name !== pv.metadata?.name)
    throw new E2eCheckError(
      `claim ${claimName} bound ${bound.metadata?.name}, not the populated ${pv.metadata?.name}`,
    );
  await namespace.waitRunning(nameOf(consumer));
  const read = await namespace.execOk(nameOf(consumer), `cat ${MOUNT_PATH}/${FILE}`);
  if (read !== contents)
    throw new E2eCheckError(
      `the volume's ${FILE} holds ${JSON.stringify(read)}, want ${JSON.stringify(contents)}`,
    );
}
