package policies

import (
	"fmt"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
)

// allowedBuiltins are the built-ins a policy may call: an allowlist, so that a
// built-in a newer OPA adds is not offered until it is judged here. Each is
// deterministic (the webhook and `kueue-guard review` must agree on every
// input) and bounded by its arguments' size. A test checks that every name
// exists in this OPA version.
var allowedBuiltins = []string{
	// Operators and what the compiler rewrites into.
	"assign", "eq", "equal", "neq", "gt", "gte", "lt", "lte", "plus", "minus", "mul", "div", "rem", "and", "or",
	"internal.member_2", "internal.member_3", "internal.print", "internal.template_string", "internal.test_case", "print",
	// Aggregates, arrays, sets, objects.
	"count", "sum", "product", "max", "min", "sort", "all", "any",
	"array.concat", "array.slice", "array.reverse", "array.flatten",
	"intersection", "union",
	"object.get", "object.keys", "object.remove", "object.filter", "object.union", "object.union_n", "object.subset",
	"json.filter", "json.remove", "json.patch", "walk",
	"graph.reachable", "graph.reachable_paths",
	// Numbers, bits, conversions, types.
	"abs", "round", "ceil", "floor", "to_number", "format_int",
	"bits.and", "bits.or", "bits.xor", "bits.negate", "bits.lsh", "bits.rsh",
	"is_number", "is_string", "is_boolean", "is_array", "is_set", "is_object", "is_null", "type_name",
	"units.parse", "units.parse_bytes",
	// Strings, regular expressions, globs.
	"concat", "contains", "startswith", "endswith", "indexof", "indexof_n", "lower", "upper", "replace",
	"split", "sprintf", "substring", "trim", "trim_left", "trim_right", "trim_prefix", "trim_suffix", "trim_space",
	"strings.any_prefix_match", "strings.any_suffix_match", "strings.count", "strings.render_template",
	"strings.replace_n", "strings.reverse", "strings.split_n",
	"regex.match", "re_match", "regex.is_valid", "regex.split", "regex.find_n", "regex.find_all_string_submatch_n",
	"regex.replace", "regex.globs_match", "regex.template_match",
	"glob.match", "glob.quote_meta",
	// Encodings.
	"base64.encode", "base64.decode", "base64.is_valid", "base64url.encode", "base64url.encode_no_pad",
	"base64url.decode", "hex.encode", "hex.decode", "urlquery.encode", "urlquery.decode",
	"urlquery.encode_object", "urlquery.decode_object",
	"json.marshal", "json.marshal_with_options", "json.unmarshal", "json.is_valid",
	"yaml.marshal", "yaml.unmarshal", "yaml.is_valid",
	// Time arithmetic on given times (never the clock), versions, addresses.
	"time.parse_ns", "time.parse_rfc3339_ns", "time.parse_duration_ns", "time.date", "time.clock", "time.weekday",
	"time.add_date", "time.diff", "time.format",
	"semver.is_valid", "semver.compare",
	"net.cidr_contains", "net.cidr_contains_matches", "net.cidr_intersects", "net.cidr_is_valid",
	"net.cidr_merge", "net.cidr_overlap",
	"uuid.parse",
	// Hashes and a token's claims.
	"crypto.md5", "crypto.sha1", "crypto.sha256", "crypto.hmac.md5", "crypto.hmac.sha1", "crypto.hmac.sha256",
	"crypto.hmac.sha512", "crypto.hmac.equal", "io.jwt.decode",
	// Policy metadata, tracing.
	"rego.metadata.rule", "rego.metadata.chain", "trace",
}

// optInBuiltins may be offered when an admin opts in (policies.allowBuiltins):
// they are non-deterministic (the clock, randomness: the webhook and a review
// run later disagree) or unbounded in memory by a small argument
// (numbers.range(0, 1e9), net.cidr_expand("0.0.0.0/0")).
var optInBuiltins = []string{
	"time.now_ns", "rand.intn", "uuid.rfc4122",
	"numbers.range", "numbers.range_step", "net.cidr_expand",
}

// Built-ins never offered, opt-in or not. A policy runs inside an admission
// webhook with the webhook's network identity and service account, on every
// workload creation: reaching the network (http.send, net.lookup_ip_addr,
// json.match_schema and json.verify_schema, whose schema may $ref a remote
// document, providers.aws.sign_req) would make a policy file an SSRF or
// exfiltration channel and admission latency depend on remote services;
// opa.runtime exposes the process environment. Everything not in the two lists
// above is refused likewise.

// Capabilities returns the OPA capabilities policies are compiled and evaluated
// with: this OPA version's allowed built-ins, plus the opted-in ones, and no
// network host (AllowNet empty, not nil, means "none" to OPA, which also stops
// the type checker from fetching remote schemas). A policy calling another
// built-in fails to compile, so it is refused at load time rather than failing
// on a request. An opt-in that is not in OptInBuiltins is an error.
func Capabilities(optIn ...string) (*ast.Capabilities, error) {
	for _, name := range optIn {
		if !slices.Contains(optInBuiltins, name) {
			return nil, fmt.Errorf("built-in %q cannot be allowed: the built-ins policies may opt into are %v", name, OptInBuiltins())
		}
	}
	c := ast.CapabilitiesForThisVersion()
	c.Builtins = slices.DeleteFunc(c.Builtins, func(b *ast.Builtin) bool {
		return !slices.Contains(allowedBuiltins, b.Name) && !slices.Contains(optIn, b.Name)
	})
	c.AllowNet = []string{}
	return c, nil
}

// AllowedBuiltins lists the built-ins policies may call, sorted.
func AllowedBuiltins() []string { return sorted(allowedBuiltins) }

// OptInBuiltins lists the built-ins an admin may allow, sorted.
func OptInBuiltins() []string { return sorted(optInBuiltins) }

func sorted(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return out
}
