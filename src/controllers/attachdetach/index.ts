// The attach/detach controller (kube-controller-manager's role for CSI volumes): creates and
// deletes VolumeAttachments for the volumes of pods scheduled to managed nodes, and reports
// attached volumes in node.status.volumesAttached.
export {
  startAttachDetachController,
  ATTACH_DETACH_COMPONENT,
  type AttachDetachOptions,
} from "./controller.ts";
export { volumeAttachmentName, uniqueVolumeName } from "./names.ts";
