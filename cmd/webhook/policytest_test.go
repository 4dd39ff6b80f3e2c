package main

import (
	"bytes"
	"errors"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kueue-guard/kueue-guard/pkg/chart"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// helmTest runs the chart's helm test Pod's command, as its container would,
// on the policies ConfigMap projected into a directory as the kubelet would.
func helmTest(values map[string]any) (string, error) {
	kg, err := chart.LoadFromRepo(".")
	Expect(err).NotTo(HaveOccurred())
	objs, err := kg.Render(values)
	Expect(err).NotTo(HaveOccurred())
	var args []string
	for _, u := range objs {
		if u.GetKind() == "Pod" && strings.HasSuffix(u.GetName(), "-policy-test") {
			pod := &corev1.Pod{}
			Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, pod)).To(Succeed())
			args = pod.Spec.Containers[0].Args
		}
	}
	Expect(args).NotTo(BeEmpty(), "the chart renders the helm test Pod")
	dir := GinkgoT().TempDir()
	_, err = testenv.ChartConfiguration(values, dir)
	Expect(err).NotTo(HaveOccurred())
	for i, a := range args {
		args[i] = strings.Replace(a, "/etc/kueue-guard/policies", dir, 1)
	}
	var out bytes.Buffer
	cmd := newRootCommand()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err = cmd.Execute()
	return out.String(), err
}

var _ = Describe("the chart's helm test", func() {
	It("passes on the shipped policies as the pods mount them", func() {
		out, err := helmTest(nil)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(MatchRegexp(`PASS: \d+/\d+`))
	})

	It("fails when a policy the admin replaced breaks the shipped tests", func() {
		out, err := helmTest(map[string]any{"policies": map[string]any{"files": map[string]any{
			"max-gpus-per-workload.rego": "package kueue_guard.max_gpus_per_workload\n\ndeny contains \"always\" if false\n"}}})
		var ee *exitError
		Expect(errors.As(err, &ee)).To(BeTrue(), out)
		Expect(ee.code).To(Equal(1))
		Expect(out).To(ContainSubstring("FAIL"))
	})

	It("fails with the file and line of a policy that does not compile", func() {
		out, err := helmTest(map[string]any{"policies": map[string]any{"files": map[string]any{
			"team/broken.rego": "package team.broken\n\ndeny contains msg if {\n\tmsg := concat(\",\", 3)\n}\n"}}})
		var ee *exitError
		Expect(errors.As(err, &ee)).To(BeTrue(), out)
		Expect(ee.code).To(Equal(2))
		Expect(err.Error()).To(ContainSubstring("team/broken.rego:4"))
	})
})
