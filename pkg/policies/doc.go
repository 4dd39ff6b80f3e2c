// Package policies is kueue-guard's Rego policy engine: it loads the policy
// directory, compiles it once per version, watches it for changes, builds the
// policy input from an admission request and the cluster view, evaluates every
// policy under a deadline and a concurrency bound, and turns the results into
// violations of the admission pipeline (Step). It also runs the policies' own
// Rego tests (RunTests) for `kueue-guard policy test`.
//
// A policy is any package that defines `deny` and/or `warn`, sets of strings or of
// {"msg": ..., "field": ...} objects; its id is the package path without "data.".
// Its package METADATA sets custom.enforcement (deny, warn or dryrun), title and
// description. Policies cannot reach the network (see Capabilities).
//
// The package, one concern a file:
//
//	engine.go        Options, Engine, NewEngine; Load swaps a new set in or refuses it
//	watch.go         Start: reload the directory when it changes (a ConfigMap volume)
//	snapshot.go      read the directory's policy and data files into memory, hashed
//	compile.go       parse and compile a snapshot (capabilities, input schema)
//	discover.go      find the policies of a compiled tree and read their METADATA
//	policy.go        Policy, and the rule names that make a package a policy
//	errors.go        LoadError, Problem: why a set was refused, with file and line
//	capabilities.go  the built-ins policies may not call
//	schema.go        the input's JSON Schema (schemas/input.json), as schema.input
//	input.go         BuildInput: the policy input of one request
//	specs.go         the pod and Job specs of the object, as the summary finds them
//	readpaths.go     what a compiled set reads of input, followed through variables
//	projection.go    InputPaths: the input built and keyed with only those parts
//	query.go         the evaluation queries, prepared once per set
//	evaluate.go      Evaluate: deadline, concurrency slot, per-policy fallback
//	failure.go       Failure: what could not be evaluated, and why
//	decode.go        Finding: deny and warn results read into findings
//	step.go          Step: the admission pipeline's policy step
//	metrics.go       the engine's Prometheus series
//	testrunner.go    RunTests, behind `kueue-guard policy test`
//
// docs/policy-input.md describes the input field by field for policy authors.
package policies
