package admission

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/trust"
)

// Exemptions decides which namespaces the pipeline never touches.
type Exemptions interface {
	// IsExempt reports namespaces whose workloads are never mutated or validated.
	IsExempt(namespace string) bool
	// IsOwnNamespace reports kueue-guard's own namespace, the only one the
	// controller guard skips: a second Kueue may hide anywhere else.
	IsOwnNamespace(namespace string) bool
}

// Steps are the steps of the pipeline's three paths.
type Steps struct {
	// Mutating run on /mutate-workloads, on catalog kinds.
	Mutating []MutationStep
	// Validating run on /validate-workloads, on catalog kinds.
	Validating []ValidationStep
	// Controllers run on /validate-kueue-controllers, on any kind.
	Controllers []ValidationStep
}

// Pipeline runs the admission steps in order. It is safe for concurrent use: it
// holds no per-request state.
type Pipeline struct {
	exempt Exemptions
	trust  *trust.Matcher
	steps  Steps
	// kinds decides whether the install's Kueue integrates a kind (the
	// integration guard); nil takes every catalog kind as integrated.
	kinds *IntegrationGuard
}

// NewPipeline composes the steps of the three paths. trusted decides whose owner
// references are believed; nil trusts nobody. The integration guard among the
// validating steps, if any, decides Target.Unintegrated for every step.
func NewPipeline(exempt Exemptions, trusted *trust.Matcher, steps Steps) *Pipeline {
	p := &Pipeline{exempt: exempt, trust: trusted, steps: steps}
	for _, s := range steps.Validating {
		if g, ok := s.(*IntegrationGuard); ok {
			p.kinds = g
		}
	}
	return p
}

// StepNames lists the names of every step of the three paths, in order.
func (p *Pipeline) StepNames() []string {
	var out []string
	for _, s := range p.steps.Mutating {
		out = append(out, s.Name())
	}
	for _, s := range append(slices.Clone(p.steps.Validating), p.steps.Controllers...) {
		out = append(out, s.Name())
	}
	return out
}

// Trust is the pipeline's trust matcher (for callers that render the same rule
// elsewhere, e.g. the reviewer's explanations).
func (p *Pipeline) Trust() *trust.Matcher { return p.trust }

// target decides whether the pipeline applies to a request at all. err is set
// when the view cannot tell yet (a parent's informer is starting).
func (p *Pipeline) target(req *Request, view cluster.View) (Target, bool, error) {
	if req.Object == nil || req.SubResource != "" {
		return Target{}, false, nil
	}
	if req.Namespace != "" && p.exempt != nil && p.exempt.IsExempt(req.Namespace) {
		return Target{}, false, nil
	}
	in, ok := integrations.Lookup(req.Kind.GroupKind())
	if !ok {
		return Target{}, false, nil
	}
	// Parts of another workload (a Job's pods, a JobSet's Jobs) are judged as
	// that workload; policies and guards on each pod would block its controller.
	// Only a trusted controller's word that an object is such a part is taken:
	// anyone else's object is top-level whatever its owner references say. The
	// webhooks' match conditions skip the unlabelled ones (PartOfAnother); a
	// child with a queue label of its own, or of a parent Kueue may ignore, is
	// a part only when Kueue's walk says so.
	trusted := p.trust.Trusted(req.UserInfo)
	if trusted && trust.MatchSkips(req.Object) {
		return Target{}, false, nil
	}
	if trusted && trust.ManagedOwner(req.Object) {
		part, err := partOfManaged(req, view)
		if err != nil || part {
			return Target{}, false, err
		}
	}
	return Target{Integration: in, TrustedController: trusted, Unintegrated: p.unintegrated(in, view)}, true, nil
}

// unintegrated reports a kind the install's Kueue is known not to integrate.
func (p *Pipeline) unintegrated(in *integrations.Integration, view cluster.View) bool {
	if p.kinds == nil {
		return false
	}
	supported, known, _ := p.kinds.Supported(in, view)
	return known && !supported
}

// Mutate runs the mutating steps. Each step that changes the object edits a copy
// of it and emits the JSON patch operations of its edits, so the patch is built
// directly, without encoding the object or diffing, and a request that needs no
// change costs neither a copy nor a patch.
func (p *Pipeline) Mutate(ctx context.Context, req *Request, view cluster.View) (*Decision, error) {
	d := &Decision{}
	if !p.Mutates(req.Operation) {
		return d, nil
	}
	t, ok, err := p.target(req, view)
	if err != nil || !ok {
		return d, err
	}
	working := *req
	working.owned = req.Disposable
	if err := run(ctx, p.steps.Mutating, MutationStep.Mutate, &working, t, view, d); err != nil {
		return nil, err
	}
	if len(d.Patch) > 0 {
		d.Object = working.Object
	}
	return d, nil
}

