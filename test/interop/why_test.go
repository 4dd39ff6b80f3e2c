package interop

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/audit"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Four pending Jobs, each pending for another reason, and `kueue-guard why`
// run against the real Kueue's state of them:
//   - short (2 cpu) in "why-cq" (4 cpu, 3 held by busy): lack of quota;
//   - huge (10 cpu) in "why-cq": never;
//   - parked (1 cpu) in LocalQueue "held" (stopPolicy Hold): the queue
//     check's warning;
//   - small (1 cpu) in StrictFIFO "why-strict" (4 cpu, 3 held by busy2),
//     behind head (4 cpu): it fits, but head comes first.
var _ = Describe("why, on the real Kueue", Ordered, func() {
	const ns, flavor = "why", "why-flavor"

	BeforeAll(func() {
		cq := func(name string, strategy kueue.QueueingStrategy) *kueue.ClusterQueue {
			return &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kueue.ClusterQueueSpec{
				NamespaceSelector: &metav1.LabelSelector{}, QueueingStrategy: strategy,
				ResourceGroups: []kueue.ResourceGroup{{CoveredResources: []corev1.ResourceName{corev1.ResourceCPU},
					Flavors: []kueue.FlavorQuotas{{Name: flavor, Resources: []kueue.ResourceQuota{
						{Name: corev1.ResourceCPU, NominalQuota: resource.MustParse("4")}}}}}}}}
		}
		Expect(admin.Create(ctx, &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: flavor}})).To(Succeed())
		Expect(admin.Create(ctx, cq("why-cq", kueue.BestEffortFIFO))).To(Succeed())
		Expect(admin.Create(ctx, cq("why-strict", kueue.StrictFIFO))).To(Succeed())
		Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		for name, q := range map[string]string{"lq": "why-cq", "strict": "why-strict"} {
			Expect(admin.Create(ctx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(q)}})).To(Succeed())
		}
		Expect(admin.Create(ctx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held"},
			Spec: kueue.LocalQueueSpec{ClusterQueue: "why-cq", StopPolicy: new(kueue.Hold)}})).To(Succeed())
		Eventually(func(g Gomega) {
			for _, name := range []string{"why-cq", "why-strict"} {
				q := &kueue.ClusterQueue{}
				g.Expect(admin.Get(ctx, client.ObjectKey{Name: name}, q)).To(Succeed())
				g.Expect(meta.IsStatusConditionTrue(q.Status.Conditions, kueue.ClusterQueueActive)).To(BeTrue())
			}
		}, "30s").Should(Succeed())
		// The holders first, each admitted before the next job arrives.
		for _, j := range []struct {
			name, queue string
			cpu         int
		}{{"busy", "lq", 3}, {"busy2", "strict", 3}} {
			Expect(admin.Create(ctx, simJob(ns, j.name, j.queue, "", 1, j.cpu, "", false))).To(Succeed())
		}
		Eventually(func(g Gomega) {
			o := kueueOutcomes(g, ns)
			g.Expect(o[ns+"/busy"].admitted && o[ns+"/busy2"].admitted).To(BeTrue())
		}, "30s", "200ms").Should(Succeed())
		Expect(admin.Create(ctx, simJob(ns, "head", "strict", "", 1, 4, "", false))).To(Succeed())
		var headCreated time.Time
		Eventually(func(g Gomega) {
			o := kueueOutcomes(g, ns)
			g.Expect(o).To(HaveKey(ns + "/head"))
			headCreated = o[ns+"/head"].wl.CreationTimestamp.Time
		}, "30s", "200ms").Should(Succeed())
		// Creation times have one-second resolution and Kueue breaks a tie by
		// uid, so small must be created in a later second to queue behind head.
		Eventually(func() bool { return time.Now().After(headCreated.Add(time.Second)) }, "5s", "50ms").Should(BeTrue())
		for _, j := range []struct {
			name, queue string
			cpu         int
		}{{"short", "lq", 2}, {"huge", "lq", 10}, {"parked", "held", 1}, {"small", "strict", 1}} {
			Expect(admin.Create(ctx, simJob(ns, j.name, j.queue, "", 1, j.cpu, "", false))).To(Succeed())
		}
		// Kueue has tried the two it can try (the parked and the small one it
		// never tries), and made a Workload of each.
		Eventually(func(g Gomega) {
			o := kueueOutcomes(g, ns)
			g.Expect(o).To(HaveKey(ns + "/short"))
			g.Expect(o).To(HaveKey(ns + "/huge"))
			list := &kueue.WorkloadList{}
			g.Expect(admin.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(7))
			// What the wait above is for, checked on the stored Workload.
			for _, wl := range list.Items {
				if len(wl.OwnerReferences) > 0 && wl.OwnerReferences[0].Name == "small" {
					g.Expect(wl.CreationTimestamp.Time).To(BeTemporally(">", headCreated))
				}
			}
		}, "30s", "200ms").Should(Succeed())
	})

	why := func(args ...string) *audit.WhyReport {
		c := &audit.WhyCLI{}
		fs := pflag.NewFlagSet("why", pflag.ContinueOnError)
		c.AddFlags(fs)
		Expect(fs.Parse(append([]string{"--kubeconfig", env.KubeconfigPath, "-o", "json"}, args...))).To(Succeed())
		var out, errOut bytes.Buffer
		code, err := c.Run(ctx, fs, fs.Args(), &out, &errOut)
		Expect(err).NotTo(HaveOccurred(), errOut.String())
		Expect(code).To(Equal(0))
		rep := &audit.WhyReport{}
		Expect(json.Unmarshal(out.Bytes(), rep)).To(Succeed())
		return rep
	}

	DescribeTable("names the cause of one pending workload",
		func(name, cause string, summary string) {
			rep := why(ns + "/job/" + name)
			Expect(rep.Answers).To(HaveLen(1))
			a := rep.Answers[0]
			Expect(a.Cause).To(Equal(cause), a.Summary)
			Expect(a.Summary).To(ContainSubstring(summary))
			Expect(a.Workload).NotTo(BeNil())
		},
		Entry("lack of quota", "short", audit.CauseQuota, "cpu of flavor why-flavor: needs 2, 1 available"),
		Entry("never fits", "huge", audit.CauseNever, "ExceedsMaxQuota"),
		Entry("a queue check's warning", "parked", audit.CausePolicy, `warn kueue_guard.queue_on_hold: LocalQueue "held" is on hold`),
		Entry("behind others", "small", audit.CauseAhead, "ahead of it in StrictFIFO ClusterQueue why-strict"),
	)

	It("answers for every pending workload of a namespace with --all, and says an admitted one is admitted", func() {
		rep := why("--all", "-n", ns)
		causes := map[string]string{}
		for _, a := range rep.Answers {
			causes[a.Name] = a.Cause
		}
		Expect(causes).To(Equal(map[string]string{"short": audit.CauseQuota, "huge": audit.CauseNever,
			"parked": audit.CausePolicy, "small": audit.CauseAhead, "head": audit.CauseQuota}))
		Expect(why(ns + "/job/busy").Answers[0].Cause).To(Equal(audit.CauseAdmitted))
	})

	It("says it in text, cause first", func() {
		c := &audit.WhyCLI{}
		fs := pflag.NewFlagSet("why", pflag.ContinueOnError)
		c.AddFlags(fs)
		Expect(fs.Parse([]string{"--kubeconfig", env.KubeconfigPath, ns + "/job/short"})).To(Succeed())
		var out, errOut bytes.Buffer
		code, err := c.Run(ctx, fs, fs.Args(), &out, &errOut)
		Expect(err).NotTo(HaveOccurred(), errOut.String())
		Expect(code).To(Equal(0))
		Expect(out.String()).To(HavePrefix("Job why/short: quota — ClusterQueue why-cq lacks quota now: cpu of flavor why-flavor: needs 2, 1 available"))
		Expect(out.String()).To(ContainSubstring("QuotaReserved=False WaitingForQuota: couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor why-flavor, 1 more needed"))
		AddReportEntry("why, in text", out.String(), ReportEntryVisibilityAlways)
	})

	It("refuses a workload that does not exist, or a kind Kueue does not admit", func() {
		for _, target := range []string{ns + "/job/nope", ns + "/configmap/x", "just-a-name"} {
			c := &audit.WhyCLI{}
			fs := pflag.NewFlagSet("why", pflag.ContinueOnError)
			c.AddFlags(fs)
			Expect(fs.Parse([]string{"--kubeconfig", env.KubeconfigPath, target})).To(Succeed())
			var out, errOut bytes.Buffer
			code, err := c.Run(ctx, fs, fs.Args(), &out, &errOut)
			Expect(err).To(HaveOccurred(), target)
			Expect(code).To(Equal(2), target)
		}
	})
})
