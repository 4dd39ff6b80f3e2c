package review_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/review"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// shippedPolicies is the repository's policy directory (tests are ignored by the engine).
const shippedPolicies = "../../policies"

// parse reads manifests from a string, failing the spec on read errors.
func parse(yaml string) []*review.Manifest {
	GinkgoHelper()
	ms, es := review.Parse("manifests.yaml", []byte(yaml))
	Expect(es).To(BeEmpty())
	return ms
}

// stateFrom writes a cluster state file and loads it.
func stateFrom(yaml string) *review.State {
	GinkgoHelper()
	p := filepath.Join(GinkgoT().TempDir(), "state.yaml")
	Expect(os.WriteFile(p, []byte(yaml), 0o644)).To(Succeed())
	s, es := review.LoadStateFile(p, config.DefaultKueueNamespace)
	Expect(es).To(BeEmpty())
	return s
}

// run reviews manifests with options, failing the spec on setup errors.
func run(o review.Options, yaml string) *review.Report {
	GinkgoHelper()
	rep, err := review.Review(context.Background(), o, parse(yaml), nil)
	Expect(err).NotTo(HaveOccurred())
	return rep
}

// object finds a reviewed object by kind and name.
func object(rep *review.Report, kind, name string) *review.Object {
	GinkgoHelper()
	for _, o := range rep.Objects {
		if o.Kind == kind && o.Name == name {
			return o
		}
	}
	Fail("no " + kind + " " + name + " in the report")
	return nil
}

// rules lists an object's finding rules with their enforcement.
func rules(o *review.Object) []string {
	out := []string{}
	for _, f := range o.Findings {
		out = append(out, f.Enforcement+" "+f.Rule)
	}
	return out
}

func configWith(f func(*config.Configuration)) *config.Configuration {
	c := config.Default()
	f(c)
	Expect(c.Validate()).To(BeEmpty())
	return c
}

const queuedJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: job
  namespace: team
  labels:
    kueue.x-k8s.io/queue-name: q
spec:
  parallelism: 3
  podReplacementPolicy: Failed
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        resources:
          requests: {cpu: "2", memory: 1Gi}
`

const unlabeledJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: job
  namespace: team
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        resources:
          requests: {cpu: "1", memory: 1Gi}
`

// refs renders what was read as "Kind name @document:line" for compact assertions.
func refs(ms []*review.Manifest) []string {
	out := []string{}
	for _, m := range ms {
		s := m.Object.GetKind() + " " + m.Object.GetName() + " @" + itoa(m.Source.Document) + ":" + itoa(m.Source.Line)
		if m.Source.Item != nil {
			s += " items[" + itoa(*m.Source.Item) + "]"
		}
		out = append(out, s)
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

func errs(es []*review.InputError) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.Error())
	}
	return out
}
