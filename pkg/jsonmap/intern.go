package jsonmap

import (
	"maps"
	"reflect"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// common are the strings shared instead of allocated for each occurrence: the
// field names of a Job and its pod template (every workload kind embeds pod
// templates and object metadata) and of an AdmissionReview, the same names as
// managedFields' field sets spell them ("f:name"; every object the API server
// sends carries them, about as large as the object), and values pod templates
// repeat. The table is built once and only read.
var common = func() map[string]string {
	t := map[string]string{}
	seen := map[reflect.Type]bool{}
	for _, v := range []any{batchv1.Job{}, corev1.Pod{}, admissionv1.AdmissionReview{}} {
		fieldNames(reflect.TypeOf(v), t, seen)
	}
	for name := range maps.Clone(t) {
		t["f:"+name] = "f:" + name
	}
	t["."] = "."
	for _, s := range []string{
		"cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", "pods",
		"Always", "Never", "OnFailure", "IfNotPresent", "TCP", "UDP", "File", "Default", "ClusterFirst",
		"v1", "batch/v1", "apps/v1", "Job", "Pod", "CREATE", "UPDATE", "DELETE", "true", "false", "main",
		"kueue.x-k8s.io/queue-name", "kueue.x-k8s.io/priority-class", "kueue.x-k8s.io/max-exec-time-seconds",
		"/dev/termination-log", "NonIndexed", "Indexed", "Failed", "TerminatingOrFailed",
	} {
		t[s] = s
	}
	return t
}()

// fieldNames adds the JSON names of t's fields, and of the types it holds.
func fieldNames(t reflect.Type, out map[string]string, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			out[name] = name
		}
		fieldNames(f.Type, out, seen)
	}
}

// intern is b as a string, shared when it is a common one.
func intern(b []byte) string {
	if s, ok := common[string(b)]; ok {
		return s
	}
	return string(b)
}
