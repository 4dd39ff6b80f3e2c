package policies

import (
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
)

// disabledBuiltins are the built-ins a policy may not call. A policy runs inside an
// admission webhook with the webhook's network identity and service account, on
// every workload creation: letting it reach the network would turn a policy file
// into an SSRF or exfiltration channel and make admission latency depend on remote
// services. opa.runtime is disabled because it exposes the process environment.
// json.match_schema and json.verify_schema are disabled because a schema may $ref a
// remote document, which the schema library would fetch.
var disabledBuiltins = []string{
	"http.send",
	"net.lookup_ip_addr",
	"opa.runtime",
	"json.match_schema",
	"json.verify_schema",
}

// Capabilities returns the OPA capabilities policies are compiled and evaluated
// with: this OPA version's, minus the disabled built-ins, and with no network host
// allowed (AllowNet empty, not nil, means "none" to OPA, which also stops the type
// checker from fetching remote schemas). A policy calling a disabled built-in fails
// to compile, so it is refused at load time rather than failing on a request.
func Capabilities() *ast.Capabilities {
	c := ast.CapabilitiesForThisVersion()
	c.Builtins = slices.DeleteFunc(c.Builtins, func(b *ast.Builtin) bool {
		return slices.Contains(disabledBuiltins, b.Name)
	})
	c.AllowNet = []string{}
	return c
}

// DisabledBuiltins lists the built-ins policies cannot call, for documentation and
// error messages.
func DisabledBuiltins() []string { return slices.Clone(disabledBuiltins) }
