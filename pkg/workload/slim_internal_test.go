package workload

import (
	"context"
	"reflect"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	ginkgo "github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/gomega"
)

// unreadValues is a well-typed value of every unread container field, so that
// the specs below set each one (a new entry in unreadContainerFields needs
// one here).
var unreadValues = map[string]any{
	"command": []any{"torchrun"}, "args": []any{"train.py"}, "workingDir": "/work",
	"env":                    fixtures.EnvVars("main", 12),
	"envFrom":                []any{map[string]any{"configMapRef": map[string]any{"name": "settings"}}},
	"ports":                  []any{map[string]any{"name": "metrics", "containerPort": int64(9090)}},
	"volumeMounts":           []any{map[string]any{"name": "scratch", "mountPath": "/scratch"}},
	"volumeDevices":          []any{map[string]any{"name": "raw", "devicePath": "/dev/xvda"}},
	"livenessProbe":          probe(),
	"readinessProbe":         probe(),
	"startupProbe":           probe(),
	"lifecycle":              map[string]any{"preStop": map[string]any{"exec": map[string]any{"command": []any{"sleep", "5"}}}},
	"securityContext":        map[string]any{"runAsUser": int64(1000), "allowPrivilegeEscalation": false},
	"terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
	"imagePullPolicy": "Always", "stdin": true, "stdinOnce": true, "tty": true,
}

func probe() map[string]any {
	return map[string]any{"httpGet": map[string]any{"path": "/healthz", "port": int64(9090)}, "periodSeconds": int64(10)}
}

// withUnreadFields is obj with every unread field set on each container and
// init container (a sidecar among them) of its pod specs.
func withUnreadFields(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := obj.DeepCopy()
	walkMaps(out.Object, nil, func(_ []segment, m map[string]any) {
		if _, ok := m["containers"].([]any); !ok {
			return
		}
		m["volumes"] = appendAny(m["volumes"], map[string]any{"name": "scratch", "emptyDir": map[string]any{"sizeLimit": "50Gi"}},
			map[string]any{"name": "data", "persistentVolumeClaim": map[string]any{"claimName": "data"}},
			map[string]any{"name": "cache", "ephemeral": map[string]any{"volumeClaimTemplate": map[string]any{"spec": map[string]any{
				"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": "10Gi"}}}}}})
		m["initContainers"] = appendAny(m["initContainers"], []any{
			map[string]any{"name": "fetch", "resources": map[string]any{"requests": map[string]any{"cpu": "250m"}}},
			map[string]any{"name": "proxy", "restartPolicy": "Always", "resources": map[string]any{"limits": map[string]any{"memory": "64Mi"}}},
		}...)
		for _, list := range []string{"containers", "initContainers"} {
			for _, c := range m[list].([]any) {
				for k, v := range unreadValues {
					c.(map[string]any)[k] = runtime.DeepCopyJSONValue(v)
				}
			}
		}
	})
	return out
}

// appendAny is append for a value that may be a []any or absent.
func appendAny(list any, more ...any) []any {
	l, _ := list.([]any)
	return append(l, more...)
}

