package audit

import (
	"errors"
	"fmt"
	"time"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/policies"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func loopWith(maxResults int) *Loop {
	cfg := config.Default()
	cfg.Audit.MaxResultsPerReport = maxResults
	return &Loop{o: LoopOptions{Config: cfg, Identity: "me", Severity: func(rule string) string {
		if rule == "team.cap" {
			return "high"
		}
		return policies.DefaultSeverity
	}}}
}

func judged(ns, name string, findings ...admission.Violation) *Judged {
	return &Judged{APIVersion: "batch/v1", Kind: "Job", Namespace: ns, Name: name, UID: types.UID(name), Findings: findings}
}

var _ = Describe("reports", func() {
	deny := admission.Violation{Rule: "team.cap", Message: "too big", Enforcement: admission.EnforcementDeny}
	dryrun := admission.Violation{Rule: "team.trial", Message: "tried", Enforcement: admission.EnforcementDryRun}

	It("hold one result per finding, a pass for a clean workload and an error for one not judged, per namespace", func() {
		run := &Run{At: time.Unix(1700000000, 0), Workloads: []*Judged{
			judged("a", "clean"), judged("a", "big", deny, dryrun), judged("b", "other"),
			{Kind: "Job", Namespace: "b", Name: "odd", Err: errors.New("boom")},
		}}
		reports := loopWith(0).reportsFor(run)
		Expect(reports).To(HaveLen(2))
		a := reports["a"]
		Expect(a.Summary.Pass).To(Equal(1))
		Expect(a.Summary.Fail).To(Equal(1))
		Expect(a.Summary.Warn).To(Equal(1))
		Expect(string(a.Results[0].Result)).To(Equal("fail"), "failures first")
		Expect(string(a.Results[0].Severity)).To(Equal("high"))
		Expect(a.Results[0].Subjects[0].Name).To(Equal("big"))
		Expect(a.Results[0].Properties).To(HaveKeyWithValue("enforcement", "deny"))
		Expect(a.Results[1].Scored).To(BeFalse(), "a dryrun finding is not scored")
		Expect(a.Annotations).To(HaveKeyWithValue(AuditedByAnnotation, "me"))
		Expect(a.Labels).To(HaveKeyWithValue(ManagedByLabel, "kueue-guard"))
		Expect(reports["b"].Summary.Error).To(Equal(1))
		Expect(reports["b"].Summary.Pass).To(Equal(1))
	})

	It("cap the results with the summary still exact, failures kept first", func() {
		var ws []*Judged
		for i := range 10 {
			ws = append(ws, judged("a", fmt.Sprintf("clean-%d", i)))
		}
		ws = append(ws, judged("a", "big", deny))
		r := loopWith(3).reportsFor(&Run{At: time.Now(), Workloads: ws})["a"]
		Expect(r.Results).To(HaveLen(3))
		Expect(string(r.Results[0].Result)).To(Equal("fail"))
		Expect(r.Summary.Pass).To(Equal(10))
		Expect(r.Summary.Fail).To(Equal(1))
		Expect(r.Configuration.Limits.MaxResults).To(Equal(3))
	})
})

var _ = Describe("unchanged", func() {
	deny := admission.Violation{Rule: "team.cap", Message: "too big", Enforcement: admission.EnforcementDeny}
	at := func(sec int64, ws ...*Judged) *openreports.Report {
		return loopWith(0).reportsFor(&Run{At: time.Unix(sec, 0), Workloads: ws})["a"]
	}

	It("is true for a later run that found the same, and false for any change of finding, workload or writer", func() {
		old := at(1700000000, judged("a", "clean"), judged("a", "big", deny))
		Expect(unchanged(old, at(1700000060, judged("a", "clean"), judged("a", "big", deny)))).To(BeTrue(), "only the timestamps differ")
		Expect(unchanged(old, at(1700000060, judged("a", "clean"), judged("a", "big")))).To(BeFalse(), "big was fixed")
		Expect(unchanged(old, at(1700000060, judged("a", "big", deny)))).To(BeFalse(), "clean was deleted")
		Expect(unchanged(old, at(1700000060, judged("a", "clean"), judged("a", "big", admission.Violation{
			Rule: "team.cap", Message: "far too big", Enforcement: admission.EnforcementDeny})))).To(BeFalse(), "a new message")
		other := at(1700000060, judged("a", "clean"), judged("a", "big", deny))
		other.Annotations[AuditedByAnnotation] = "another replica"
		Expect(unchanged(old, other)).To(BeFalse(), "a new writer says so")
	})
})

var _ = Describe("partOf", func() {
	owned := func(apiVersion, kind string, uid types.UID) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("Pod")
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "o", UID: uid, Controller: new(true)}})
		return u
	}
	listed := map[types.UID]schema.GroupKind{"job-uid": {Group: "batch", Kind: "Job"}}

	It("leaves out a pod of a listed Job, and nothing else", func() {
		Expect(partOf(owned("batch/v1", "Job", "job-uid"), listed)).To(BeTrue())
		Expect(partOf(owned("batch/v1", "Job", "missing"), listed)).To(BeFalse(), "an owner that does not exist")
		Expect(partOf(owned("apps/v1", "ReplicaSet", "job-uid"), listed)).To(BeFalse(), "a kind Kueue does not manage as a whole")
		job := owned("batch/v1", "Job", "job-uid")
		job.SetAPIVersion("batch/v1")
		job.SetKind("Job")
		Expect(partOf(job, listed)).To(BeFalse(), "a Job 'owned' by a Job")
	})
})

var _ = Describe("the listing order", func() {
	It("lists every catalog kind once, each owner before the kinds it creates", func() {
		order := listOrder()
		Expect(order).To(HaveLen(len(integrations.All())))
		at := map[string]int{}
		for i, in := range order {
			at[in.GVK.Kind] = i
		}
		for _, chain := range [][]string{
			{"TrainJob", "JobSet", "Job", "Pod"}, {"RayJob", "RayCluster", "Pod"}, {"RayService", "RayCluster"},
			{"AppWrapper", "PyTorchJob", "Pod"}, {"AppWrapper", "Job"}, {"LeaderWorkerSet", "StatefulSet", "Pod"},
			{"Deployment", "Pod"}, {"MPIJob", "Pod"},
		} {
			for i := 1; i < len(chain); i++ {
				Expect(at[chain[i-1]]).To(BeNumerically("<", at[chain[i]]), "%s before %s", chain[i-1], chain[i])
			}
		}
	})
})
