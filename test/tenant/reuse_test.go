package tenant

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// kueue-guard reuses a policy decision for a workload whose input, in every
// part the policies read, equals one judged before. A tenant must not be able
// to ride an earlier answer: not with a new name, and not after the cluster
// state the policies read has changed.
var _ = Describe("decisions reused for workloads of one shape", func() {
	setCap := func(limit string) {
		ns := &corev1.Namespace{}
		Expect(admin.Get(ctx, client.ObjectKey{Name: team}, ns)).To(Succeed())
		ns.Labels["kueue-guard.io/max-gpus"] = limit
		Expect(admin.Update(ctx, ns)).To(Succeed())
	}
	create := func(gpus int64) error {
		j := job(1, gpus)
		err := alice.Create(ctx, j)
		if err == nil {
			DeferCleanup(func() { _ = admin.Delete(ctx, j, client.PropagationPolicy("Background")) })
		}
		return err
	}

	It("refuse an over-cap shape under every name, admit an allowed one every time, and follow the namespace's cap when it changes", func() {
		for range 3 {
			denied(create(6), "kueue_guard.max_gpus_per_workload")
		}
		for range 3 {
			Expect(create(2)).To(Succeed())
		}
		// The cap is the namespace's label, which the policies read: the
		// same shape gets a new decision once it changes, both ways.
		DeferCleanup(setCap, gpuLimit)
		setCap("16")
		// kueue-guard reads the namespace from its cache: it follows within moments.
		Eventually(func() error { return create(6) }).WithTimeout(30 * time.Second).Should(Succeed())
		setCap(gpuLimit)
		Eventually(func(g Gomega) {
			err := create(6)
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring("[kueue_guard.max_gpus_per_workload]"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		denied(create(6), "kueue_guard.max_gpus_per_workload")
	})
})
