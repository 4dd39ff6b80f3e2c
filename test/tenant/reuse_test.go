package tenant

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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

	// kueue-guard builds only the fields the policies read of a container
	// (its requests, limits, name, restartPolicy), not its environment: a
	// tenant's workloads that differ only there share a decision, and no
	// difference in a field a policy reads can hide behind one.
	It("judge each container's requests, whatever environment rides along", func() {
		withEnv := func(j *batchv1.Job, value string) *batchv1.Job {
			var env []corev1.EnvVar
			for i := range 50 {
				env = append(env, corev1.EnvVar{Name: fmt.Sprintf("SETTING_%d", i), Value: value})
			}
			j.Spec.Template.Spec.Containers[0].Env = env
			return j
		}
		createJob := func(j *batchv1.Job) error {
			err := alice.Create(ctx, j)
			if err == nil {
				DeferCleanup(func() { _ = admin.Delete(ctx, j, client.PropagationPolicy("Background")) })
			}
			return err
		}
		// A sidecar runs as long as the pod: one without requests runs on
		// quota Kueue never reserved.
		withSidecar := func(j *batchv1.Job, res corev1.ResourceRequirements) *batchv1.Job {
			j.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: "busybox",
				RestartPolicy: new(corev1.ContainerRestartPolicyAlways), Resources: res}}
			return j
		}
		limits := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("32Mi")}
		for _, value := range []string{"a", "b", "c"} {
			Expect(createJob(withEnv(job(1, 0), value))).To(Succeed())
			denied(createJob(withSidecar(withEnv(job(1, 0), value), corev1.ResourceRequirements{})),
				"kueue_guard.require_resource_requests")
			// Kueue takes a limit as the request: the policy reads limits too.
			Expect(createJob(withSidecar(withEnv(job(1, 0), value), corev1.ResourceRequirements{Limits: limits}))).To(Succeed())
		}
	})
})
