package workload

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// unreadContainerFields are the container fields that nothing computing a
// summary or a Kueue unit reads for the kinds decoded with decodedForQuota:
// their Kueue adapters copy pod templates as they are, and Kueue's quota
// arithmetic (requests, limits standing in for them, sidecars by restart
// policy, LimitRange defaults, DRA claims) and scheduler read only a
// container's resources, name and restart policy. They are most of a real
// job's bytes (environment, commands, probes): converting them to typed
// objects was half the conversion of a 20 KB JobSet, and 8% of its admission
// (BenchmarkHandler). A deny list, so that a field Kubernetes adds later is
// kept, not guessed at; slim_internal_test.go proves the fields unread.
var unreadContainerFields = map[string]bool{
	"command": true, "args": true, "workingDir": true, "env": true, "envFrom": true,
	"ports": true, "volumeMounts": true, "volumeDevices": true,
	"livenessProbe": true, "readinessProbe": true, "startupProbe": true, "lifecycle": true,
	"securityContext": true, "terminationMessagePath": true, "terminationMessagePolicy": true,
	"imagePullPolicy": true, "stdin": true, "stdinOnce": true, "tty": true,
}

// unreadPodFields are the pod spec fields dropped as unread, on the same
// terms: a pod's volumes (Kueue charges no volume, and counts DRA claims
// through resourceClaims) were a fifth of the conversion of a 20 KB JobSet
// once its containers were slimmed. A pod spec is a map with a containers list.
var unreadPodFields = map[string]bool{"volumes": true}

// unreadFieldsOf are the fields a slim conversion leaves out, by the type
// that has them: every container type's unreadContainerFields (an ephemeral
// container's are in its inlined EphemeralContainerCommon), and a pod spec's
// unreadPodFields.
var unreadFieldsOf = map[reflect.Type]map[string]bool{
	reflect.TypeFor[corev1.Container]():                unreadContainerFields,
	reflect.TypeFor[corev1.EphemeralContainerCommon](): unreadContainerFields,
	reflect.TypeFor[corev1.PodSpec]():                  unreadPodFields,
}

// slimContainers says whether decodedForQuota drops unreadContainerFields;
// only the specs that prove the fields unread turn it off.
var slimContainers = true

// decodedForQuota is decoded without unreadContainerFields, which the
// conversion skips rather than converts. Only the builders of kinds whose
// Kueue adapter reads nothing else of a container use it: not Pods (Kueue's
// role hash of a pod group covers the whole spec), nor Ray or Spark (their
// adapters read containers by image and name, and may in time read more).
func decodedForQuota[T any](obj *unstructured.Unstructured) (*T, error) {
	t := new(T)
	if err := decodeWith(converter{slim: slimContainers}, obj, t); err != nil {
		return nil, err
	}
	return t, nil
}
