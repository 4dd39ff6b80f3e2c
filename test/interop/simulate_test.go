package interop

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/review"
	"github.com/kueue-guard/kueue-guard/pkg/schedsim"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// simScenarios is how many generated scenarios the agreement spec runs.
const simScenarios = 200

// outcome is what Kueue did with a workload: admitted (with its flavors per
// pod set), or pending with its reason.
type outcome struct {
	admitted bool
	// preempting: Kueue is evicting other workloads to admit it.
	preempting bool
	reason     string
	flavors    map[string]map[string]string
	wl         *kueue.Workload
}

// kueueOutcomes reads every Workload of the namespaces named with prefix, by
// namespace and owner name; a Workload Kueue has not decided yet has no entry.
func kueueOutcomes(g Gomega, prefix string) map[string]outcome {
	list := &kueue.WorkloadList{}
	g.Expect(admin.List(ctx, list)).To(Succeed())
	out := map[string]outcome{}
	for i := range list.Items {
		wl := &list.Items[i]
		if !strings.HasPrefix(wl.Namespace, prefix) || len(wl.OwnerReferences) == 0 {
			continue
		}
		key := wl.Namespace + "/" + wl.OwnerReferences[0].Name
		c := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved)
		switch {
		case c == nil:
		case c.Status == metav1.ConditionTrue && wl.Status.Admission != nil:
			o := outcome{admitted: true, flavors: map[string]map[string]string{}, wl: wl}
			for _, ps := range wl.Status.Admission.PodSetAssignments {
				f := map[string]string{}
				for r, fl := range ps.Flavors {
					f[string(r)] = string(fl)
				}
				o.flavors[string(ps.Name)] = f
			}
			out[key] = o
		case c.Reason == kueue.WorkloadQuotaReservedReasonWaitingForPreemptedWorkloads:
			out[key] = outcome{preempting: true, reason: c.Reason, wl: wl}
		default:
			out[key] = outcome{reason: c.Reason, wl: wl}
		}
	}
	return out
}

func predictedFlavors(s *review.Simulation) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, ps := range s.PodSets {
		out[ps.Name] = ps.Flavors
	}
	return out
}

// agrees compares a prediction with Kueue's first decision; "" when they agree.
func agrees(p *review.Simulation, o outcome) string {
	switch {
	case p.Verdict == schedsim.Now && o.preempting && len(p.Preempts) == 0:
		return "predicted now without preemption, Kueue is preempting: " + condMessage(o.wl)
	case p.Verdict == schedsim.Now && o.preempting:
		return "" // checkPreemptions compares whom
	case p.Verdict != schedsim.Now && o.preempting:
		return fmt.Sprintf("predicted %s (%s: %s), Kueue is preempting for it: %s", p.Verdict, p.Reason, p.Message, condMessage(o.wl))
	case p.Verdict == schedsim.Now && !o.admitted:
		return fmt.Sprintf("predicted now, Kueue keeps it pending: %s %s", o.reason, condMessage(o.wl))
	case p.Verdict == schedsim.Now && !maps.EqualFunc(predictedFlavors(p), o.flavors, maps.Equal):
		return fmt.Sprintf("predicted flavors %v, Kueue assigned %v", predictedFlavors(p), o.flavors)
	case p.Verdict != schedsim.Now && o.admitted:
		return fmt.Sprintf("predicted %s (%s: %s), Kueue admitted it to %v", p.Verdict, p.Reason, p.Message, o.flavors)
	case p.Verdict == schedsim.Wait && o.reason != kueue.WorkloadQuotaReservedReasonWaitingForQuota:
		return fmt.Sprintf("predicted wait, Kueue says %s: %s", o.reason, condMessage(o.wl))
	case p.Verdict == schedsim.Never && o.reason != kueue.WorkloadQuotaReservedReasonExceedsMaxQuota &&
		o.reason != kueue.WorkloadQuotaReservedReasonNoMatchingFlavor:
		return fmt.Sprintf("predicted never (%s), Kueue says %s: %s", p.Reason, o.reason, condMessage(o.wl))
	}
	return ""
}

func condMessage(wl *kueue.Workload) string {
	if wl == nil {
		return ""
	}
	if c := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved); c != nil {
		return c.Message
	}
	return ""
}

