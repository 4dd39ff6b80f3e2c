package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
)

// The decision check: before the load, kueue-guard's validating webhook answers
// every queued body and every request of every stream, and its answer must be
// the reference's, the policies evaluated by the harness in full: the input
// policies.BuildInput builds (no cache, no projection, every policy, no match)
// through an engine of its own. The figures of the load are only worth
// comparing if the server decides what the policies say.

// referee evaluates the reference decisions, against the cluster state the
// server sees (examples/cluster-state.yaml, applied to the control plane).
type referee struct {
	engine *policies.Engine
	view   cluster.View
	// ids are the policies' ids, in the engine's order (OPA's answer's).
	ids []string
}

// newReferee loads the policies of dir into a fresh engine that fails closed,
// as the shipped configuration does.
func newReferee(dir string, view cluster.View) (*referee, error) {
	engine, err := policies.NewEngine(policies.Options{Directory: dir, OnError: config.OnErrorDeny})
	if err != nil {
		return nil, err
	}
	if err := engine.Load(); err != nil {
		return nil, fmt.Errorf("loading the policies of %s: %w", dir, err)
	}
	r := &referee{engine: engine, view: view}
	for _, p := range engine.Policies() {
		r.ids = append(r.ids, p.ID)
	}
	return r, nil
}

// decide builds the policy input of a review's request and evaluates it: OPA's
// payload, {"input": ...}, and the reference answer.
func (r *referee) decide(ctx context.Context, ar *admissionv1.AdmissionReview) (input []byte, want policyAnswer, err error) {
	req, err := decodeRequest(ar)
	if err != nil {
		return nil, want, err
	}
	in, ok := integrations.Lookup(req.Kind.GroupKind())
	if !ok {
		return nil, want, fmt.Errorf("%s is not a catalog kind", req.Kind)
	}
	value, err := policies.BuildInput(ctx, req, admission.Target{Integration: in}, r.view)
	if err != nil {
		return nil, want, fmt.Errorf("building the policy input: %w", err)
	}
	if want, err = referenceAnswer(r.engine.Evaluate(ctx, value)); err != nil {
		return nil, want, err
	}
	doc, err := ast.JSON(value)
	if err != nil {
		return nil, want, err
	}
	input, err = json.Marshal(map[string]any{"input": doc})
	return input, want, err
}

// decisionCheck is the check's outcome.
type decisionCheck struct {
	Checked    int
	Mismatches []string
}

// record checks one served answer against the reference.
func (c *decisionCheck) record(name string, got, want policyAnswer) {
	c.Checked++
	if d := got.diff(want); d != "" {
		c.Mismatches = append(c.Mismatches, name+": "+d)
	}
}

// checkWorkers is how many stream requests the check has in flight: enough to
// keep two cores busy, so that the check of thousands of requests takes seconds.
const checkWorkers = 4

// streamAnswer is what the two servers answered one stream request.
type streamAnswer struct {
	guard policyAnswer
	// last is kueue-guard's to a unique shape's request as the last pass
	// sends it (passes.go).
	last policyAnswer
	opa  map[string]int
	err  error
}

