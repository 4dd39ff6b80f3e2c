package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/kueue-guard/kueue-guard/pkg/webhookconfig"
)

// server is one process under load, and its memory as sampled.
type server struct {
	// Name is "floor", "kueue-guard" or "OPA".
	Name string
	proc *process
	// base is https://127.0.0.1:PORT.
	base string
	// metrics is kueue-guard's metrics URL (in the clear, on loopback).
	metrics string
	// Idle is the memory after start, before any load; Peak is read after the
	// load (its HWM is the peak).
	Idle, Peak memory
}

// endpoint is one URL under load: a server's path, what each body becomes on the
// wire, and how an answer is checked.
type endpoint struct {
	// Name is the endpoint's short name in the plan: floor, mutate, validate, opa.
	Name string
	// Label is how tables show it.
	Label string
	srv   *server
	path  string
	opa   bool
}

// The endpoints, in table order.
const (
	epFloor    = "floor"
	epMutate   = "mutate"
	epValidate = "validate"
	epOPA      = "opa"
)

// opaResultPath is the wrapper rule OPA is queried for (see opa.go).
const opaResultPath = "/v1/data/kueue_guard_bench/result"

// newEndpoints are the four endpoints, in table order; bindEndpoints gives them
// their servers once these are started.
func newEndpoints() []*endpoint {
	return []*endpoint{
		{Name: epFloor, Label: "floor", path: "/"},
		{Name: epMutate, Label: "kueue-guard " + webhookconfig.MutateWorkloadsPath, path: webhookconfig.MutateWorkloadsPath},
		{Name: epValidate, Label: "kueue-guard " + webhookconfig.ValidateWorkloadsPath, path: webhookconfig.ValidateWorkloadsPath},
		{Name: epOPA, Label: "OPA " + opaResultPath, path: opaResultPath, opa: true},
	}
}

// bindEndpoints points the endpoints at their servers.
func bindEndpoints(eps []*endpoint, floor, guard, opa *server) {
	for _, ep := range eps {
		switch ep.Name {
		case epFloor:
			ep.srv = floor
		case epOPA:
			ep.srv = opa
		default:
			ep.srv = guard
		}
	}
}

func (e *endpoint) url() string { return e.srv.base + e.path }

// payload is what the endpoint is sent for a body: the AdmissionReview, or for
// OPA the policy input kueue-guard would build from it.
func (e *endpoint) payload(b *body) []byte {
	if e.opa {
		return b.Input
	}
	return b.Review
}

// check is the endpoint's answer check under load: it decodes no more than it
// needs to tell that the answer is there.
func (e *endpoint) check(raw []byte) error {
	if e.opa {
		var out struct {
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return fmt.Errorf("undecodable answer: %w", err)
		}
		if len(out.Result) == 0 {
			return errors.New("the answer has no result (undefined)")
		}
		return nil
	}
	var out struct {
		Response *struct {
			UID string `json:"uid"`
		} `json:"response"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return fmt.Errorf("undecodable answer: %w", err)
	}
	if out.Response == nil || out.Response.UID == "" {
		return errors.New("the answer has no response")
	}
	return nil
}

// admissionAnswer summarizes an AdmissionReview answer for the bodies table and
// counts the findings of each policy (by id) in it: denial causes and warnings
// start with "[id] ".
func admissionAnswer(raw []byte, policyIDs []string) (summary string, findings map[string]int, err error) {
	var ar admissionv1.AdmissionReview
	if err := json.Unmarshal(raw, &ar); err != nil {
		return "", nil, fmt.Errorf("undecodable answer: %w", err)
	}
	r := ar.Response
	if r == nil {
		return "", nil, errors.New("the answer has no response")
	}
	findings = map[string]int{}
	var messages []string
	var parts []string
	if r.Allowed {
		parts = append(parts, "allowed")
	} else {
		causes := 0
		if r.Result != nil && r.Result.Details != nil {
			causes = len(r.Result.Details.Causes)
			for _, c := range r.Result.Details.Causes {
				messages = append(messages, c.Message)
			}
		}
		parts = append(parts, fmt.Sprintf("denied (%s)", plural(causes, "cause")))
	}
	if len(r.Patch) > 0 {
		var ops []json.RawMessage
		_ = json.Unmarshal(r.Patch, &ops)
		parts = append(parts, fmt.Sprintf("patch of %s", plural(len(ops), "operation")))
	}
	if len(r.Warnings) > 0 {
		parts = append(parts, plural(len(r.Warnings), "warning"))
		messages = append(messages, r.Warnings...)
	}
	for _, m := range messages {
		for _, id := range policyIDs {
			if strings.Contains(m, "["+id+"] ") {
				findings[id]++
			}
		}
	}
	return strings.Join(parts, ", "), findings, nil
}

// opaAnswer counts the findings of each policy in OPA's answer: result is one
// [deny, warn] pair per policy, in policyIDs' order.
func opaAnswer(raw []byte, policyIDs []string) (map[string]int, error) {
	var out struct {
		Result [][][]json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("unexpected answer: %w", err)
	}
	if len(out.Result) != len(policyIDs) {
		return nil, fmt.Errorf("the answer has %d policies' results, want %d", len(out.Result), len(policyIDs))
	}
	findings := map[string]int{}
	for i, pair := range out.Result {
		for _, set := range pair {
			findings[policyIDs[i]] += len(set)
		}
	}
	return findings, nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