var _ = Describe("simulate agrees with what the real Kueue then does", Ordered, func() {
	var scenarios []*scenario

	BeforeAll(func() {
		scenarios = generateScenarios(simScenarios)
		for _, f := range []*kueue.ResourceFlavor{
			{ObjectMeta: metav1.ObjectMeta{Name: simFlavorX}, Spec: kueue.ResourceFlavorSpec{NodeLabels: map[string]string{simPoolLabel: "x"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: simFlavorY}, Spec: kueue.ResourceFlavorSpec{NodeLabels: map[string]string{simPoolLabel: "y"},
				NodeTaints: []corev1.Taint{{Key: simTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}}}},
			{ObjectMeta: metav1.ObjectMeta{Name: simFlavorZ}, Spec: kueue.ResourceFlavorSpec{NodeLabels: map[string]string{simPoolLabel: "z"}}},
		} {
			Expect(admin.Create(ctx, f)).To(Succeed())
		}
		for name, v := range map[string]int32{simLow: 10, simHigh: 1000} {
			Expect(admin.Create(ctx, &kueue.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: v})).To(Succeed())
		}
		for _, s := range scenarios {
			Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.namespace}})).To(Succeed())
			Expect(admin.Create(ctx, s.cohort)).To(Succeed())
			Expect(admin.Create(ctx, s.target)).To(Succeed())
			Expect(admin.Create(ctx, s.sibling)).To(Succeed())
			for q, cq := range map[string]string{s.targetQ: s.target.Name, s.siblingQ: s.sibling.Name} {
				Expect(admin.Create(ctx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: q},
					Spec: kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(cq)}})).To(Succeed())
			}
		}
		Eventually(func(g Gomega) {
			list := &kueue.ClusterQueueList{}
			g.Expect(admin.List(ctx, list)).To(Succeed())
			active := 0
			for _, cq := range list.Items {
				if strings.HasPrefix(cq.Name, "sim-") && meta.IsStatusConditionTrue(cq.Status.Conditions, kueue.ClusterQueueActive) {
					active++
				}
			}
			g.Expect(active).To(Equal(2 * simScenarios))
		}, "2m", "500ms").Should(Succeed())
		// The jobs already there, then Kueue's decision on each of them.
		// The target's jobs first, then the sibling's: the sibling then
		// borrows only what is unused, and nothing is reclaimed from it.
		for _, queue := range []string{"target", "sibling"} {
			var keys []string
			for _, s := range scenarios {
				for _, j := range s.existing {
					if labels := j.GetLabels(); labels[integrations.QueueNameLabel] == queue {
						Expect(admin.Create(ctx, j)).To(Succeed())
						keys = append(keys, s.namespace+"/"+j.GetName())
					}
				}
			}
			Eventually(func(g Gomega) {
				decided := kueueOutcomes(g, "sim-")
				var undecided []string
				for _, k := range keys {
					if o, ok := decided[k]; !ok || o.preempting {
						undecided = append(undecided, k)
					}
				}
				g.Expect(undecided).To(BeEmpty())
			}, "3m", time.Second).Should(Succeed())
		}
	})

	It("agrees on now / wait / never and the flavors in every scenario", func() {
		state, err := review.ListCluster(ctx, env.Config, config.DefaultKueueNamespace)
		Expect(err).NotTo(HaveOccurred())
		Expect(review.ListWorkloads(ctx, env.Config, state)).To(Succeed())
		var docs []string
		for _, s := range scenarios {
			data, err := yaml.Marshal(s.newWorkload.Object)
			Expect(err).NotTo(HaveOccurred())
			docs = append(docs, string(data))
		}
		ms, errs := review.Parse("new.yaml", []byte(strings.Join(docs, "---\n")))
		Expect(errs).To(BeEmpty())
		rep, err := review.Review(ctx, review.Options{State: state, Simulate: true,
			User: authenticationv1.UserInfo{Username: "alice"}}, ms, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(rep.Objects).To(HaveLen(simScenarios))
		predicted := map[string]*review.Simulation{}
		verdicts, preempting := map[schedsim.Verdict]int{}, 0
		for i, s := range scenarios {
			o := rep.Objects[i]
			Expect(o.Simulation).NotTo(BeNil(), "%s: %s %v %v", o.Ref(), o.Status, o.Reason, o.Findings)
			predicted[s.namespace+"/new"] = o.Simulation
			verdicts[o.Simulation.Verdict]++
			if len(o.Simulation.Preempts) > 0 {
				preempting++
			}
		}

		for _, s := range scenarios {
			Expect(admin.Create(ctx, s.newWorkload.DeepCopy())).To(Succeed())
		}
		var outcomes map[string]outcome
		Eventually(func(g Gomega) {
			outcomes = kueueOutcomes(g, "sim-")
			for key := range predicted {
				g.Expect(outcomes).To(HaveKey(key))
			}
		}, "3m", time.Second).Should(Succeed())

		var disagree []string
		for _, s := range scenarios {
			key := s.namespace + "/new"
			if why := agrees(predicted[key], outcomes[key]); why != "" {
				disagree = append(disagree, fmt.Sprintf("scenario %d (%s): %s", s.n, key, why))
			}
		}
		checkPreemptions(scenarios, predicted, &disagree)
		checkWaits(scenarios, predicted, &disagree)
		agreed := simScenarios - len(disagree)
		AddReportEntry("simulate agreement", fmt.Sprintf("%d of %d scenarios (%.1f%%); predicted now %d (%d preempting), wait %d, never %d",
			agreed, simScenarios, 100*float64(agreed)/simScenarios, verdicts[schedsim.Now], preempting, verdicts[schedsim.Wait], verdicts[schedsim.Never]),
			ReportEntryVisibilityAlways)
		Expect(disagree).To(BeEmpty())
	})
})

