package kueuecontroller_test

import (
	"strings"

	"github.com/google/go-cmp/cmp"

	"github.com/kueue-guard/kueue-guard/pkg/kueuecontroller"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("KeptArgv", func() {
	junk := strings.Repeat("x", 64<<10)
	longPath := "/" + strings.Repeat("d/", 200) + "controller_manager_config.yaml"
	DescribeTable("keeps only what Detect reads",
		func(command, args, wantCommand, wantArgs []any) {
			gotCommand, gotArgs := kueuecontroller.KeptArgv(command, args)
			Expect(cmp.Diff(wantCommand, gotCommand)).To(BeEmpty())
			Expect(cmp.Diff(wantArgs, gotArgs)).To(BeEmpty())
		},
		Entry("nothing of Kueue's", []any{"/app", junk}, []any{"--flag", junk}, nil, nil),
		Entry("the =value form among megabytes",
			[]any{"/manager"}, []any{junk, "--config=/etc/kueue/controller_manager_config.yaml", junk},
			nil, []any{"--config=/etc/kueue/controller_manager_config.yaml"}),
		Entry("the two-word form straddling command and args",
			[]any{"/manager", "-config"}, []any{"/cfg/controller_manager_config.yaml", "--zap-devel"},
			[]any{"-config"}, []any{"/cfg/controller_manager_config.yaml"}),
		Entry("a value longer than kept becomes its file name",
			nil, []any{"--config=" + longPath}, nil, []any{"--config=…/controller_manager_config.yaml"}),
		Entry("a two-word value longer than kept too",
			nil, []any{"--config", longPath}, nil, []any{"--config", "…/controller_manager_config.yaml"}),
		Entry("a non-string element breaks the two-word form", nil, []any{"--config", 3, "/c/controller_manager_config.yaml"}, nil, nil),
	)
})
