// Objects of every built-in kind the API server serves, shaped as upstream components write
// them (external-provisioner's PVs, kubelet's Node and CSINode, controller-manager's
// ReplicaSets, client-go leader election's Leases, events from EventRecorder and the
// events.k8s.io broadcaster, kubectl's RBAC objects). Used by the protobuf round-trip and
// server tests: each goes JSON → protobuf → JSON unchanged, and is created through the wire.
// Names are unique per kind so the server tests can create them all in one namespace.

export interface CorpusEntry {
  /** Path of the collection the object is created in ("{ns}" is the test's namespace). */
  collection: string;
  object: Record<string, unknown>;
}

const T = "2026-11-24T07:00:00Z";
const MT = "2026-11-24T07:00:00.123456Z";
const meta = (name: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  name,
  labels: { "app.kubernetes.io/name": "corpus" },
  annotations: { "csikit.io/note": "round trip" },
  ...extra,
});

const POD_SPEC = {
  volumes: [
    { name: "data", persistentVolumeClaim: { claimName: "data" } },
    {
      name: "config",
      configMap: { name: "settings", defaultMode: 420, items: [{ key: "a", path: "a.conf" }] },
    },
    {
      name: "inline",
      csi: { driver: "hostpath.csi.k8s.io", readOnly: true, volumeAttributes: { size: "1Mi" } },
    },
    {
      name: "token",
      projected: {
        sources: [{ serviceAccountToken: { audience: "csi", expirationSeconds: 3600, path: "token" } }],
        defaultMode: 420,
      },
    },
    { name: "scratch", emptyDir: { sizeLimit: "64Mi" } },
  ],
  initContainers: [{ name: "init", image: "busybox:1.36", command: ["sh", "-c", "true"] }],
  containers: [
    {
      name: "app",
      image: "registry.k8s.io/sig-storage/hostpathplugin:v1.15.0",
      args: ["--endpoint=$(CSI_ENDPOINT)", "--v=5"],
      ports: [{ name: "healthz", containerPort: 9898, protocol: "TCP" }],
      env: [
        { name: "CSI_ENDPOINT", value: "unix:///csi/csi.sock" },
        { name: "NODE_NAME", valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "spec.nodeName" } } },
        {
          name: "PASSWORD",
          valueFrom: { secretKeyRef: { name: "creds", key: "password", optional: false } },
        },
      ],
      envFrom: [{ configMapRef: { name: "settings" } }],
      resources: { limits: { memory: "128Mi" }, requests: { cpu: "10m", memory: "20Mi" } },
      volumeMounts: [
        { name: "data", mountPath: "/data", mountPropagation: "Bidirectional" },
        { name: "config", mountPath: "/etc/app", readOnly: true },
      ],
      livenessProbe: {
        httpGet: { path: "/healthz", port: "healthz", scheme: "HTTP" },
        initialDelaySeconds: 10,
        timeoutSeconds: 3,
        periodSeconds: 2,
        successThreshold: 1,
        failureThreshold: 5,
      },
      readinessProbe: { exec: { command: ["cat", "/tmp/ready"] }, periodSeconds: 5 },
      terminationMessagePath: "/dev/termination-log",
      terminationMessagePolicy: "File",
      imagePullPolicy: "IfNotPresent",
      securityContext: { privileged: true, runAsUser: 0, allowPrivilegeEscalation: false },
    },
  ],
  restartPolicy: "Always",
  terminationGracePeriodSeconds: 30,
  dnsPolicy: "ClusterFirst",
  nodeSelector: { "kubernetes.io/os": "linux" },
  serviceAccountName: "csi",
  serviceAccount: "csi",
  automountServiceAccountToken: false,
  securityContext: { fsGroup: 2000, runAsNonRoot: false },
  imagePullSecrets: [{ name: "registry" }],
  affinity: {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: "topology.hostpath.csi/node", operator: "In", values: ["node-1"] }] },
        ],
      },
    },
  },
  schedulerName: "default-scheduler",
  tolerations: [
    { key: "node.kubernetes.io/not-ready", operator: "Exists", effect: "NoExecute", tolerationSeconds: 300 },
  ],
  priority: 0,
  enableServiceLinks: true,
  preemptionPolicy: "PreemptLowerPriority",
};

