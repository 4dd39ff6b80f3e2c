package policies_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kueue-guard/kueue-guard/pkg/policies"
)

var _ = Describe("Capabilities", func() {
	It("disables the network built-ins in its capabilities", func() {
		names := map[string]bool{}
		for _, b := range policies.Capabilities().Builtins {
			names[b.Name] = true
		}
		for _, b := range policies.DisabledBuiltins() {
			Expect(names).NotTo(HaveKey(b))
		}
		Expect(names).To(HaveKey("net.cidr_contains"), "pure network functions stay")
		Expect(names).To(HaveKey("trace"))
		Expect(policies.Capabilities().AllowNet).To(BeEmpty())
		Expect(policies.Capabilities().AllowNet).NotTo(BeNil())
	})
})
