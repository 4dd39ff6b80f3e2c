package server

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the container's memory limit", func() {
	var dir string
	BeforeEach(func() { dir = GinkgoT().TempDir() })
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		Expect(os.WriteFile(p, []byte(content), 0o644)).To(Succeed())
		return p
	}
	missing := func() string { return filepath.Join(dir, "missing") }

	DescribeTable("is read from cgroup v2, else v1",
		func(files func() []string, want int64) {
			Expect(containerMemoryLimit(files())).To(Equal(want))
		},
		Entry("a v2 limit", func() []string { return []string{write("v2", "536870912\n")} }, int64(536870912)),
		Entry("v2 without a limit", func() []string { return []string{write("v2", "max\n")} }, int64(0)),
		Entry("v1 without a limit", func() []string { return []string{missing(), write("v1", "9223372036854771712\n")} }, int64(0)),
		Entry("a v1 limit", func() []string { return []string{missing(), write("v1", "268435456")} }, int64(268435456)),
		Entry("no cgroup file", func() []string { return []string{missing()} }, int64(0)),
	)

	It("refuses a value it cannot read, naming the file", func() {
		f := write("bad", "lots")
		_, err := containerMemoryLimit([]string{f})
		Expect(err).To(MatchError(ContainSubstring(f)))
	})
})
