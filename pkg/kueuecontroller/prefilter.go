package kueuecontroller

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// MayRunKueue is the Go twin of the controller webhook's match condition
// (webhookconfig.MayRunKueueCondition): Kueue's chart label (app.kubernetes.io/name=kueue
// or helm.sh/chart=kueue-…) on the object or its pod template, Kueue's chart
// annotation on the pod template, a container (init and ephemeral containers
// included) whose image mentions kueue, or one with a port named visibility. It
// is a superset of Detect, cheap enough for the API server to evaluate on every
// Pod; the offline reviewer uses it to judge exactly the objects the webhook
// would be sent.
func MayRunKueue(obj *unstructured.Unstructured) bool {
	if kueueLabelled(obj.GetLabels()) {
		return true
	}
	podSpec := []string{"spec", "template", "spec"}
	if obj.GetKind() == "Pod" {
		podSpec = []string{"spec"}
	} else {
		labels, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "template", "metadata", "labels")
		annotations, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "template", "metadata", "annotations")
		if _, ok := annotations[chartChecksumAnnotation]; ok || kueueLabelled(labels) {
			return true
		}
	}
	for _, key := range containerLists {
		list, _, _ := unstructured.NestedSlice(obj.Object, append(podSpec, key)...)
		for _, c := range list {
			cm, ok := c.(map[string]any)
			if !ok {
				continue
			}
			if image, ok := cm["image"].(string); ok && strings.Contains(image, "kueue") {
				return true
			}
			if servesVisibility(cm) {
				return true
			}
		}
	}
	return false
}

func kueueLabelled(labels map[string]string) bool {
	return labels[labelName] == "kueue" || strings.HasPrefix(labels[labelHelmChart], "kueue-")
}
