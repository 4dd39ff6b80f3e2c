package equivalence

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kueue-guard/kueue-guard/pkg/review"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// applyOrder creates what others refer to first, and LocalQueues last (the
// cache barrier below relies on the order within each kind).
var applyOrder = map[string]int{"Namespace": 0, "ResourceFlavor": 1, "WorkloadPriorityClass": 2, "ClusterQueue": 3,
	"ConfigMap": 4, "LocalQueue": 5}

// applyClusterState applies the review's cluster state to the API server: the
// state file, and the Namespaces and queues of the corpus itself (the reviewer
// adds those to its state too). Deployments of the state file are not applied:
// the corpus creates a Deployment of the same name (Kueue's controller, as an
// upgrade), which must be a CREATE for both sides; under the managed profile the
// controller guard reads controllers.allowed, not the running Deployments, so
// the decisions do not depend on them.
func applyClusterState() {
	GinkgoHelper()
	stateManifests, errs := review.Read([]string{statePath}, nil)
	Expect(errs).To(BeEmpty())
	corpus, errs := review.Read([]string{corpusDir}, nil)
	Expect(errs).To(BeEmpty())
	var objs []*unstructured.Unstructured
	for _, m := range stateManifests {
		if m.Object.GetKind() != "Deployment" {
			objs = append(objs, m.Object.DeepCopy())
		}
	}
	for _, m := range corpus {
		if review.IsManifestStateKind(m.Object.GroupVersionKind().GroupKind()) {
			objs = append(objs, m.Object.DeepCopy())
		}
	}
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		return cmp.Compare(applyOrder[a.GetKind()], applyOrder[b.GetKind()])
	})
	for _, o := range objs {
		apply(o)
	}
	waitForServerCache()
}

// apply creates an object, merging into an existing Namespace (default), and
// writes its status through the status subresource.
func apply(o *unstructured.Unstructured) {
	GinkgoHelper()
	status, hasStatus := o.Object["status"]
	delete(o.Object, "status")
	err := env.Client.Create(ctx, o)
	if apierrors.IsAlreadyExists(err) && o.GetKind() == "Namespace" {
		existing := &unstructured.Unstructured{}
		existing.SetGroupVersionKind(o.GroupVersionKind())
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(o), existing)).To(Succeed())
		existing.SetLabels(merge(existing.GetLabels(), o.GetLabels()))
		existing.SetAnnotations(merge(existing.GetAnnotations(), o.GetAnnotations()))
		err = env.Client.Update(ctx, existing)
	}
	Expect(err).NotTo(HaveOccurred(), "applying %s %s", o.GetKind(), o.GetName())
	if hasStatus {
		o.Object["status"] = status
		Expect(env.Client.Status().Update(ctx, o)).To(Succeed(), "writing the status of %s %s", o.GetKind(), o.GetName())
	}
}

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	maps.Copy(out, a)
	maps.Copy(out, b)
	return out
}

const probeNamespace = "zz-review-probe"

// waitForServerCache waits until the server's informers have seen everything
// applied: it creates a probe Namespace, ClusterQueue (on hold) and LocalQueue
// after all others, and dry-runs Jobs in the probe namespace until the server
// defaults their queue and warns that the ClusterQueue is on hold. Each informer
// delivers events in order, so seeing the probes means having seen the rest. It
// also learns the test client's user, as the API server reports it to webhooks.
func waitForServerCache() {
	GinkgoHelper()
	apply(mustObject(fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q,
		"annotations":{"kueue-guard.io/default-queue":"probe"}}}`, probeNamespace)))
	apply(mustObject(`{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"ClusterQueue","metadata":{"name":"zz-review-probe"},
		"spec":{"stopPolicy":"Hold","namespaceSelector":{},"resourceGroups":[{"coveredResources":["cpu"],
		"flavors":[{"name":"default-flavor","resources":[{"name":"cpu","nominalQuota":"1"}]}]}]}}`))
	apply(mustObject(fmt.Sprintf(`{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"LocalQueue",
		"metadata":{"name":"probe","namespace":%q},"spec":{"clusterQueue":"zz-review-probe"}}`, probeNamespace)))
	n := 0
	Eventually(func(g Gomega) {
		n++
		name := fmt.Sprintf("probe-%d", n)
		job := fixtures.Job(probeNamespace, name).Obj()
		g.Expect(env.Client.Create(ctx, job, client.DryRunAll)).To(Succeed())
		var warned bool
		for _, o := range rec.get(objectKey("Job", probeNamespace, name)) {
			user = o.request.UserInfo
			for _, w := range o.response.Warnings {
				if w == `ClusterQueue "zz-review-probe" is on hold (stopPolicy Hold): nothing is admitted until it resumes` {
					warned = true
				}
			}
		}
		g.Expect(warned).To(BeTrue(), "the server has not seen the probe queues yet")
	}).WithTimeout(time.Minute).Should(Succeed())
	Expect(user.Username).NotTo(BeEmpty())
}

func mustObject(j string) *unstructured.Unstructured {
	GinkgoHelper()
	u := &unstructured.Unstructured{}
	Expect(u.UnmarshalJSON([]byte(j))).To(Succeed())
	return u
}
