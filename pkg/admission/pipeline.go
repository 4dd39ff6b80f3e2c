package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"

	"gomodules.xyz/jsonpatch/v2"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
)

// Exemptions decides which namespaces the pipeline never touches.
type Exemptions interface {
	IsExempt(namespace string) bool
}

// Pipeline runs the admission steps in order. It is safe for concurrent use: it
// holds no per-request state.
type Pipeline struct {
	exempt     Exemptions
	mutating   []Step
	validating []Step
}

// NewPipeline composes the steps of the mutating and the validating paths.
func NewPipeline(exempt Exemptions, mutating, validating []Step) *Pipeline {
	return &Pipeline{exempt: exempt, mutating: mutating, validating: validating}
}

// target decides whether the pipeline applies to a request at all.
func (p *Pipeline) target(req *Request) (Target, bool) {
	if req.Object == nil || req.SubResource != "" {
		return Target{}, false
	}
	if req.Namespace != "" && p.exempt != nil && p.exempt.IsExempt(req.Namespace) {
		return Target{}, false
	}
	in, ok := integrations.Lookup(req.Kind.GroupKind())
	if !ok {
		return Target{}, false
	}
	return Target{Integration: in}, true
}

// Mutate runs the mutating steps on a copy of the object and returns the patch
// that turns the received object into the mutated one.
func (p *Pipeline) Mutate(ctx context.Context, req *Request, view cluster.View) (*Decision, error) {
	d := &Decision{}
	t, ok := p.target(req)
	if !ok {
		return d, nil
	}
	original := req.Raw
	if original == nil {
		var err error
		if original, err = json.Marshal(req.Object.Object); err != nil {
			return nil, fmt.Errorf("encoding object: %w", err)
		}
	}
	working := *req
	working.Object = req.Object.DeepCopy()
	if err := p.run(ctx, p.mutating, &working, t, view, d); err != nil {
		return nil, err
	}
	mutated, err := json.Marshal(working.Object.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding mutated object: %w", err)
	}
	if d.Patch, err = jsonpatch.CreatePatch(original, mutated); err != nil {
		return nil, fmt.Errorf("computing patch: %w", err)
	}
	if len(d.Patch) > 0 {
		d.Object = working.Object
	}
	return d, nil
}

// Validate runs the validating steps.
func (p *Pipeline) Validate(ctx context.Context, req *Request, view cluster.View) (*Decision, error) {
	d := &Decision{}
	t, ok := p.target(req)
	if !ok {
		return d, nil
	}
	if err := p.run(ctx, p.validating, req, t, view, d); err != nil {
		return nil, err
	}
	return d, nil
}

func (p *Pipeline) run(ctx context.Context, steps []Step, req *Request, t Target, view cluster.View, d *Decision) error {
	for _, s := range steps {
		if err := runStep(ctx, s, req, t, view, d); err != nil {
			return err
		}
	}
	return nil
}

// runStep contains any panic from a step (or from third-party code it calls) so
// that one odd object fails its own request and never takes the server down.
func runStep(ctx context.Context, s Step, req *Request, t Target, view cluster.View, d *Decision) (err error) {
	defer func() {
		if r := recover(); r != nil {
			log.FromContext(ctx).Error(fmt.Errorf("panic: %v", r), "admission step panicked",
				"step", s.Name(), "stack", string(debug.Stack()))
			err = &StepError{Step: s.Name(), Err: fmt.Errorf("unexpected failure on this object")}
		}
	}()
	if err := s.Admit(ctx, req, t, view, d); err != nil {
		return &StepError{Step: s.Name(), Err: err}
	}
	return nil
}
