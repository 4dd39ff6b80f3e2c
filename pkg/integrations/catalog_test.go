package integrations_test

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"

	_ "sigs.k8s.io/kueue/pkg/controller/jobs" // registers every Kueue integration

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the integration catalog", func() {
	It("names every framework Kueue v0.17 registers, and only those", func() {
		Expect(integrations.Frameworks()).To(ConsistOf(jobframework.GetIntegrationsList()))
	})

	It("agrees with Kueue on each framework's group, version and kind", func() {
		for _, in := range integrations.All() {
			if in.Framework == "" {
				continue
			}
			cb, ok := jobframework.GetIntegrationByGVK(in.GVK)
			Expect(ok).To(BeTrue(), "Kueue has no integration for %s", in.GVK)
			named, ok := jobframework.GetIntegration(in.Framework)
			Expect(ok).To(BeTrue(), in.Framework)
			Expect(named.JobType).To(BeAssignableToTypeOf(cb.JobType), in.Framework)
		}
	})

	It("has unique kinds and a label path for each", func() {
		seen := map[schema.GroupKind]bool{}
		for _, in := range integrations.All() {
			Expect(seen).NotTo(HaveKey(in.GVK.GroupKind()))
			seen[in.GVK.GroupKind()] = true
			Expect(in.QueueLabelPath).NotTo(BeEmpty())
			Expect(in.EffectiveFramework()).NotTo(BeEmpty(), in.Key())
			if !in.Managed {
				Expect(in.Alternative).NotTo(BeEmpty(), "%s is unsupported under managed: name what to use instead", in.Key())
			}
		}
	})

	It("names the pod templates of every kind whose pods Kueue admits, each ending in metadata", func() {
		for _, in := range integrations.All() {
			if in.TemplateQueue {
				Expect(in.PodTemplates).NotTo(BeEmpty(), "%s: where its queue label may sit", in.Key())
			}
			for _, t := range in.PodTemplates {
				Expect(t[len(t)-1]).To(Equal("metadata"), in.Key())
			}
		}
	})

	It("follows the managed install's supported/unsupported split", func() {
		var unsupported []string
		for _, in := range integrations.All() {
			if !in.Managed {
				unsupported = append(unsupported, in.GVK.Kind)
			}
		}
		Expect(unsupported).To(ConsistOf("LeaderWorkerSet", "PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob",
			"JAXJob", "AppWrapper", "SparkApplication"))
	})

	It("keeps a CronJob's label in its job template", func() {
		in, ok := integrations.Lookup(schema.GroupKind{Group: "batch", Kind: "CronJob"})
		Expect(ok).To(BeTrue())
		Expect(in.LabelsPath()).To(Equal([]string{"spec", "jobTemplate", "metadata", "labels"}))
		Expect(in.EffectiveFramework()).To(Equal("batch/job"))
	})

	It("looks kinds up whatever the version (matchPolicy Equivalent)", func() {
		in, ok := integrations.Lookup(schema.GroupKind{Group: "jobset.x-k8s.io", Kind: "JobSet"})
		Expect(ok).To(BeTrue())
		Expect(in.Framework).To(Equal("jobset.x-k8s.io/jobset"))
	})

	DescribeTable("owners whose children are parts of another workload",
		func(apiVersion, kind string, managed bool) {
			Expect(integrations.IsManagedOwner(apiVersion, kind)).To(Equal(managed))
		},
		Entry("Job", "batch/v1", "Job", true),
		Entry("JobSet", "jobset.x-k8s.io/v1alpha2", "JobSet", true),
		Entry("StatefulSet", "apps/v1", "StatefulSet", true),
		Entry("a served version Kueue does not match", "jobset.x-k8s.io/v1alpha1", "JobSet", false),
		Entry("an unknown version", "batch/v9", "Job", false),
		Entry("a malformed apiVersion", "a/b/c", "Job", false),
		Entry("ReplicaSet's pods are plain pods to Kueue", "apps/v1", "ReplicaSet", false),
		Entry("DaemonSet's pods are plain pods to Kueue", "apps/v1", "DaemonSet", false),
		Entry("ReplicationController's pods are plain pods to Kueue", "v1", "ReplicationController", false),
		Entry("CronJob's Jobs are top-level", "batch/v1", "CronJob", false),
		Entry("unknown controllers", "argoproj.io/v1alpha1", "Workflow", false),
	)

	It("lists exactly the owners it accepts", func() {
		for _, o := range integrations.ManagedOwners() {
			Expect(integrations.IsManagedOwner(o.APIVersion, o.Kind)).To(BeTrue(), "%v", o)
		}
		Expect(integrations.ManagedOwners()).To(ContainElement(integrations.Owner{APIVersion: "batch/v1", Kind: "Job"}))
		Expect(integrations.ManagedOwners()).NotTo(ContainElement(integrations.Owner{APIVersion: "batch/v1", Kind: "CronJob"}))
	})

	It("groups webhook rules by group and version, covering every kind once", func() {
		n := 0
		for _, r := range integrations.WebhookRules() {
			n += len(r.Resources)
		}
		Expect(n).To(Equal(len(integrations.All())))
	})
})

var _ = Describe("a Kueue Configuration's frameworks", func() {
	lookup := func(group, kind string) *integrations.Integration {
		in, ok := integrations.Lookup(schema.GroupKind{Group: group, Kind: kind})
		Expect(ok).To(BeTrue())
		return in
	}

	It("enable a kind by its framework name, or in the external Kind.version.group form", func() {
		aw := lookup("workload.codeflare.dev", "AppWrapper")
		Expect(aw.EnabledBy([]string{"batch/job", "workload.codeflare.dev/appwrapper"})).To(BeTrue())
		Expect(aw.EnabledBy([]string{"AppWrapper.v1beta2.workload.codeflare.dev"})).To(BeTrue())
		Expect(aw.EnabledBy([]string{"batch/job"})).To(BeFalse())
		Expect(lookup("batch", "CronJob").EnabledBy([]string{"batch/job"})).To(BeTrue(), "by the framework of the Jobs it makes")
	})

	It("name the kind each framework manages", func() {
		in, ok := integrations.LookupFramework("kubeflow.org/pytorchjob")
		Expect(ok).To(BeTrue())
		Expect(in.GVK.Kind).To(Equal("PyTorchJob"))
		_, ok = integrations.LookupFramework("example.com/unknown")
		Expect(ok).To(BeFalse())
	})
})