// Mutates reports whether some mutating step handles the operation.
func (p *Pipeline) Mutates(op admissionv1.Operation) bool {
	for _, s := range p.steps.Mutating {
		if s.Handles(op) {
			return true
		}
	}
	return false
}

// Envelope is what a webhook knows of a request before it reads the object.
type Envelope struct {
	Operation   admissionv1.Operation
	Kind        schema.GroupKind
	Resource    schema.GroupResource
	SubResource string
	Namespace   string
}

// exempt reports a namespace the workload paths never touch.
func (p *Pipeline) exemptNamespace(ns string) bool {
	return ns != "" && p.exempt != nil && p.exempt.IsExempt(ns)
}

// MutateNeeds reports whether the mutating path can have anything to do with a
// request, from its envelope alone: when it cannot (an operation no step
// handles, a subresource, an exempt namespace, a kind outside the catalog), the
// webhook answers without decoding the object. It decides nothing Mutate would
// decide otherwise.
func (p *Pipeline) MutateNeeds(e Envelope) bool {
	if !p.Mutates(e.Operation) || e.SubResource != "" || p.exemptNamespace(e.Namespace) {
		return false
	}
	_, ok := integrations.Lookup(e.Kind)
	return ok
}

// Settler is a mutating step that can tell from the labels at the kind's own
// queue-label place alone (workload.PeekOwnLabels) that it would change
// nothing.
type Settler interface {
	Settled(namespace string, in *integrations.Integration, own map[string]string, view cluster.View) bool
}

// MutateSettled reports whether the mutating path would change nothing, from
// the envelope and the object's own labels: every step that handles the
// operation is a Settler and says so. The webhook then answers after that cheap
// decode. A step that is not a Settler always gets the whole object.
func (p *Pipeline) MutateSettled(e Envelope, own map[string]string, view cluster.View) bool {
	in, ok := integrations.Lookup(e.Kind)
	if !ok {
		return true
	}
	for _, s := range p.steps.Mutating {
		if !s.Handles(e.Operation) {
			continue
		}
		st, ok := s.(Settler)
		if !ok || !st.Settled(e.Namespace, in, own, view) {
			return false
		}
	}
	return true
}

// ValidateNeeds is MutateNeeds for the validating path, which also judges the
// scale of the catalog's scalable kinds.
func (p *Pipeline) ValidateNeeds(e Envelope) bool {
	if p.exemptNamespace(e.Namespace) {
		return false
	}
	if e.SubResource == ScaleSubResource {
		_, ok := integrations.LookupResource(e.Resource)
		return ok && e.Operation == admissionv1.Update
	}
	_, ok := integrations.Lookup(e.Kind)
	return (ok || IsInterimOwner(e.Kind)) && e.SubResource == ""
}

// ScaleSubResource is the subresource the validating path judges besides the
// object itself.
const ScaleSubResource = "scale"

// Validate runs the validating steps.
func (p *Pipeline) Validate(ctx context.Context, req *Request, view cluster.View) (*Decision, error) {
	if req.SubResource == ScaleSubResource && req.Operation == admissionv1.Update {
		return p.validateScale(ctx, req, view)
	}
	d := &Decision{}
	if IsInterimOwner(req.Kind.GroupKind()) {
		return p.validateInterim(ctx, req, view)
	}
	t, ok, err := p.target(req, view)
	if err != nil || !ok {
		return d, err
	}
	if err := run(ctx, p.steps.Validating, ValidationStep.Validate, req, t, view, d); err != nil {
		return nil, err
	}
	return d, nil
}

// validateInterim judges a ReplicaSet, an owner Kueue walks through to the
// workload above it, by its owner alone: it is not a workload.
func (p *Pipeline) validateInterim(ctx context.Context, req *Request, view cluster.View) (*Decision, error) {
	d := &Decision{}
	if req.Object == nil || req.SubResource != "" || p.exemptNamespace(req.Namespace) {
		return d, nil
	}
	t := Target{TrustedController: p.trust.Trusted(req.UserInfo)}
	if err := run(ctx, []ValidationStep{InterimOwnerGuard{}}, ValidationStep.Validate, req, t, view, d); err != nil {
		return nil, err
	}
	return d, nil
}