var _ = ginkgo.Describe("a slim conversion", func() {
	ginkgo.DescribeTable("leaves out only the unread fields of containers and pod specs",
		func(in map[string]any, want corev1.PodSpec) {
			before := runtime.DeepCopyJSON(in)
			var got corev1.PodSpec
			Expect(converter{slim: true}.convert(in, &got)).To(Succeed())
			Expect(cmp.Diff(want, got)).To(BeEmpty())
			Expect(cmp.Diff(before, in)).To(BeEmpty(), "the input was modified")
		},
		ginkgo.Entry("a container's environment and command",
			map[string]any{"containers": []any{map[string]any{"name": "m", "env": []any{map[string]any{"name": "A"}}, "command": []any{"x"}, "image": "i"}}},
			corev1.PodSpec{Containers: []corev1.Container{{Name: "m", Image: "i"}}}),
		ginkgo.Entry("init and ephemeral containers",
			map[string]any{
				"initContainers":      []any{map[string]any{"name": "i", "restartPolicy": "Always", "ports": []any{map[string]any{"containerPort": int64(80)}}}},
				"ephemeralContainers": []any{map[string]any{"name": "e", "tty": true, "targetContainerName": "m"}}},
			corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "i", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}},
				EphemeralContainers: []corev1.EphemeralContainer{{
					EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e"}, TargetContainerName: "m"}}}),
		ginkgo.Entry("a pod spec's volumes, beside its node selector",
			map[string]any{"volumes": []any{map[string]any{"name": "v"}}, "nodeSelector": map[string]any{"pool": "gpu"}},
			corev1.PodSpec{NodeSelector: map[string]string{"pool": "gpu"}}),
		ginkgo.Entry("a container's resources, name and restart policy kept",
			map[string]any{"containers": []any{map[string]any{"name": "m", "resizePolicy": []any{map[string]any{"resourceName": "cpu"}}}}},
			corev1.PodSpec{Containers: []corev1.Container{{Name: "m", ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: "cpu"}}}}}),
	)

	ginkgo.It("has a value for every unread field", func() {
		Expect(unreadPodFields).To(HaveLen(1), "withUnreadFields sets volumes only")
		for k := range unreadContainerFields {
			Expect(unreadValues).To(HaveKey(k))
		}
	})
})

// The unread fields are proven unread: every kind's summary and Kueue unit
// are the same whether its containers are decoded whole or without them.
var _ = ginkgo.Describe("decodedForQuota", func() {
	ginkgo.AfterEach(func() { slimContainers = true })
	quantities := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	// Kueue keeps its accounting in unexported fields.
	kueueResources := cmp.Exporter(func(t reflect.Type) bool { return t.PkgPath() == "sigs.k8s.io/kueue/pkg/resources" })
	// The unit's Workload keeps the pod templates; they differ by the unread
	// fields only.
	unread := cmpopts.IgnoreFields(corev1.Container{}, "Command", "Args", "WorkingDir", "Env", "EnvFrom", "Ports",
		"VolumeMounts", "VolumeDevices", "LivenessProbe", "ReadinessProbe", "StartupProbe", "Lifecycle",
		"SecurityContext", "TerminationMessagePath", "TerminationMessagePolicy", "ImagePullPolicy", "Stdin", "StdinOnce", "TTY")
	unreadPod := cmpopts.IgnoreFields(corev1.PodSpec{}, "Volumes")
	objects := []*unstructured.Unstructured{fixtures.TrainingJobSet("ml", "train").Obj()}
	for _, o := range fixtures.EveryKind("ml") {
		objects = append(objects, o.Obj())
	}
	for _, obj := range objects {
		ginkgo.It("summarizes a "+obj.GetKind()+" the same without them", func(ctx context.Context) {
			obj := withUnreadFields(obj)
			slimContainers = false
			want := outcomeOf(ctx, obj)
			slimContainers = true
			got := outcomeOf(ctx, obj)
			sameError(got.summaryErr, want.summaryErr)
			Expect(cmp.Diff(want.summary, got.summary, quantities)).To(BeEmpty())
			sameError(got.unitErr, want.unitErr)
			Expect(cmp.Diff(want.unit, got.unit, quantities, kueueResources, unread, unreadPod, cmpopts.EquateEmpty())).To(BeEmpty())
		})
	}
})

// outcome is what the summary gives for an object: its Summary and Kueue unit.
type outcome struct {
	summary             *Summary
	summaryErr, unitErr error
	unit                *Unit
}

func outcomeOf(ctx context.Context, obj *unstructured.Unstructured) outcome {
	s, err := Summarize(ctx, obj)
	u, unitErr := KueueUnit(ctx, obj, Options{})
	return outcome{summary: s, summaryErr: err, unit: u, unitErr: unitErr}
}

func sameError(got, want error) {
	ginkgo.GinkgoHelper()
	if want == nil {
		Expect(got).NotTo(HaveOccurred())
		return
	}
	Expect(got).To(MatchError(want.Error()))
}
