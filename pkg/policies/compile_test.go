package policies_test

import (
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Compiling a policy directory", func() {
	var dir string
	BeforeEach(func() { dir = GinkgoT().TempDir() })

	It("loads data.json and data.yaml at their directory's path under data", func() {
		writeFiles(dir, map[string]string{
			"data.yaml":          "limits:\n  gpus: 4\n",
			"teams/ml/data.json": `{"queues": ["gpu"]}`,
			"p.rego": `package kueue_guard.data_check

deny contains sprintf("gpus=%v queues=%v", [data.limits.gpus, data.teams.ml.queues]) if true
`,
		})
		e := loadedEngine(dir)
		ns := namespace("ml", nil, nil)
		d := validate(e, createRequest(fixtures.Job("ml", "j").Queue("lq").Obj()), snapshot(ns))
		Expect(d.Violations).To(HaveLen(1))
		Expect(d.Violations[0].Message).To(Equal(`gpus=4 queues=["gpu"]`))
	})
})
