package main

import (
	"encoding/json"
	"errors"
	"fmt"

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

// stream is what the endpoint is sent for a stream's requests, in turn (nil for
// a body): the AdmissionReviews, or for OPA their policy inputs.
func (e *endpoint) stream(b *body) [][]byte {
	switch {
	case b.Stream == nil:
		return nil
	case e.opa:
		return b.Stream.Inputs
	}
	return b.Stream.Reviews
}

// marks are where the endpoint's stream requests carry their pass digits
// (passes.go): the reviews', none in OPA's inputs.
func (e *endpoint) marks(b *body) [][]int {
	if b.Stream == nil || e.opa {
		return nil
	}
	return b.Stream.Marks
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
