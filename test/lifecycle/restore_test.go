package lifecycle

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/kueuestate"
	"github.com/kueue-guard/kueue-guard/pkg/review"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// kueueCLI runs one of the kueue commands against the control plane, as an
// admin with a kubeconfig would.
func kueueCLI(cmd, dir string) (int, string) {
	GinkgoHelper()
	kube := review.NewKubeFlags()
	*kube.KubeConfig = env.KubeconfigPath
	c := &kueuestate.CLI{Kube: kube, Dir: dir, Timeout: time.Minute}
	var out, errOut bytes.Buffer
	var code int
	switch cmd {
	case "export":
		code = c.Export(ctx, &out, &errOut)
	case "diff":
		code = c.Diff(ctx, &out, &errOut)
	case "restore":
		code = c.Restore(ctx, &out, &errOut)
	}
	AddReportEntry(fmt.Sprintf("kueue-guard kueue %s (exit %d)", cmd, code), out.String()+errOut.String())
	return code, out.String() + errOut.String()
}

// jobOf is a queued Job asking for one CPU in the restore queue.
func jobOf(name string) *batchv1.Job {
	j := queuedJob(name)
	j.Labels[kueueQueueLabel] = "restore-lq"
	j.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
	return j
}

const kueueQueueLabel = "kueue.x-k8s.io/queue-name"

func admitted(name string) func(Gomega) {
	return func(g Gomega) {
		j := &batchv1.Job{}
		g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: team, Name: name}, j)).To(Succeed())
		g.Expect(j.Spec.Suspend).To(HaveValue(BeFalse()), "%s admitted and resumed by Kueue", name)
	}
}

// wipeKueue deletes every Kueue object, Workloads included, as uninstalling
// Kueue (its CRDs deleted) does; with the manager stopped, nobody removes
// Kueue's finalizers, so they are cleared first.
func wipeKueue() {
	GinkgoHelper()
	kinds := []string{"Workload"}
	for _, k := range kueuestate.Kinds {
		kinds = append(kinds, k.Kind)
	}
	for _, kind := range kinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(kueue.SchemeGroupVersion.WithKind(kind + "List"))
		Expect(admin.List(ctx, list)).To(Succeed())
		for i := range list.Items {
			o := &list.Items[i]
			if len(o.GetFinalizers()) > 0 {
				Expect(admin.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
			}
			Expect(client.IgnoreNotFound(admin.Delete(ctx, o))).To(Succeed())
		}
		Eventually(func(g Gomega) {
			g.Expect(admin.List(ctx, list)).To(Succeed())
			g.Expect(list.Items).To(BeEmpty(), "every %s deleted", kind)
		}).WithTimeout(30 * time.Second).Should(Succeed())
	}
}

// The reinstall runbook: export, Kueue uninstalled (every Kueue object
// deleted), Kueue installed again, restore, diff; the job that was waiting for
// quota before is admitted after.
var _ = Describe("the Kueue objects across a reinstall", Ordered, func() {
	var dir string

	BeforeAll(func() {
		Eventually(serving).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal(1.0))
		dir = filepath.Join(GinkgoT().TempDir(), "kueue-backup")
		for _, o := range []client.Object{
			&kueue.Cohort{ObjectMeta: metav1.ObjectMeta{Name: "research"}},
			&kueue.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000, Description: "urgent work"},
			&kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "restore-cq", Labels: map[string]string{"team": "lifecycle"}},
				Spec: kueue.ClusterQueueSpec{
					CohortName:        "research",
					NamespaceSelector: &metav1.LabelSelector{},
					ResourceGroups: []kueue.ResourceGroup{{
						CoveredResources: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory},
						Flavors: []kueue.FlavorQuotas{{Name: "default", Resources: []kueue.ResourceQuota{
							{Name: corev1.ResourceCPU, NominalQuota: resource.MustParse("1")},
							{Name: corev1.ResourceMemory, NominalQuota: resource.MustParse("1Gi")},
						}}},
					}},
				}},
			&kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "restore-lq"},
				Spec: kueue.LocalQueueSpec{ClusterQueue: "restore-cq"}},
		} {
			Expect(admin.Create(ctx, o)).To(Succeed())
		}
	})

	It("exports them cleaned for Git, one file per kind in apply order", func() {
		code, out := kueueCLI("export", dir)
		Expect(code).To(Equal(kueuestate.ExitOK), out)
		for _, f := range []string{"02-resourceflavors.yaml", "03-cohorts.yaml", "04-workloadpriorityclasses.yaml",
			"09-clusterqueues.yaml", "10-localqueues.yaml"} {
			Expect(filepath.Join(dir, f)).To(BeARegularFile())
		}
		cqs, err := os.ReadFile(filepath.Join(dir, "09-clusterqueues.yaml"))
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("09-clusterqueues.yaml", string(cqs))
		Expect(string(cqs)).To(ContainSubstring("name: restore-cq"))
		Expect(string(cqs)).To(ContainSubstring("cohortName: research"))
		for _, gone := range []string{"status:", "uid:", "resourceVersion:", "generation:", "creationTimestamp:",
			"managedFields:", "resource-in-use", "queueingStrategy:"} {
			Expect(string(cqs)).NotTo(ContainSubstring(gone), "a ClusterQueue export holds no %s", gone)
		}
	})

	It("finds nothing missing while Kueue is installed", func() {
		code, out := kueueCLI("diff", dir)
		Expect(code).To(Equal(kueuestate.ExitOK), out)
	})

	It("lists every missing object once Kueue is uninstalled, while a queued job waits", func() {
		Expect(bob.Create(ctx, jobOf("hog"))).To(Succeed())
		Eventually(admitted("hog")).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		Expect(bob.Create(ctx, jobOf("survivor"))).To(Succeed())
		Consistently(func() *bool {
			j := &batchv1.Job{}
			Expect(admin.Get(ctx, client.ObjectKey{Namespace: team, Name: "survivor"}, j)).To(Succeed())
			return j.Spec.Suspend
		}).WithTimeout(2*time.Second).Should(HaveValue(BeTrue()), "no quota left: it waits")

		Expect(kq.Stop()).To(Succeed())
		Expect(admin.Delete(ctx, jobOf("hog"), client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		wipeKueue()
		code, out := kueueCLI("diff", dir)
		Expect(code).To(Equal(kueuestate.ExitDiffers), out)
		Expect(out).To(ContainSubstring("missing  ClusterQueue restore-cq"))
		Expect(out).To(ContainSubstring("missing  LocalQueue lifecycle/restore-lq"))
	})

	It("restores them after the reinstall: every ClusterQueue active, no diff, and the waiting job admitted", func() {
		Expect(kq.Resume(ctx)).To(Succeed())
		code, out := kueueCLI("restore", dir)
		Expect(code).To(Equal(kueuestate.ExitOK), out)
		Expect(out).To(ContainSubstring("active   ClusterQueue restore-cq"))
		code, out = kueueCLI("diff", dir)
		Expect(code).To(Equal(kueuestate.ExitOK), out)
		Eventually(admitted("survivor")).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		j := &batchv1.Job{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: team, Name: "survivor"}, j)).To(Succeed())
		Expect(j.Spec.Suspend).To(Equal(new(false)))
	})
})
