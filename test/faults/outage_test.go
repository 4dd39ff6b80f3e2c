package faults

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kueue-guard/kueue-guard/test/fixtures"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// With no kueue-guard serving (the faults stop it between specs), the cluster
// keeps rolling out what keeps it running: kube-system, Kueue's and
// cert-manager's namespaces are outside the workload webhooks, and the
// second-Kueue-controller guard, which sees every namespace but kueue-guard's,
// fails open. Workloads elsewhere wait: fail closed.
var _ = Describe("a kueue-guard outage", func() {
	It("does not block a rollout in kube-system, and still holds workloads elsewhere", func() {
		start := time.Now()
		// Kueue's own controller Deployment, as its chart renders it: the
		// controller guard's match condition sends it to kueue-guard, which
		// is down; the guard fails open.
		system, err := testenv.KueueControllerDeployment("kueue", "kube-system")
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Client.Create(ctx, system, client.DryRunAll)).To(Succeed(),
			"a Kueue controller Deployment rolls out while kueue-guard is down")

		// Kueue's and cert-manager's namespaces are always outside the workload
		// webhooks: Kueue can be rolled, and cert-manager can renew
		// kueue-guard's own certificate, while kueue-guard is down.
		for _, ns := range []string{"kueue-system", "cert-manager"} {
			Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
		}
		kueue, err := testenv.KueueControllerDeployment("kueue", "kueue-system")
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Client.Create(ctx, kueue, client.DryRunAll)).To(Succeed(),
			"Kueue's controller Deployment rolls out in Kueue's namespace while kueue-guard is down")
		Expect(env.Client.Create(ctx, fixtures.Deployment("cert-manager", "cert-manager").Queue("q").Obj(), client.DryRunAll)).To(Succeed(),
			"cert-manager's namespace is outside the workload webhooks, even for a labeled Deployment")

		tenant := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenant-"}}
		Expect(env.Client.Create(ctx, tenant)).To(Succeed())
		err = env.Client.Create(ctx, fixtures.Job(tenant.Name, "j").Queue("q").Obj(), client.DryRunAll)
		Expect(err).To(MatchError(ContainSubstring("validate-workloads.kueue-guard.io")),
			"a tenant's workload is not admitted unjudged")
		AddReportEntry("kueue-guard outage", fmt.Sprintf(
			"no replica serving: Kueue's controller Deployment in kube-system and in kueue-system, and a Deployment in cert-manager, were admitted (%v); a queued Job in a tenant namespace was refused: %v",
			time.Since(start).Round(time.Millisecond),
			err,
		))
	})
})