// checkPreemptions: where simulate named workloads Kueue would preempt,
// Kueue marks exactly those preempted.
func checkPreemptions(scenarios []*scenario, predicted map[string]*review.Simulation, disagree *[]string) {
	for _, s := range scenarios {
		p := predicted[s.namespace+"/new"]
		if len(p.Preempts) == 0 {
			continue
		}
		var want []string
		for _, v := range p.Preempts {
			want = append(want, v.Name)
		}
		slices.Sort(want)
		var got []string
		pollUntil(30*time.Second, func() bool {
			list := &kueue.WorkloadList{}
			Expect(admin.List(ctx, list, client.InNamespace(s.namespace))).To(Succeed())
			got = nil
			for _, wl := range list.Items {
				if meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadPreempted) {
					got = append(got, wl.Name)
				}
			}
			slices.Sort(got)
			return slices.Equal(got, want)
		})
		if !slices.Equal(got, want) {
			*disagree = append(*disagree, fmt.Sprintf("scenario %d: predicted preemption of %v, Kueue preempted %v", s.n, want, got))
			continue
		}
		// Once they are gone, Kueue admits it: to the flavors simulate named.
		var o outcome
		pollUntil(time.Minute, func() bool {
			o = kueueOutcomes(Default, s.namespace)[s.namespace+"/new"]
			return o.admitted
		})
		if !maps.EqualFunc(predictedFlavors(p), o.flavors, maps.Equal) {
			*disagree = append(*disagree, fmt.Sprintf("scenario %d: predicted flavors %v after preempting, Kueue assigned %v (%s)",
				s.n, predictedFlavors(p), o.flavors, condMessage(o.wl)))
		}
	}
}

// checkWaits: a workload simulate says waits is admitted, to the flavors it
// named, once the scenario's other jobs are gone.
func checkWaits(scenarios []*scenario, predicted map[string]*review.Simulation, disagree *[]string) {
	var waiting []*scenario
	for _, s := range scenarios {
		if predicted[s.namespace+"/new"].Verdict == schedsim.Wait {
			waiting = append(waiting, s)
			for _, j := range s.existing {
				Expect(client.IgnoreNotFound(admin.Delete(ctx, j.DeepCopy(),
					client.PropagationPolicy(metav1.DeletePropagationBackground)))).To(Succeed())
			}
		}
	}
	if len(waiting) == 0 {
		return
	}
	var outcomes map[string]outcome
	pollUntil(2*time.Minute, func() bool {
		outcomes = kueueOutcomes(Default, "sim-")
		for _, s := range waiting {
			if !outcomes[s.namespace+"/new"].admitted {
				return false
			}
		}
		return true
	})
	for _, s := range waiting {
		p, o := predicted[s.namespace+"/new"], outcomes[s.namespace+"/new"]
		switch {
		case !o.admitted:
			*disagree = append(*disagree, fmt.Sprintf("scenario %d: predicted wait, still pending once the others are gone: %s %s",
				s.n, o.reason, condMessage(o.wl)))
		case !maps.EqualFunc(predictedFlavors(p), o.flavors, maps.Equal):
			*disagree = append(*disagree, fmt.Sprintf("scenario %d: predicted flavors %v once free, Kueue assigned %v",
				s.n, predictedFlavors(p), o.flavors))
		}
	}
}

// pollUntil calls done every half second until it reports true or the time
// is up: for outcomes that are compared, not asserted, once the wait ends.
func pollUntil(limit time.Duration, done func() bool) {
	deadline := time.Now().Add(limit)
	for !done() && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
	}
}
