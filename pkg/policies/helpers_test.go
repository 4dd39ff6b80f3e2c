package policies_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/policies"

	. "github.com/onsi/gomega"
)

// shippedDir is the repository's policy directory.
const shippedDir = "../../policies"

const gpu = "nvidia.com/gpu"

// writeFiles writes files (relative name → content) under dir.
func writeFiles(dir string, files map[string]string) {
	for name, content := range files {
		p := filepath.Join(dir, name)
		Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
		Expect(os.WriteFile(p, []byte(content), 0o644)).To(Succeed())
	}
}

// policy is a Rego v1 policy module with optional METADATA enforcement.
func policy(pkg, enforcement, rules string) string {
	var b strings.Builder
	if enforcement != "" {
		fmt.Fprintf(&b, "# METADATA\n# title: %s policy\n# description: A test policy.\n# custom:\n#   enforcement: %s\n", pkg, enforcement)
	}
	fmt.Fprintf(&b, "package %s\n\n%s\n", pkg, rules)
	return b.String()
}

// newEngine builds an engine on dir with its own registry.
func newEngine(dir string, mutate ...func(*policies.Options)) (*policies.Engine, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	o := policies.Options{Directory: dir, Registerer: reg, Resync: -1}
	for _, m := range mutate {
		m(&o)
	}
	e, err := policies.NewEngine(o)
	Expect(err).NotTo(HaveOccurred())
	return e, reg
}

// loadedEngine is newEngine followed by a successful Load.
func loadedEngine(dir string, mutate ...func(*policies.Options)) *policies.Engine {
	e, _ := newEngine(dir, mutate...)
	Expect(e.Load()).To(Succeed())
	return e
}

func namespace(name string, labels, annotations map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}}
}

func localQueue(ns, name, cq string) *kueue.LocalQueue {
	return &kueue.LocalQueue{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(cq)},
	}
}

// quota is one flavor's quota of one resource, with the usage Kueue reports.
type quota struct {
	flavor, resource, nominal string
	borrowing, lending        string // "" = unset
	used, reserved            string // "" = not reported
}

func ptrQuantity(s string) *resource.Quantity {
	if s == "" {
		return nil
	}
	q := resource.MustParse(s)
	return &q
}

// clusterQueue builds a ClusterQueue with one resource group per flavor, in the
// order the quotas are given.
func clusterQueue(name, cohort string, quotas ...quota) *kueue.ClusterQueue {
	cq := &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: name}}
	cq.Spec.CohortName = kueue.CohortReference(cohort)
	groups := map[string]int{}
	usage := map[string]int{}
	reservation := map[string]int{}
	for _, q := range quotas {
		gi, ok := groups[q.flavor]
		if !ok {
			gi = len(cq.Spec.ResourceGroups)
			groups[q.flavor] = gi
			cq.Spec.ResourceGroups = append(cq.Spec.ResourceGroups, kueue.ResourceGroup{
				Flavors: []kueue.FlavorQuotas{{Name: kueue.ResourceFlavorReference(q.flavor)}},
			})
		}
		rg := &cq.Spec.ResourceGroups[gi]
		rg.CoveredResources = append(rg.CoveredResources, corev1.ResourceName(q.resource))
		rg.Flavors[0].Resources = append(rg.Flavors[0].Resources, kueue.ResourceQuota{
			Name: corev1.ResourceName(q.resource), NominalQuota: resource.MustParse(q.nominal),
			BorrowingLimit: ptrQuantity(q.borrowing), LendingLimit: ptrQuantity(q.lending),
		})
		addUsage(&cq.Status.FlavorsUsage, usage, q.flavor, q.resource, q.used)
		addUsage(&cq.Status.FlavorsReservation, reservation, q.flavor, q.resource, q.reserved)
	}
	return cq
}

func addUsage(list *[]kueue.FlavorUsage, index map[string]int, flavor, res, amount string) {
	if amount == "" {
		return
	}
	i, ok := index[flavor]
	if !ok {
		i = len(*list)
		index[flavor] = i
		*list = append(*list, kueue.FlavorUsage{Name: kueue.ResourceFlavorReference(flavor)})
	}
	(*list)[i].Resources = append((*list)[i].Resources, kueue.ResourceUsage{Name: corev1.ResourceName(res), Total: resource.MustParse(amount)})
}

func snapshot(objs ...client.Object) *cluster.Snapshot {
	s, err := cluster.NewSnapshot(objs...)
	Expect(err).NotTo(HaveOccurred())
	return s
}

// createRequest is a CREATE of obj by alice, with the object's JSON as the
// server receives it.
func createRequest(obj *unstructured.Unstructured) *admission.Request {
	raw, err := obj.MarshalJSON()
	Expect(err).NotTo(HaveOccurred())
	return &admission.Request{
		Raw:       raw,
		Size:      len(raw),
		UID:       "0000-1111",
		Operation: admissionv1.Create,
		Kind:      obj.GroupVersionKind(),
		Namespace: obj.GetNamespace(),
		Name:      obj.GetName(),
		UserInfo:  authenticationv1.UserInfo{Username: "alice", Groups: []string{"ml-team", "system:authenticated"}},
		Object:    obj,
	}
}

// validate runs the validating pipeline with only the policy step.
func validate(e *policies.Engine, req *admission.Request, view cluster.View) *admission.Decision {
	return validateWith(policies.NewStep(e), req, view)
}

// validateWith runs the validating pipeline with only the given policy step.
func validateWith(step *policies.Step, req *admission.Request, view cluster.View) *admission.Decision {
	p := admission.NewPipeline(nil, nil, admission.Steps{Validating: []admission.ValidationStep{step}})
	d, err := p.Validate(context.Background(), req, view)
	Expect(err).NotTo(HaveOccurred())
	return d
}

// rules returns "rule/enforcement" of every violation, for compact assertions.
func rules(d *admission.Decision) []string {
	out := make([]string, 0, len(d.Violations))
	for _, v := range d.Violations {
		out = append(out, v.Rule+"/"+string(v.Enforcement))
	}
	return out
}

// metricValue reads a counter or gauge.
func metricValue(m prometheus.Metric) float64 {
	var out dto.Metric
	Expect(m.Write(&out)).To(Succeed())
	if out.Counter != nil {
		return out.Counter.GetValue()
	}
	return out.Gauge.GetValue()
}
