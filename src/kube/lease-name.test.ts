import { test } from "node:test";
import assert from "node:assert/strict";
import { leaseName, sanitizeLeaseName, type LeaseComponent } from "./lease-name.ts";

test("lease names per component, as upstream derives them", () => {
  const table: [LeaseComponent, string, string][] = [
    ["provisioner", "hostpath.csi.k8s.io", "hostpath-csi-k8s-io"],
    ["attacher", "hostpath.csi.k8s.io", "external-attacher-leader-hostpath-csi-k8s-io"],
    ["resizer", "hostpath.csi.k8s.io", "external-resizer-hostpath-csi-k8s-io"],
    ["snapshotter", "hostpath.csi.k8s.io", "external-snapshotter-leader-hostpath-csi-k8s-io"],
    ["snapshot-controller", "ignored", "snapshot-controller-leader"],
    ["provisioner", "example.com/my_driver.", "example-com-my-driver-X"],
    ["attacher", "Ebs.CSI.aws.com", "external-attacher-leader-Ebs-CSI-aws-com"],
  ];
  for (const [component, driver, want] of table) assert.equal(leaseName(component, driver), want, component);
});

test("sanitizer keeps letters, digits and dashes; appends X after a trailing dash", () => {
  assert.equal(sanitizeLeaseName("a-b-1"), "a-b-1");
  assert.equal(sanitizeLeaseName("a b/c"), "a-b-c");
  assert.equal(sanitizeLeaseName("ends-"), "ends-X");
  assert.equal(sanitizeLeaseName("ü"), "-X");
});
