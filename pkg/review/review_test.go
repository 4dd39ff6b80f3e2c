package review_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/review"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("reviewing without cluster state", func() {
	deny := configWith(func(c *config.Configuration) { c.Defaulting.MissingLocalQueue = config.MissingLocalQueueDeny })

	It("never claims a queue is missing: it says the queue is unknown and what the configured action would do", func() {
		rep := run(review.Options{Config: deny}, queuedJob)
		o := object(rep, "Job", "job")
		Expect(o.Status).To(Equal(review.StatusAllowed))
		Expect(rules(o)).To(BeEmpty())
		Expect(o.Warnings).To(BeEmpty())
		Expect(o.Notes).To(ContainElement(And(
			ContainSubstring(`LocalQueue "q" in namespace "team" is unknown`),
			ContainSubstring("defaulting.missingLocalQueue=deny denies the workload"))))
		Expect(rep.Notes).To(ContainElement(ContainSubstring("no cluster state")))
		Expect(rep.ExitCode).To(Equal(review.ExitAllowed))
	})

	It("denies the same workload when the cluster state says the queue does not exist", func() {
		rep := run(review.Options{Config: deny, State: stateFrom("apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n")}, queuedJob)
		o := object(rep, "Job", "job")
		Expect(o.Status).To(Equal(review.StatusDenied))
		Expect(rules(o)).To(Equal([]string{"deny " + admission.RuleMissingLocalQueue}))
		Expect(o.Notes).To(BeEmpty())
		Expect(rep.ExitCode).To(Equal(review.ExitDenied))
	})

	It("says a workload's queue is unknown when its namespace's default queue cannot be resolved", func() {
		o := object(run(review.Options{}, unlabeledJob), "Job", "job")
		Expect(o.Status).To(Equal(review.StatusAllowed))
		Expect(o.Patch).To(BeEmpty())
		Expect(o.Notes).To(ContainElements(ContainSubstring("queue unknown:"), ContainSubstring(`namespace "team" is unknown without cluster state`)))
	})

	It("adds the manifests' Namespace and LocalQueue to the state, so a new team is reviewed as a whole", func() {
		rep := run(review.Options{Explain: true}, `apiVersion: v1
kind: Namespace
metadata:
  name: team
  annotations: {kueue-guard.io/default-queue: q}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: team}
spec: {clusterQueue: cq}
---
`+unlabeledJob)
		Expect(object(rep, "Namespace", "team").Status).To(Equal(review.StatusClusterState))
		Expect(object(rep, "LocalQueue", "q").Status).To(Equal(review.StatusClusterState))
		o := object(rep, "Job", "job")
		Expect(o.Status).To(Equal(review.StatusAllowed))
		Expect(o.Defaulted).To(Equal(&review.Defaulted{LocalQueue: "q", Source: admission.SourceNamespaceAnnotation}))
		Expect(o.Patch).NotTo(BeEmpty())
		Expect(o.Notes).To(BeEmpty())
		Expect(o.Placement.LocalQueue.State).To(Equal(review.KnownManifest))
		Expect(o.Placement.ClusterQueue.State).To(Equal(review.KnownUnknown))
		Expect(o.Placement.Verdict).To(Equal(review.VerdictUnknown))
		Expect(rep.Summary.ClusterState).To(Equal(2))
	})
})