const TEMPLATE = {
  metadata: { labels: { app: "corpus" }, annotations: { "kubectl.kubernetes.io/restartedAt": T } },
  spec: POD_SPEC,
};

export const CORPUS: readonly CorpusEntry[] = [
  {
    collection: "/api/v1/namespaces",
    object: {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: meta("corpus-ns"),
      spec: { finalizers: ["kubernetes"] },
    },
  },
  {
    collection: "/api/v1/nodes",
    object: {
      apiVersion: "v1",
      kind: "Node",
      metadata: meta("corpus-node", {
        annotations: { "csi.volume.kubernetes.io/nodeid": '{"hostpath.csi.k8s.io":"node-1"}' },
      }),
      spec: {
        podCIDR: "10.244.0.0/24",
        podCIDRs: ["10.244.0.0/24"],
        taints: [{ key: "k", value: "v", effect: "NoSchedule" }],
      },
      status: {
        capacity: { cpu: "2", memory: "4030880Ki", pods: "110", "ephemeral-storage": "20Gi" },
        allocatable: { cpu: "2", memory: "3928480Ki", pods: "110" },
        conditions: [
          {
            type: "Ready",
            status: "True",
            lastHeartbeatTime: T,
            lastTransitionTime: T,
            reason: "KubeletReady",
            message: "kubelet is posting ready status",
          },
        ],
        addresses: [
          { type: "InternalIP", address: "10.0.0.4" },
          { type: "Hostname", address: "node-1" },
        ],
        daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
        nodeInfo: {
          machineID: "m",
          systemUUID: "s",
          bootID: "b",
          kernelVersion: "6.8.0",
          osImage: "csikit",
          containerRuntimeVersion: "csikit://0.1.0",
          kubeletVersion: "v1.32.4",
          operatingSystem: "linux",
          architecture: "amd64",
        },
        volumesAttached: [{ name: "kubernetes.io/csi/hostpath.csi.k8s.io^vol-1", devicePath: "/dev/loop3" }],
        volumesInUse: ["kubernetes.io/csi/hostpath.csi.k8s.io^vol-1"],
      },
    },
  },
  {
    collection: "/api/v1/namespaces/{ns}/pods",
    object: { apiVersion: "v1", kind: "Pod", metadata: meta("corpus-pod"), spec: POD_SPEC },
  },
  {
    collection: "/api/v1/persistentvolumes",
    object: {
      apiVersion: "v1",
      kind: "PersistentVolume",
      metadata: meta("pvc-3f1c2a", {
        annotations: {
          "pv.kubernetes.io/provisioned-by": "hostpath.csi.k8s.io",
          "volume.kubernetes.io/provisioner-deletion-secret-name": "",
        },
        finalizers: ["kubernetes.io/pv-protection", "external-provisioner.volume.kubernetes.io/finalizer"],
      }),
      spec: {
        capacity: { storage: "1Mi" },
        csi: {
          driver: "hostpath.csi.k8s.io",
          volumeHandle: "3f1c2a-vol",
          fsType: "ext4",
          volumeAttributes: {
            "storage.kubernetes.io/csiProvisionerIdentity": "1732431600000-9000-hostpath.csi.k8s.io",
          },
          nodeStageSecretRef: { name: "stage", namespace: "default" },
        },
        accessModes: ["ReadWriteOnce"],
        claimRef: {
          kind: "PersistentVolumeClaim",
          namespace: "default",
          name: "data",
          uid: "6d1f7c2e-0000-4000-8000-000000000001",
          apiVersion: "v1",
          resourceVersion: "123",
        },
        persistentVolumeReclaimPolicy: "Delete",
        storageClassName: "hostpath",
        mountOptions: ["noatime"],
        volumeMode: "Filesystem",
        nodeAffinity: {
          required: {
            nodeSelectorTerms: [
              {
                matchExpressions: [{ key: "topology.hostpath.csi/node", operator: "In", values: ["node-1"] }],
              },
            ],
          },
        },
      },
    },
  },
  {
    collection: "/api/v1/namespaces/{ns}/persistentvolumeclaims",
    object: {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: meta("corpus-claim", {
        annotations: { "volume.beta.kubernetes.io/storage-provisioner": "hostpath.csi.k8s.io" },
      }),
      spec: {
        accessModes: ["ReadWriteOnce"],
        resources: { requests: { storage: "1Mi" } },
        storageClassName: "",
        volumeMode: "Block",
        dataSource: { apiGroup: "snapshot.storage.k8s.io", kind: "VolumeSnapshot", name: "snap" },
        dataSourceRef: { apiGroup: "snapshot.storage.k8s.io", kind: "VolumeSnapshot", name: "snap" },
        selector: { matchLabels: { tier: "gold" } },
      },
    },
  },
  {
    collection: "/api/v1/namespaces/{ns}/configmaps",
    object: {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: meta("corpus-cm"),
      data: { "a.conf": "x=1\n", empty: "" },
      binaryData: { blob: Buffer.from([0, 1, 2, 255]).toString("base64") },
    },
  },
  {
    collection: "/api/v1/namespaces/{ns}/secrets",
    object: {
      apiVersion: "v1",
      kind: "Secret",
      metadata: meta("corpus-secret"),
      type: "kubernetes.io/basic-auth",
      data: {
        username: Buffer.from("admin").toString("base64"),
        password: Buffer.from("p\u00e4ss").toString("base64"),
      },
      immutable: false,
    },
  },
  {
    collection: "/api/v1/namespaces/{ns}/serviceaccounts",
    object: {
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: meta("corpus-sa"),
      imagePullSecrets: [{ name: "registry" }],
      automountServiceAccountToken: false,
    },
  },
  {
    collection: "/api/v1/namespaces/{ns}/events",
    object: {
      apiVersion: "v1",
      kind: "Event",
      metadata: meta("data.1801f3a2b3c4d5e6"),
      involvedObject: {
        kind: "PersistentVolumeClaim",
        namespace: "pb",
        name: "data",
        uid: "6d1f7c2e-0000-4000-8000-000000000001",
        apiVersion: "v1",
        resourceVersion: "120",
      },
      reason: "ProvisioningSucceeded",
      action: "Provisioning",
      message: "Successfully provisioned volume pvc-3f1c2a",
      source: { component: "hostpath.csi.k8s.io_csi-provisioner_node-1" },
      firstTimestamp: T,
      lastTimestamp: T,
      count: 1,
      type: "Normal",
      eventTime: MT,
      reportingComponent: "hostpath.csi.k8s.io_csi-provisioner_node-1",
      reportingInstance: "node-1",
    },
  },
  {
    collection: "/apis/storage.k8s.io/v1/storageclasses",
    object: {
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: meta("corpus-sc", {
        annotations: { "storageclass.kubernetes.io/is-default-class": "false" },
      }),
      provisioner: "hostpath.csi.k8s.io",
      parameters: { "csi.storage.k8s.io/fstype": "ext4" },
      reclaimPolicy: "Retain",
      mountOptions: ["noatime"],
      allowVolumeExpansion: false,
      volumeBindingMode: "WaitForFirstConsumer",
      allowedTopologies: [
        { matchLabelExpressions: [{ key: "topology.hostpath.csi/node", values: ["node-1"] }] },
      ],
    },
  },
  {
    collection: "/apis/storage.k8s.io/v1/csidrivers",
    object: {
      apiVersion: "storage.k8s.io/v1",
      kind: "CSIDriver",
      metadata: meta("corpus.csi.k8s.io"),
      spec: {
        attachRequired: false,
        podInfoOnMount: true,
        volumeLifecycleModes: ["Persistent", "Ephemeral"],
        storageCapacity: true,
        fsGroupPolicy: "File",
        tokenRequests: [{ audience: "csi", expirationSeconds: 3600 }],
        requiresRepublish: false,
        seLinuxMount: false,
        nodeAllocatableUpdatePeriodSeconds: 60,
        serviceAccountTokenInSecrets: true,
        preventPodSchedulingIfMissing: true,
      },
    },
  },
  {
    collection: "/apis/storage.k8s.io/v1/csinodes",
    object: {
      apiVersion: "storage.k8s.io/v1",
      kind: "CSINode",
      metadata: meta("corpus-node", {
        ownerReferences: [
          {
            apiVersion: "v1",
            kind: "Node",
            name: "corpus-node",
            uid: "7a7a7a7a-0000-4000-8000-000000000002",
          },
        ],
      }),
      spec: {
        drivers: [
          {
            name: "hostpath.csi.k8s.io",
            nodeID: "node-1",
            topologyKeys: ["topology.hostpath.csi/node"],
            allocatable: { count: 100 },
          },
        ],
      },
    },
  },
  {
    collection: "/apis/storage.k8s.io/v1/volumeattachments",
    object: {
      apiVersion: "storage.k8s.io/v1",
      kind: "VolumeAttachment",
      metadata: meta("csi-0f2e4d6c8a"),
      spec: {
        attacher: "hostpath.csi.k8s.io",
        source: { persistentVolumeName: "pvc-3f1c2a" },
        nodeName: "node-1",
      },
      status: {
        attached: true,
        attachmentMetadata: { devicePath: "/dev/loop3" },
        // errorCode: the gRPC code (13 Internal), as external-attacher v4.10+ writes it.
        detachError: { time: T, message: "rpc error: code = Internal desc = busy", errorCode: 13 },
      },
    },
  },
  {
    collection: "/apis/storage.k8s.io/v1/namespaces/{ns}/csistoragecapacities",
    object: {
      apiVersion: "storage.k8s.io/v1",
      kind: "CSIStorageCapacity",
      metadata: meta("csisc-x7k2p", { generateName: "csisc-" }),
      nodeTopology: { matchLabels: { "topology.hostpath.csi/node": "node-1" } },
      storageClassName: "hostpath",
      capacity: "102156Mi",
      maximumVolumeSize: "100Gi",
    },
  },
  {
    collection: "/apis/storage.k8s.io/v1/volumeattributesclasses",
    object: {
      apiVersion: "storage.k8s.io/v1",
      kind: "VolumeAttributesClass",
      metadata: meta("corpus-vac"),
      driverName: "hostpath.csi.k8s.io",
      parameters: { iops: "3000" },
    },
  },
  {
    collection: "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
    object: {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: meta("external-attacher-leader-hostpath-csi-k8s-io"),
      spec: {
        holderIdentity: "node-1",
        leaseDurationSeconds: 15,
        acquireTime: MT,
        renewTime: "2026-11-24T07:00:10.000000Z",
        leaseTransitions: 0,
      },
    },
  },
  {
    collection: "/apis/events.k8s.io/v1/namespaces/{ns}/events",
    object: {
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      metadata: meta("data.1801f3a2b3c4d5e7"),
      eventTime: MT,
      series: { count: 2, lastObservedTime: MT },
      reportingController: "external-resizer hostpath.csi.k8s.io",
      reportingInstance: "external-resizer-node-1",
      action: "Resizing",
      reason: "VolumeResizeSuccessful",
      regarding: { kind: "PersistentVolumeClaim", namespace: "pb", name: "data", apiVersion: "v1" },
      related: { kind: "PersistentVolume", name: "pvc-3f1c2a", apiVersion: "v1" },
      note: "resize volume pvc-3f1c2a successful",
      type: "Normal",
      deprecatedCount: 2,
    },
  },
  {
    collection: "/apis/apps/v1/namespaces/{ns}/deployments",
    object: {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: meta("corpus-deploy"),
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: "corpus" } },
        template: TEMPLATE,
        strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: "25%", maxSurge: 1 } },
        revisionHistoryLimit: 10,
        progressDeadlineSeconds: 600,
      },
    },
  },
  {
    collection: "/apis/apps/v1/namespaces/{ns}/replicasets",
    object: {
      apiVersion: "apps/v1",
      kind: "ReplicaSet",
      metadata: meta("corpus-rs"),
      spec: {
        replicas: 1,
        minReadySeconds: 5,
        selector: { matchLabels: { app: "corpus" } },
        template: TEMPLATE,
      },
    },
  },
  {
    collection: "/apis/apps/v1/namespaces/{ns}/statefulsets",
    object: {
      apiVersion: "apps/v1",
      kind: "StatefulSet",
      metadata: meta("corpus-sts"),
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: "corpus" } },
        template: TEMPLATE,
        volumeClaimTemplates: [
          {
            metadata: { name: "data" },
            spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Mi" } } },
          },
        ],
        serviceName: "corpus",
        podManagementPolicy: "Parallel",
        updateStrategy: { type: "RollingUpdate", rollingUpdate: { partition: 0 } },
        persistentVolumeClaimRetentionPolicy: { whenDeleted: "Delete", whenScaled: "Retain" },
      },
    },
  },
  {
    collection: "/apis/apps/v1/namespaces/{ns}/daemonsets",
    object: {
      apiVersion: "apps/v1",
      kind: "DaemonSet",
      metadata: meta("corpus-ds"),
      spec: {
        selector: { matchLabels: { app: "corpus" } },
        template: TEMPLATE,
        updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } },
      },
    },
  },
  {
    collection: "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    object: {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: meta("corpus-role"),
      rules: [
        {
          verbs: ["get", "watch", "list", "delete", "update", "create"],
          apiGroups: ["coordination.k8s.io"],
          resources: ["leases"],
        },
      ],
    },
  },
  {
    collection: "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    object: {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: meta("corpus-clusterrole"),
      rules: [
        {
          verbs: ["get", "list", "watch", "create", "delete"],
          apiGroups: [""],
          resources: ["persistentvolumes"],
        },
        { verbs: ["get"], apiGroups: [""], resources: ["secrets"], resourceNames: ["stage"] },
        { verbs: ["get"], nonResourceURLs: ["/healthz"] },
      ],
    },
  },
  {
    collection: "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
    object: {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: meta("corpus-rolebinding"),
      subjects: [{ kind: "ServiceAccount", name: "csi", namespace: "default" }],
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "corpus-role" },
    },
  },
  {
    collection: "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    object: {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: meta("corpus-clusterrolebinding"),
      subjects: [
        { kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "alice" },
        { kind: "Group", apiGroup: "rbac.authorization.k8s.io", name: "storage-admins" },
      ],
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "corpus-clusterrole" },
    },
  },
];

/** The review kinds and TokenRequest: created, never stored, answered with a status. */
export const REVIEWS: readonly CorpusEntry[] = [
  {
    collection: "/apis/authorization.k8s.io/v1/subjectaccessreviews",
    object: {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      metadata: {},
      spec: {
        resourceAttributes: {
          namespace: "default",
          verb: "get",
          resource: "persistentvolumeclaims",
          version: "v1",
        },
        user: "system:serviceaccount:default:csi",
        groups: ["system:serviceaccounts", "system:authenticated"],
        extra: { "authentication.kubernetes.io/pod-name": ["p1"] },
        uid: "u-1",
      },
    },
  },
  {
    collection: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
    object: {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SelfSubjectAccessReview",
      metadata: {},
      spec: { nonResourceAttributes: { path: "/healthz", verb: "get" } },
    },
  },
  {
    collection: "/apis/authentication.k8s.io/v1/selfsubjectreviews",
    object: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview", metadata: {} },
  },
];