// validateScale judges a scale of a queued workload as the update of the
// workload it amounts to: the cached workload with the new replica count, so
// that every guard and policy that judges a growing update judges the scale
// too. A workload the view does not hold is not queued: nothing to judge.
func (p *Pipeline) validateScale(ctx context.Context, req *Request, view cluster.View) (*Decision, error) {
	in, ok := integrations.LookupResource(req.Resource.GroupResource())
	if !ok || req.Object == nil || (req.Namespace != "" && p.exempt != nil && p.exempt.IsExempt(req.Namespace)) {
		return &Decision{}, nil
	}
	// The Scale carries its workload's uid: the cache must hold that object.
	current, ok, err := view.ScaleTarget(in.GVK.GroupKind(), req.Namespace, req.Name, req.Object.GetUID())
	if err != nil {
		return nil, err
	}
	if !ok {
		return &Decision{}, nil
	}
	replicas, _, err := unstructured.NestedInt64(req.Object.Object, "spec", "replicas")
	if err != nil {
		return nil, fmt.Errorf("reading the scale's spec.replicas: %w", err)
	}
	path, ok := view.ScaleReplicasPath(in)
	if !ok {
		return nil, fmt.Errorf("kueue-guard cannot read where %s's scale subresource puts the replicas (its CRD's specReplicasPath)", in.GVK.Kind)
	}
	scaled := current.DeepCopy()
	if err := unstructured.SetNestedField(scaled.Object, replicas, path...); err != nil {
		return nil, fmt.Errorf("applying the scale to %s %s/%s: %w", in.GVK.Kind, req.Namespace, req.Name, err)
	}
	update := *req
	update.Kind, update.SubResource, update.Raw, update.Size = in.GVK, "", nil, 0
	update.Object, update.OldObject = scaled, current
	return p.Validate(ctx, &update, view)
}

// ValidateControllers runs the controller guard on any kind: Deployments, Pods
// and webhook configurations alike, everywhere but kueue-guard's own namespace.
func (p *Pipeline) ValidateControllers(ctx context.Context, req *Request, view cluster.View) (*Decision, error) {
	d := &Decision{}
	if req.Object == nil || (req.SubResource != "" && !isControllerSubResource(req.Kind, req.SubResource)) ||
		(req.Namespace != "" && p.exempt != nil && p.exempt.IsOwnNamespace(req.Namespace)) {
		return d, nil
	}
	if err := run(ctx, p.steps.Controllers, ValidationStep.Validate, req, Target{}, view, d); err != nil {
		return nil, err
	}
	return d, nil
}

// Workload runs the mutating path, then the validating path on the mutated
// object, as the API server does for one request: what the offline reviewer and
// the benchmarks use. The decision has the patch and every violation of both.
func (p *Pipeline) Workload(ctx context.Context, req *Request, view cluster.View) (*Decision, error) {
	m, err := p.Mutate(ctx, req, view)
	if err != nil {
		return nil, err
	}
	if !m.Allowed() {
		return m, nil
	}
	validated := *req
	if m.Object != nil {
		validated.Object, validated.Raw, validated.Size = m.Object, nil, 0
	}
	if held := p.kueueWebhook(&validated, view); held != nil {
		validated.Object, validated.Raw, validated.Size = held, nil, 0
	}
	v, err := p.Validate(ctx, &validated, view)
	if err != nil {
		return nil, err
	}
	v.Patch, v.Object, v.Defaulted = m.Patch, m.Object, m.Defaulted
	v.Violations = append(m.Violations, v.Violations...)
	v.Warnings = append(m.Warnings, v.Warnings...)
	for k, val := range m.AuditAnnotations {
		v.Annotate(k, val)
	}
	return v, nil
}

// stepFunc is a step's Mutate or Validate.
type stepFunc[S Step] func(S, context.Context, *Request, Target, cluster.View, *Decision) error

// run runs, in order, each step that handles the request's operation.
func run[S Step](ctx context.Context, steps []S, do stepFunc[S], req *Request, t Target, view cluster.View, d *Decision) error {
	for _, s := range steps {
		if !s.Handles(req.Operation) {
			continue
		}
		if err := runStep(ctx, s, do, req, t, view, d); err != nil {
			return err
		}
	}
	return nil
}

// runStep contains any panic from a step (or from third-party code it calls) so
// that one odd object fails its own request and never takes the server down.
func runStep[S Step](ctx context.Context, s S, do stepFunc[S], req *Request, t Target, view cluster.View, d *Decision) (err error) {
	defer func() {
		if r := recover(); r != nil {
			log.FromContext(ctx).Error(fmt.Errorf("panic: %v", r), "admission step panicked",
				"step", s.Name(), "stack", string(debug.Stack()))
			err = &StepError{Step: s.Name(), Err: errors.New("unexpected failure on this object")}
		}
	}()
	if err := do(s, ctx, req, t, view, d); err != nil {
		return &StepError{Step: s.Name(), Err: err}
	}
	return nil
}
