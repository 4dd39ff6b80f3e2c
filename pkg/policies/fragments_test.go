package policies_test

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the input's cluster parts, cached per object version", func() {
	// The policy reports what it saw of the namespace and the ClusterQueue.
	const echo = `package echo

deny contains sprintf("team=%s max=%v", [object.get(input.namespace.labels, "team", ""), input.clusterQueue.resources["nvidia.com/gpu"].max])
`
	var step *policies.Step
	BeforeEach(func() {
		dir := GinkgoT().TempDir()
		writeFiles(dir, map[string]string{"echo.rego": echo})
		step = policies.NewStep(loadedEngine(dir))
	})

	// view is the cluster at one version: the namespace's labels, and a
	// lender in the cohort with lend GPUs.
	view := func(nsVersion, team, lend string) *cluster.Snapshot {
		ns := namespace("ml", map[string]string{"team": team}, nil)
		ns.UID, ns.ResourceVersion = "ns-uid", nsVersion
		cq := clusterQueue("cq", "research", quota{flavor: "a100", resource: gpu, nominal: "4"})
		cq.UID, cq.ResourceVersion = "cq-uid", "7"
		lq := localQueue("ml", "lq", "cq")
		lq.UID, lq.ResourceVersion = "lq-uid", "3"
		return snapshot(ns, lq, cq, &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "a100"}},
			clusterQueue("lender", "research", quota{flavor: "a100", resource: gpu, nominal: lend}))
	}
	seen := func(v cluster.View) []string {
		d := validateWith(step, createRequest(fixtures.Job("ml", "j").Queue("lq").Obj()), v)
		return messagesOf(d, "echo")
	}

	It("follows a new version of the namespace, and the capacity of an unchanged ClusterQueue", func() {
		Expect(seen(view("1", "a", "4"))).To(ConsistOf("team=a max=8"))
		Expect(seen(view("2", "b", "4"))).To(ConsistOf("team=b max=8"), "a new resourceVersion is a new term")
		Expect(seen(view("2", "b", "12"))).To(ConsistOf("team=b max=16"), "the same ClusterQueue with more to borrow")
	})

	It("reuses the term while the version is the same", func() {
		Expect(seen(view("5", "a", "4"))).To(ConsistOf("team=a max=8"))
		// The same resourceVersion is the same object: what the cache holds is
		// what the API server stored, so the cached term stands.
		Expect(seen(view("5", "changed-behind-the-cache", "4"))).To(ConsistOf("team=a max=8"))
	})

	It("shares cached terms between concurrent evaluations (run under -race)", func() {
		shipped := policies.NewStep(loadedEngine(shippedDir))
		v := view("1", "a", "4")
		want := rules(validateWith(shipped, createRequest(gpuJob("ml-job", 4, "4")), v))
		Expect(want).NotTo(BeEmpty())
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				defer GinkgoRecover()
				for range 20 {
					d := validateWith(shipped, createRequest(gpuJob("ml-job", 4, "4")), v)
					Expect(rules(d)).To(Equal(want))
				}
			})
		}
		wg.Wait()
	})
})