var _ = Describe("what the review checks", func() {
	It("skips exempt namespaces and kinds nothing checks, and checks what may run Kueue everywhere but its own namespace", func() {
		rep := run(review.Options{OwnNamespace: "kueue-guard-system"}, `apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: kube-system, labels: {kueue.x-k8s.io/queue-name: q}}
spec: {template: {spec: {containers: [{name: c, image: busybox}]}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: kube-system}
spec:
  selector: {matchLabels: {app: d}}
  template:
    metadata: {labels: {app: d}}
    spec: {containers: [{name: c, image: registry.k8s.io/kueue/kueueviz-backend:v0.19.2}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: plain, namespace: kube-system}
spec:
  selector: {matchLabels: {app: d}}
  template:
    metadata: {labels: {app: d}}
    spec: {containers: [{name: c, image: busybox}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: own, namespace: kueue-guard-system}
spec:
  selector: {matchLabels: {app: d}}
  template:
    metadata: {labels: {app: d}}
    spec: {containers: [{name: c, image: busybox}]}
`)
		j := object(rep, "Job", "j")
		Expect(j.Status).To(Equal(review.StatusSkipped))
		Expect(j.Reason).To(ContainSubstring(`namespace "kube-system" is exempt`))
		cm := object(rep, "ConfigMap", "cm")
		Expect(cm.Status).To(Equal(review.StatusSkipped))
		Expect(cm.Namespace).To(Equal(review.DefaultNamespace))
		Expect(object(rep, "Deployment", "d").Checks).To(Equal([]string{review.CheckControllers}))
		Expect(object(rep, "Deployment", "plain").Status).To(Equal(review.StatusSkipped),
			"the controller webhook's match condition never sends it")
		Expect(object(rep, "Deployment", "own").Status).To(Equal(review.StatusSkipped))
		Expect(rep.ExitCode).To(Equal(review.ExitAllowed))
	})

	It("denies a second Kueue's webhook configuration, which only the review can see", func() {
		data, err := os.ReadFile("../../test/review/testdata/corpus/controllers/webhooks.yaml")
		Expect(err).NotTo(HaveOccurred())
		o := run(review.Options{}, string(data)).Objects[0]
		Expect(o.Status).To(Equal(review.StatusDenied))
		Expect(rules(o)).To(Equal([]string{"deny " + admission.RuleKueueWebhookSingleton}))
		Expect(o.Findings[0].Line).To(Equal(14))
	})

	It("reviews as the given user, who is always authenticated", func() {
		vip := `apiVersion: batch/v1
kind: Job
metadata:
  name: vip
  namespace: team
  labels: {kueue.x-k8s.io/queue-name: q, kueue.x-k8s.io/priority-class: critical}
spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox, resources: {requests: {cpu: 1, memory: 1Gi}}}]}}}
`
		rep := run(review.Options{PolicyDir: shippedPolicies}, vip)
		Expect(rep.Context.User.Groups).To(Equal([]string{review.AuthenticatedGroup}))
		Expect(rules(rep.Objects[0])).To(ContainElement("deny kueue_guard.priority_class_allowed"))

		rep = run(review.Options{PolicyDir: shippedPolicies,
			User: authenticationv1.UserInfo{Username: "alice", Groups: []string{"ml-platform-admins"}}}, vip)
		Expect(rep.Context.User).To(Equal(review.User{Username: "alice", Groups: []string{"ml-platform-admins", review.AuthenticatedGroup}}))
		Expect(rules(rep.Objects[0])).NotTo(ContainElement("deny kueue_guard.priority_class_allowed"))
	})

	It("never panics on odd objects: a workload it cannot read is denied", func() {
		rep := run(review.Options{PolicyDir: shippedPolicies, State: stateFrom(`apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: team}
spec: {clusterQueue: cq}
`)}, `apiVersion: batch/v1
kind: Job
metadata: {name: odd, namespace: team, labels: {kueue.x-k8s.io/queue-name: q}}
spec: "not an object"
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: odd, namespace: team}
spec: {template: {spec: {containers: "nope"}}}
`)
		job := object(rep, "Job", "odd")
		Expect(job.Status).To(Equal(review.StatusDenied))
		// Kueue could not hold it either: refused before any policy reads it.
		Expect(rules(job)).To(ContainElement("deny " + admission.RuleNotHeld))
		Expect(object(rep, "Deployment", "odd").Status).To(Equal(review.StatusAllowed))
	})

	It("names generated objects by their generateName", func() {
		o := run(review.Options{}, "apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: sample-job-, namespace: team}\nspec: {}\n").Objects[0]
		Expect(o.Name).To(Equal("sample-job-*"))
	})

	It("shows the manifest with the patch applied, as written (no namespace added)", func() {
		rep := run(review.Options{Mutated: true, State: stateFrom(`apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: default, namespace: default}
spec: {clusterQueue: cq}
`)}, "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {template: {spec: {containers: [{name: c, image: busybox}]}}}\n")
		o := rep.Objects[0]
		Expect(o.Namespace).To(Equal("default"))
		Expect(o.Mutated).To(HaveKeyWithValue("metadata", And(
			HaveKeyWithValue("labels", HaveKeyWithValue("kueue.x-k8s.io/queue-name", "default")),
			Not(HaveKey("namespace")))))
	})

	It("refuses a policy directory that does not compile, naming the file and line", func() {
		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "broken.rego"), []byte("package broken\n\ndeny contains msg if {\n  msg := \n}\n"), 0o644)).To(Succeed())
		_, err := review.Review(context.Background(), review.Options{PolicyDir: dir}, nil, nil)
		var setup *review.SetupError
		Expect(err).To(BeAssignableToTypeOf(setup))
		Expect(err.Error()).To(ContainSubstring("broken.rego:"))
	})

	It("makes input errors win over denials in the exit code", func() {
		ms := parse(queuedJob)
		rep, err := review.Review(context.Background(), review.Options{
			Config: configWith(func(c *config.Configuration) { c.Defaulting.MissingLocalQueue = config.MissingLocalQueueDeny }),
			State:  stateFrom("apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n"),
		}, ms, []*review.InputError{{File: "bad.yaml", Document: 2, Line: 7, Message: "invalid YAML: x"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(rep.Summary.Denied).To(Equal(1))
		Expect(rep.Result).To(Equal(review.ResultError))
		Expect(rep.ExitCode).To(Equal(review.ExitInputError))
	})
})

var _ = Describe("documents the review does not check", func() {
	It("skips kueue-guard's own configuration and unnamed objects of kinds it does not check", func() {
		rep := run(review.Options{}, `apiVersion: config.kueue-guard.io/v1alpha1
kind: Configuration
installProfile: managed
---
apiVersion: v1
kind: ConfigMap
data: {a: b}
`)
		Expect(rep.Objects).To(HaveLen(2))
		Expect(rep.Objects[0].Status).To(Equal(review.StatusSkipped))
		Expect(rep.Objects[0].Reason).To(ContainSubstring("pass it with --config"))
		Expect(rep.Objects[1].Status).To(Equal(review.StatusSkipped))
		Expect(rep.ExitCode).To(Equal(review.ExitAllowed))
	})

	It("applies a policy only where its custom.match selects the object, as the server does", func() {
		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "p.rego"), []byte(`# METADATA
# title: Sandbox jobs
# custom:
#   match:
#     namespaces: [sandbox-*]
package sandbox

deny contains "sandboxes run no jobs" if true
`), 0o644)).To(Succeed())
		inTeam := run(review.Options{PolicyDir: dir}, queuedJob)
		Expect(inTeam.Objects[0].Findings).To(BeEmpty())
		inSandbox := run(review.Options{PolicyDir: dir}, strings.Replace(queuedJob, "namespace: team", "namespace: sandbox-1", 1))
		Expect(inSandbox.Objects[0].Findings).To(ContainElement(HaveField("Rule", "sandbox")))
		Expect(inSandbox.Objects[0].Status).To(Equal("denied"))
	})
})
