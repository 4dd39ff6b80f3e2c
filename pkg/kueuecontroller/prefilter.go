package kueuecontroller

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// MayRunKueue is the Go twin of the controller webhook's match condition
// (webhookconfig.MayRunKueueCondition): Kueue's chart label on the object or its
// pod template, or a container image that mentions kueue. It is a superset of
// Detect, cheap enough for the API server to evaluate on every Pod; the offline
// reviewer uses it to judge exactly the objects the webhook would be sent.
func MayRunKueue(obj *unstructured.Unstructured) bool {
	if kueueLabelled(obj.GetLabels()) {
		return true
	}
	podSpec := []string{"spec", "template", "spec"}
	if obj.GetKind() == "Pod" {
		podSpec = []string{"spec"}
	} else if labels, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "template", "metadata", "labels"); kueueLabelled(labels) {
		return true
	}
	for _, key := range []string{"containers", "initContainers"} {
		list, _, _ := unstructured.NestedSlice(obj.Object, append(podSpec, key)...)
		for _, c := range list {
			if cm, ok := c.(map[string]any); ok {
				if image, ok := cm["image"].(string); ok && strings.Contains(image, "kueue") {
					return true
				}
			}
		}
	}
	return false
}

func kueueLabelled(labels map[string]string) bool {
	return labels[labelName] == "kueue"
}
