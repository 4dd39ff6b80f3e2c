package policies_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Reading a policy directory", func() {
	var dir string
	BeforeEach(func() { dir = GinkgoT().TempDir() })

	It("refuses a directory that does not exist", func() {
		e, _ := newEngine(filepath.Join(dir, "missing"))
		Expect(e.Load()).To(MatchError(ContainSubstring("no such file or directory")))
		Expect(e.Ready()).To(BeFalse())
	})

	It("follows symlinked files", func() {
		real := GinkgoT().TempDir()
		writeFiles(real, map[string]string{"p.rego": policy("linked", "", `deny contains "x" if false`)})
		Expect(os.Symlink(filepath.Join(real, "p.rego"), filepath.Join(dir, "p.rego"))).To(Succeed())
		e := loadedEngine(dir)
		Expect(e.Policies()).To(HaveLen(1))
	})
})