// checkStreams sends every request of every stream to kueue-guard's validating
// webhook and its input to OPA: kueue-guard's answers are checked against the
// reference, OPA's findings compared with kueue-guard's as for the bodies.
func (b *bench) checkStreams(ctx context.Context) error {
	if b.o.streamSize == 0 {
		return nil
	}
	client := newClient(checkWorkers)
	defer client.CloseIdleConnections()
	start := time.Now()
	defer func() { fmt.Printf("checked the streams in %v\n", time.Since(start).Round(time.Millisecond)) }()
	for _, body := range b.bodies {
		if body.Stream == nil {
			continue
		}
		answers, err := b.askStream(ctx, client, body.Stream)
		if err != nil {
			return fmt.Errorf("%s, %w", body.Name, err)
		}
		var opaDiffer []string
		for i, a := range answers {
			b.results.Decisions.record(body.Name+", "+body.Stream.Names[i], a.guard, body.Stream.Want[i])
			if len(body.Stream.Marks[i]) > 0 {
				b.results.Decisions.record(fmt.Sprintf("%s, %s (pass %d)", body.Name, body.Stream.Names[i], maxPass), a.last, body.Stream.LastWant[i])
			}
			if d := countsDiff(b.policyIDs, a.guard.counts(b.policyIDs), a.opa); d != "" {
				opaDiffer = append(opaDiffer, body.Stream.Names[i]+": "+d)
			}
		}
		if len(opaDiffer) > 0 {
			m := fmt.Sprintf("%s: OPA's findings differ from kueue-guard's on %d of %d requests, first %s",
				body.Name, len(opaDiffer), len(answers), opaDiffer[0])
			fmt.Println("!!! MISMATCH !!!", m)
			b.results.Mismatches = append(b.results.Mismatches, m)
		}
	}
	return nil
}

// askStream sends a stream's requests from checkWorkers workers; the answers
// are in the stream's order.
func (b *bench) askStream(ctx context.Context, client *http.Client, s *stream) ([]streamAnswer, error) {
	guard, opa := b.endpoint(epValidate), b.endpoint(epOPA)
	answers := make([]streamAnswer, len(s.Reviews))
	callers := make([][2]*caller, checkWorkers)
	for w := range callers {
		callers[w] = [2]*caller{{client: client, url: guard.url(), check: guard.check}, {client: client, url: opa.url(), check: opa.check}}
	}
	err := forEach(ctx, len(answers), checkWorkers, func(w, i int) error {
		a := b.askOne(ctx, callers[w][0], callers[w][1], s.Reviews[i], s.Inputs[i])
		if a.err == nil && len(s.Marks[i]) > 0 {
			a.last, a.err = b.askGuard(ctx, callers[w][0], passVariant(nil, s.Reviews[i], s.Marks[i], maxPass))
		}
		answers[i] = a
		if a.err != nil {
			return fmt.Errorf("%s: %w", s.Names[i], a.err)
		}
		return nil
	})
	return answers, err
}

// askOne sends one stream request to both servers.
func (b *bench) askOne(ctx context.Context, guard, opa *caller, review, input []byte) (a streamAnswer) {
	if a.guard, a.err = b.askGuard(ctx, guard, review); a.err != nil {
		return a
	}
	opa.payload = input
	if a.err = opa.call(ctx); a.err != nil {
		return a
	}
	a.opa, a.err = opaAnswer(opa.buf.Bytes(), b.policyIDs)
	return a
}

// askGuard sends one review to kueue-guard and reads its policies' answer.
func (b *bench) askGuard(ctx context.Context, guard *caller, review []byte) (policyAnswer, error) {
	guard.payload = review
	if err := guard.call(ctx); err != nil {
		return policyAnswer{}, err
	}
	_, answer, err := admissionAnswer(guard.buf.Bytes(), b.policyIDs)
	return answer, err
}

// maxPrinted bounds the mismatches printed: a broken policy step disagrees on
// every request, and the first few say why.
const maxPrinted = 50

// failed prints the check's mismatches, with each request's name, and
// fails the run when there is one: the load would measure wrong answers.
func (c *decisionCheck) failed() error {
	fmt.Printf("decisions checked: %d requests, %d mismatches\n", c.Checked, len(c.Mismatches))
	if len(c.Mismatches) == 0 {
		return nil
	}
	for i, m := range c.Mismatches {
		if i == maxPrinted {
			fmt.Printf("!!! … and %d more\n", len(c.Mismatches)-maxPrinted)
			break
		}
		fmt.Println("!!! DECISION MISMATCH !!!", m)
	}
	return fmt.Errorf("decision check: kueue-guard's answer differs from the policies' reference evaluation on %d of %d requests",
		len(c.Mismatches), c.Checked)
}
