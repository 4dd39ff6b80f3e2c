package kueuecontroller_test

import (
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	. "github.com/onsi/gomega"
)

// Real-world images and names used across the tests.
const (
	kueueImage      = "registry.k8s.io/kueue/kueue:v0.19.2"
	kueueConfigArg  = "--config=/controller_manager_config.yaml"
	kueueNamespace  = "kueue-system"
	kueueDeployment = "kueue-controller-manager"
	// podTemplateHash is a hash as the Deployment controller would compute it.
	podTemplateHash = "6b9c8d7f5"
)

// Reasons Detect gives for Kueue's chart Deployment.
var (
	imageReason  = `image "` + kueueImage + `"`
	labelsReason = "labels app.kubernetes.io/name=kueue,control-plane=controller-manager"
	configReason = "argument " + kueueConfigArg
	// The chart's marks, on the Deployment and on what it creates (the
	// ReplicaSet and Pods carry the pod template's annotation only).
	chartReason         = "Kueue's Helm chart (pod template annotation charts.kueue.x-k8s.io/config-checksum, label helm.sh/chart=kueue-0.19.2)"
	chartTemplateReason = "Kueue's Helm chart (pod template annotation charts.kueue.x-k8s.io/config-checksum)"
	portReason          = "container port visibility"
)

// objBuilder builds unstructured workloads the way Kueue's tests build typed ones:
// makeObj("Deployment", "ns", "name").container("c", "image").obj().
type objBuilder struct {
	u *unstructured.Unstructured
	// pod is the path to the pod (template): nil for a Pod, spec.template otherwise.
	pod []string
}

// makeObj starts an apps/v1 object of kind with an empty pod template, or a v1 Pod.
func makeObj(kind, namespace, name string) *objBuilder {
	b := &objBuilder{u: &unstructured.Unstructured{Object: map[string]any{}}}
	b.u.SetKind(kind)
	b.u.SetNamespace(namespace)
	b.u.SetName(name)
	if kind == "Pod" {
		b.u.SetAPIVersion("v1")
		return b
	}
	b.u.SetAPIVersion("apps/v1")
	b.pod = []string{"spec", "template"}
	return b
}

// field sets a raw value below the object's root; malformed-input tests use it to put
// values of the wrong type where the API has a fixed one.
func (b *objBuilder) field(value any, fields ...string) *objBuilder {
	Expect(unstructured.SetNestedField(b.u.Object, value, fields...)).To(Succeed())
	return b
}

// podField sets a raw value below the pod (template).
func (b *objBuilder) podField(value any, fields ...string) *objBuilder {
	return b.field(value, append(append([]string{}, b.pod...), fields...)...)
}

// appendContainer adds a container to list (containers or initContainers).
func (b *objBuilder) appendContainer(list string, c map[string]any) *objBuilder {
	path := append(append([]string{}, b.pod...), "spec", list)
	existing, _, err := unstructured.NestedSlice(b.u.Object, path...)
	Expect(err).NotTo(HaveOccurred())
	return b.field(append(existing, c), path...)
}

// container adds a container running image with args.
func (b *objBuilder) container(name, image string, args ...string) *objBuilder {
	return b.appendContainer("containers", containerMap(name, image, nil, args))
}

// commandContainer adds a container running image with command and args.
func (b *objBuilder) commandContainer(name, image string, command, args []string) *objBuilder {
	return b.appendContainer("containers", containerMap(name, image, command, args))
}

// initContainer adds an init container running image with args.
func (b *objBuilder) initContainer(name, image string, args ...string) *objBuilder {
	return b.appendContainer("initContainers", containerMap(name, image, nil, args))
}

// labels sets the object's own labels from key, value pairs.
func (b *objBuilder) labels(kv ...string) *objBuilder {
	return b.field(pairs(kv), "metadata", "labels")
}

// podLabels sets the pod (template)'s labels from key, value pairs.
func (b *objBuilder) podLabels(kv ...string) *objBuilder {
	return b.podField(pairs(kv), "metadata", "labels")
}

// owner adds an owner reference; controller marks it as the controller.
func (b *objBuilder) owner(apiVersion, kind, name string, controller bool) *objBuilder {
	refs, _, err := unstructured.NestedSlice(b.u.Object, "metadata", "ownerReferences")
	Expect(err).NotTo(HaveOccurred())
	refs = append(refs, map[string]any{
		"apiVersion": apiVersion, "kind": kind, "name": name,
		"uid": "00000000-0000-0000-0000-000000000001", "controller": controller,
	})
	return b.field(refs, "metadata", "ownerReferences")
}

func (b *objBuilder) obj() *unstructured.Unstructured { return b.u }

func containerMap(name, image string, command, args []string) map[string]any {
	c := map[string]any{"name": name, "image": image}
	if command != nil {
		c["command"] = anySlice(command)
	}
	if args != nil {
		c["args"] = anySlice(args)
	}
	return c
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func pairs(kv []string) map[string]any {
	Expect(len(kv)%2).To(BeZero(), "labels come in key, value pairs")
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// loadManifest reads one object from testdata.
func loadManifest(name string) *unstructured.Unstructured {
	data, err := os.ReadFile(filepath.Join("testdata", name))
	Expect(err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal(data, &u.Object)).To(Succeed())
	return u
}

// chartDeployment is Kueue's controller manager Deployment as its Helm chart renders it.
func chartDeployment() *unstructured.Unstructured {
	return loadManifest("kueue-chart-deployment.yaml")
}

// renamedCopy is Kueue's chart Deployment renamed, moved to another namespace and
// stripped of its labels: only its image and arguments still say Kueue.
func renamedCopy() *unstructured.Unstructured {
	u := chartDeployment()
	u.SetNamespace("team-a")
	u.SetName("batch-scheduler")
	u.SetLabels(nil)
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "labels")
	unstructured.RemoveNestedField(u.Object, "spec", "selector")
	return u
}

// replicaSetOf builds the ReplicaSet the Deployment controller creates for d.
func replicaSetOf(d *unstructured.Unstructured) *unstructured.Unstructured {
	template, _, err := unstructured.NestedMap(d.Object, "spec", "template")
	Expect(err).NotTo(HaveOccurred())
	rs := makeObj("ReplicaSet", d.GetNamespace(), d.GetName()+"-"+podTemplateHash).
		owner("apps/v1", "Deployment", d.GetName(), true).
		field(template, "spec", "template").
		podField(podTemplateHash, "metadata", "labels", "pod-template-hash").
		obj()
	rs.SetLabels(d.GetLabels())
	return rs
}

// podOf builds a Pod the ReplicaSet controller creates for rs.
func podOf(rs *unstructured.Unstructured) *unstructured.Unstructured {
	template, _, err := unstructured.NestedMap(rs.Object, "spec", "template")
	Expect(err).NotTo(HaveOccurred())
	pod := &unstructured.Unstructured{Object: template}
	pod.SetAPIVersion("v1")
	pod.SetKind("Pod")
	pod.SetNamespace(rs.GetNamespace())
	pod.SetName(rs.GetName() + "-x2x9k")
	pod.SetOwnerReferences(nil)
	return (&objBuilder{u: pod}).owner("apps/v1", "ReplicaSet", rs.GetName(), true).obj()
}
