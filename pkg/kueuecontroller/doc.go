// Package kueuecontroller recognises a Kueue controller manager in an admitted object
// and names the top-level controller it belongs to.
//
// Managed Kueue is a cluster singleton: a second controller manager anywhere in the
// cluster — another namespace, another name — fights the first over the same CRDs and
// webhooks. The singleton guard behind /validate-kueue-controllers sees every
// apps/v1 Deployment, StatefulSet, DaemonSet, ReplicaSet and v1 Pod; it calls Detect
// to decide whether the object runs Kueue's manager and IdentityOf to compare that
// object with the controllers a Configuration allows.
//
// Everything here is pure: no cluster access, no I/O, no logging. Input comes straight
// from an admission request, so it is treated as untrusted: every type assertion is
// checked, malformed fields read as absent, and the work is linear in the size of the
// object (which the API server already caps). There is deliberately no cap on the
// number of containers scanned: a cap would let a Kueue manager hide behind padding.
//
// # Fingerprint
//
// An object runs a Kueue controller manager when any of these holds:
//
//   - Image: a container, init container or (in a Pod) ephemeral container runs an
//     image whose repository path — registry host, tag and digest removed — ends in
//     the element "kueue-controller-manager", or ends in the element "kueue" below an
//     element that contains "kueue" or as the whole path: registry.k8s.io/kueue/kueue,
//     us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue,
//     mcr.microsoft.com/aks/kueue/kueue-controller-manager, a mirror's
//     …/kueue-controller-manager@sha256:…, a flat mirror's myregistry.azurecr.io/kueue:v0.19.2.
//     Kueue's other images — kueueviz-backend, kueueviz-frontend, kueue-populator,
//     importer, debug — are not controller managers and do not match; neither does
//     kueue-guard's own image, nor an image merely named kueue under another path
//     (ghcr.io/someone/kueue).
//   - Labels: the pod template's (or Pod's) labels, or the object's own labels, carry
//     both app.kubernetes.io/name=kueue and control-plane=controller-manager, the
//     selector labels of Kueue's Helm chart and of its kustomize config.
//   - Kueue's Helm chart, whatever nameOverride or fullnameOverride renamed: the pod
//     template's annotation charts.kueue.x-k8s.io/config-checksum with the label
//     control-plane=controller-manager, or the object's labels helm.sh/chart=kueue-<version>
//     with app.kubernetes.io/component=controller. (KueueViz, from the same chart,
//     has the annotation and the chart label, but neither controller label.)
//   - Kueue's manager by what it runs, whatever the image is called: a container that
//     passes the manager flag --config naming Kueue's Configuration file (below) and
//     has a container port named visibility, Kueue's visibility API server.
//
// The manager flag --config (or -config, in the =value or the two-word form) naming
// a file called controller_manager_config.yaml is recorded as a reason when another
// signal holds, but is not enough on its own: that file name is kubebuilder's
// ComponentConfig scaffold, used by unrelated operators (the AMD GPU operator among
// them) and by Kueue's own kueue-populator
// (--config=/etc/kueue/controller_manager_config.yaml), which must not match. The
// manager binary /manager and --zap-log-level are generic to every kubebuilder
// project and count for nothing.
package kueuecontroller
