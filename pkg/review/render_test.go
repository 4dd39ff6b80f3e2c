package review_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"

	"github.com/kueue-guard/kueue-guard/pkg/review"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("rendering", func() {
	var rep *review.Report
	BeforeEach(func() {
		var err error
		rep, err = review.Review(context.Background(), review.Options{PolicyDir: shippedPolicies, State: stateFrom(explainState)},
			parse(job("two-flavors", 5, "2", 0)+"---\napiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: team}\n"),
			[]*review.InputError{{File: "manifests.yaml", Document: 3, Line: 9, Message: "invalid YAML: x"}})
		Expect(err).NotTo(HaveOccurred())
	})

	It("writes JUnit that parses back: one suite per file, failures for denials, skips, errors", func() {
		var buf bytes.Buffer
		Expect(review.RenderJUnit(&buf, rep)).To(Succeed())
		var got review.JUnitTestSuites
		Expect(xml.Unmarshal(buf.Bytes(), &got)).To(Succeed())
		Expect(got.Suites).To(HaveLen(1))
		s := got.Suites[0]
		Expect(s.Name).To(Equal("manifests.yaml"))
		Expect([]int{s.Tests, s.Failures, s.Errors, s.Skipped}).To(Equal([]int{3, 1, 1, 1}))
		Expect(s.Cases[0].Name).To(Equal("document 3"))
		Expect(s.Cases[1].Failure.Message).To(ContainSubstring("denied by"))
		Expect(s.Cases[2].Skipped).NotTo(BeNil())
		Expect(got.Tests).To(Equal(3))
	})

	It("writes SARIF with a level per enforcement, rules for every finding, and input errors as notifications", func() {
		var buf bytes.Buffer
		Expect(review.RenderSARIF(&buf, rep, "test")).To(Succeed())
		var log struct {
			Version string `json:"version"`
			Runs    []struct {
				Tool struct {
					Driver struct {
						Rules []struct{ ID string } `json:"rules"`
					} `json:"driver"`
				} `json:"tool"`
				Invocations []struct {
					ExecutionSuccessful bool `json:"executionSuccessful"`
					Notifications       []struct {
						Level string `json:"level"`
					} `json:"toolExecutionNotifications"`
				} `json:"invocations"`
				Results []struct {
					RuleID    string `json:"ruleId"`
					RuleIndex int    `json:"ruleIndex"`
					Level     string `json:"level"`
				} `json:"results"`
			} `json:"runs"`
		}
		Expect(json.Unmarshal(buf.Bytes(), &log)).To(Succeed())
		Expect(log.Version).To(Equal("2.1.0"))
		run := log.Runs[0]
		Expect(run.Invocations[0].ExecutionSuccessful).To(BeFalse())
		Expect(run.Invocations[0].Notifications[0].Level).To(Equal("error"))
		Expect(run.Results).NotTo(BeEmpty())
		levels := map[string]string{}
		for _, r := range run.Results {
			Expect(run.Tool.Driver.Rules[r.RuleIndex].ID).To(Equal(r.RuleID))
			levels[r.RuleID] = r.Level
		}
		Expect(levels).To(HaveKeyWithValue("kueue_guard.fits_cluster_queue", "error"))
		Expect(levels).To(HaveKeyWithValue("kueue_guard.max_exec_time_required", "warning"))
	})

	It("groups the text report by file and ends with the summary and the result", func() {
		var buf bytes.Buffer
		Expect(review.RenderText(&buf, rep, review.RenderOptions{})).To(Succeed())
		text := buf.String()
		Expect(text).To(ContainSubstring("\nmanifests.yaml\n  ERROR document 3, line 9: invalid YAML: x\n  Job team/j (document 1, line 1): DENIED"))
		Expect(text).To(HaveSuffix("Result: input errors (exit 2): fix them and review again.\n"))
		Expect(text).NotTo(ContainSubstring("\x1b["))
	})
})
