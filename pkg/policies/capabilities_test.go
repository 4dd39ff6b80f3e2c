package policies_test

import (
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/kueue-guard/kueue-guard/pkg/policies"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Capabilities", func() {
	names := func(optIn ...string) map[string]bool {
		c, err := policies.Capabilities(optIn...)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.AllowNet).To(BeEmpty())
		Expect(c.AllowNet).NotTo(BeNil(), "empty, not nil: no host at all")
		out := map[string]bool{}
		for _, b := range c.Builtins {
			out[b.Name] = true
		}
		return out
	}

	It("offers exactly the allowlist, every name of which exists in this OPA version", func() {
		got := names()
		for _, name := range policies.AllowedBuiltins() {
			Expect(ast.CapabilitiesForThisVersion().ContainsBuiltin(name)).To(BeTrue(), "%s is not a built-in of this OPA", name)
			Expect(got).To(HaveKey(name))
		}
		Expect(got).To(HaveLen(len(policies.AllowedBuiltins())))
	})

	It("offers nothing non-deterministic by default, nor the network or the runtime", func() {
		for _, b := range ast.CapabilitiesForThisVersion().Builtins {
			if b.Nondeterministic {
				Expect(names()).NotTo(HaveKey(b.Name))
			}
		}
		for _, name := range []string{"http.send", "net.lookup_ip_addr", "opa.runtime", "json.match_schema",
			"json.verify_schema", "providers.aws.sign_req", "numbers.range", "net.cidr_expand"} {
			Expect(names()).NotTo(HaveKey(name))
		}
	})

	It("adds an opted-in built-in, and refuses to opt into the network", func() {
		Expect(names("time.now_ns")).To(HaveKey("time.now_ns"))
		for _, name := range []string{"http.send", "opa.runtime", "no.such"} {
			_, err := policies.Capabilities(name)
			Expect(err).To(MatchError(ContainSubstring(`built-in "` + name + `" cannot be allowed`)))
		}
	})
})
