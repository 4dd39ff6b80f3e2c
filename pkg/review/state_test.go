package review_test

import (
	"os"
	"path/filepath"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/review"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("cluster state files", func() {
	It("reads Kueue's v1beta1 objects, notes unknown fields and skipped kinds, and refuses unsupported versions", func() {
		dir := GinkgoT().TempDir()
		p := filepath.Join(dir, "state.yaml")
		Expect(os.WriteFile(p, []byte(`apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  cohort: org
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: 4}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: team}
spec: {clusterQueue: cq, colour: blue}
---
apiVersion: v1
kind: Service
metadata: {name: s, namespace: team}
---
apiVersion: kueue.x-k8s.io/v1alpha1
kind: LocalQueue
metadata: {name: old, namespace: team}
`), 0o644)).To(Succeed())
		s, es := review.LoadStateFile(p, config.DefaultKueueNamespace)
		Expect(errs(es)).To(Equal([]string{p + ": document 4, line 19: unsupported version kueue.x-k8s.io/v1alpha1 of LocalQueue: use kueue.x-k8s.io/v1beta2 or v1beta1"}))
		Expect(s.Notes).To(ConsistOf(ContainSubstring(`unknown field "spec.colour"`), ContainSubstring("skipped Service v1 team/s")))
		cq, ok := s.Snapshot.ClusterQueue("cq")
		Expect(ok).To(BeTrue())
		Expect(string(cq.Spec.CohortName)).To(Equal("org"))
		lq, ok := s.Snapshot.LocalQueue("team", "q")
		Expect(ok).To(BeTrue())
		Expect(string(lq.Spec.ClusterQueue)).To(Equal("cq"))
		Expect(s.Known()).To(BeTrue())
	})

	It("holds LimitRanges and RuntimeClasses, which Kueue adjusts requests by", func() {
		p := filepath.Join(GinkgoT().TempDir(), "state.yaml")
		Expect(os.WriteFile(p, []byte(`apiVersion: v1
kind: LimitRange
metadata: {name: defaults, namespace: team}
spec:
  limits: [{type: Container, defaultRequest: {cpu: 250m}}]
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: kata}
handler: kata
overhead: {podFixed: {memory: 128Mi}}
`), 0o644)).To(Succeed())
		s, es := review.LoadStateFile(p, config.DefaultKueueNamespace)
		Expect(es).To(BeEmpty())
		Expect(s.Snapshot.LimitRanges("team")).To(HaveLen(1))
		rc, ok := s.Snapshot.RuntimeClass("kata")
		Expect(ok).To(BeTrue())
		Expect(rc.Overhead.PodFixed.Memory().String()).To(Equal("128Mi"))
	})
})
