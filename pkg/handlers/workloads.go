// Package handlers adapts the admission pipeline to controller-runtime's webhook
// server: decode the AdmissionRequest, run the pipeline against the informer-backed
// cluster view, and build the response with controller-runtime's helpers.
package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	guard "github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/jsonmap"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// Decision labels of the request metrics.
const (
	decisionAllowed = "allowed"
	decisionPatched = "patched"
	decisionDenied  = "denied"
	decisionError   = "error"
)

// runFunc is one of the pipeline's two paths.
type runFunc func(ctx context.Context, req *guard.Request, view cluster.View) (*guard.Decision, error)

// Observer sees every request a handler answered, with its response; tests use
// it to compare the webhook's answers with the offline reviewer's.
type Observer func(webhook string, req admission.Request, resp admission.Response)

// Handler serves one webhook path by running one path of the pipeline.
type Handler struct {
	name string
	run  runFunc
	// needs reports whether a request can need any work, from its envelope;
	// when it cannot, it is answered without reading the object. nil: every
	// request can.
	needs func(guard.Envelope) bool
	// settled reports, from the object's own labels (a cheap decode), that the
	// path would change nothing. nil: always decode the object.
	settled  func(guard.Envelope, map[string]string, cluster.View) bool
	view     cluster.View
	metrics  *boundMetrics
	observer Observer
}

// WithObserver returns the handler with an observer set.
func (h *Handler) WithObserver(o Observer) *Handler {
	h.observer = o
	return h
}

var _ admission.Handler = (*Handler)(nil)

// NewMutatingWorkloads serves /mutate-workloads: queue-name defaulting.
func NewMutatingWorkloads(p *guard.Pipeline, view cluster.View, m *Metrics) *Handler {
	const name = "mutate-workloads"
	return &Handler{name: name, run: p.Mutate, needs: p.MutateNeeds, settled: p.MutateSettled, view: view, metrics: m.bind(name)}
}

// NewValidatingWorkloads serves /validate-workloads.
func NewValidatingWorkloads(p *guard.Pipeline, view cluster.View, m *Metrics) *Handler {
	const name = "validate-workloads"
	return &Handler{name: name, run: p.Validate, needs: p.ValidateNeeds, view: view, metrics: m.bind(name)}
}

// NewValidatingControllers serves /validate-kueue-controllers: the Kueue singleton guard.
func NewValidatingControllers(p *guard.Pipeline, view cluster.View, m *Metrics) *Handler {
	const name = "validate-kueue-controllers"
	return &Handler{name: name, run: p.ValidateControllers, view: view, metrics: m.bind(name)}
}

// Handle implements admission.Handler. It never panics on bad input: a request
// it cannot read gets a 400 that names the problem.
func (h *Handler) Handle(ctx context.Context, ar admission.Request) admission.Response {
	return h.handle(ctx, ar, nil)
}

// handle is Handle, given the objects when they were decoded with the review.
func (h *Handler) handle(ctx context.Context, ar admission.Request, objs *objects) (resp admission.Response) {
	start := time.Now()
	// The request's logger is built only when something is logged: most
	// requests log nothing at the default verbosity.
	var logger logr.Logger
	requestLog := func() logr.Logger {
		if logger.GetSink() == nil {
			logger = log.FromContext(ctx).WithValues("webhook", h.name, "uid", ar.UID, "operation", ar.Operation,
				"kind", ar.Kind.Kind, "namespace", ar.Namespace, "name", ar.Name)
		}
		return logger
	}
	decision := decisionError
	// A panic is recovered by Serve into a 500 for this request only; this deferred accounting
	// still runs while it unwinds, so the request is counted as an error. Step
	// panics never get here: the pipeline contains them per step.
	defer func() {
		h.metrics.observe(ar.Operation, decision, time.Since(start))
		if h.observer != nil {
			h.observer(h.name, ar, resp)
		}
	}()

	env := guard.Envelope{Operation: ar.Operation,
		Kind:        schema.GroupKind{Group: ar.Kind.Group, Kind: ar.Kind.Kind},
		Resource:    schema.GroupResource{Group: ar.Resource.Group, Resource: ar.Resource.Resource},
		SubResource: ar.SubResource, Namespace: ar.Namespace}
	if (h.needs != nil && !h.needs(env)) || (objs == nil && h.settledByPeek(env, ar.Object.Raw)) {
		decision = decisionAllowed
		return admission.Allowed("")
	}
	req, err := newRequest(ar, objs)
	if err != nil {
		requestLog().V(1).Info("rejecting unreadable request", "error", err.Error())
		return admission.Errored(http.StatusBadRequest, err)
	}
	d, err := h.run(ctx, req, h.view)
	if err != nil {
		requestLog().Error(err, "admission pipeline failed")
		return admission.Errored(http.StatusInternalServerError, err)
	}
	verbose := log.FromContext(ctx).V(1).Enabled()
	for _, v := range d.Violations {
		h.metrics.violation(v.Rule, string(v.Enforcement))
		// A denial is logged with its decision below; warnings are routine.
		if verbose {
			requestLog().V(1).Info("rule violated", "rule", v.Rule, "enforcement", v.Enforcement, "field", v.Field, "message", v.Message)
		}
	}
	resp = response(req, d)
	switch {
	case !resp.Allowed:
		decision = decisionDenied
	case len(resp.Patches) > 0:
		decision = decisionPatched
	default:
		decision = decisionAllowed
	}
	// Every denial is logged with its request and the rules that denied it;
	// admissions, with or without warnings, only at V(1), so that a busy
	// cluster's log stays readable (warnings are counted by rule).
	switch {
	case decision == decisionDenied:
		requestLog().Info("decided", "decision", d.Summary(), "violations", denialText(d))
	case verbose:
		requestLog().V(1).Info("decided", "decision", d.Summary())
	}
	return resp
}

// settledByPeek reads only the object's own labels and asks whether the path
// would change nothing. Anything the peek cannot read is left to the full
// decode, which reports it.
func (h *Handler) settledByPeek(env guard.Envelope, raw []byte) bool {
	if h.settled == nil || len(raw) == 0 {
		return false
	}
	in, ok := integrations.Lookup(env.Kind)
	if !ok {
		return false
	}
	own, err := workload.PeekOwnLabels(raw, in)
	return err == nil && h.settled(env, own, h.view)
}

// denialText lists the denying violations as "[rule] field: message".
func denialText(d *guard.Decision) []string {
	var out []string
	for _, v := range d.Denials() {
		out = append(out, fmt.Sprintf("[%s] %s: %s", v.Rule, fieldPath(v.Field), v.Message))
	}
	return out
}

// newRequest decodes an AdmissionRequest into the pipeline's Request; objs,
// when not nil, are its objects, already decoded.
func newRequest(ar admission.Request, objs *objects) (*guard.Request, error) {
	req := &guard.Request{
		UID:         ar.UID,
		Operation:   ar.Operation,
		Kind:        schema.GroupVersionKind{Group: ar.Kind.Group, Version: ar.Kind.Version, Kind: ar.Kind.Kind},
		Resource:    schema.GroupVersionResource{Group: ar.Resource.Group, Version: ar.Resource.Version, Resource: ar.Resource.Resource},
		SubResource: ar.SubResource,
		Namespace:   ar.Namespace,
		Name:        ar.Name,
		UserInfo:    ar.UserInfo,
		DryRun:      ar.DryRun != nil && *ar.DryRun,
		// The object is decoded here for this request only.
		Disposable: true,
	}
	if objs != nil {
		req.Object, req.OldObject, req.Size, req.Undecoded = objs.object, objs.oldObject, objs.size, objs.undecoded
		if ar.Operation == admissionv1.Delete {
			req.Object = nil
		} else if req.Object == nil {
			return nil, errors.New("admission request has no object")
		}
		return named(req), nil
	}
	var err error
	var managedFields jsonmap.Deferred
	if ar.Operation != admissionv1.Delete {
		if req.Object, managedFields, err = decode(ar.Object.Raw, "object"); err != nil {
			return nil, err
		}
		req.Raw, req.Size = ar.Object.Raw, len(ar.Object.Raw)
		req.Undecoded = undecoded(req.Undecoded, req.Object, managedFields)
	}
	if len(ar.OldObject.Raw) > 0 {
		if req.OldObject, managedFields, err = decode(ar.OldObject.Raw, "oldObject"); err != nil {
			return nil, err
		}
		req.Undecoded = undecoded(req.Undecoded, req.OldObject, managedFields)
	}
	return named(req), nil
}

// named gives a request without a name (a CREATE with generateName) its
// object's.
func named(req *guard.Request) *guard.Request {
	if req.Name == "" && req.Object != nil {
		req.Name = req.Object.GetName()
	}
	return req
}

// fieldPath carries a violation's already-rendered path into a field.Path.
// fieldPath is the cause's field: a violation about the object as a whole is
// reported on its metadata, as the API server does for object-level errors.
func fieldPath(p *field.Path) *field.Path {
	if p == nil {
		return field.NewPath("metadata")
	}
	return p
}

// objectManagedFields is where an object's managedFields are, which decode
// leaves undecoded (see undecodedPaths).
var objectManagedFields = [][]string{guard.ManagedFieldsPath}

// decode decodes an object, and keeps its managedFields undecoded when it
// can.
func decode(raw []byte, what string) (*unstructured.Unstructured, jsonmap.Deferred, error) {
	none := jsonmap.Deferred{}
	if len(raw) == 0 {
		return nil, none, fmt.Errorf("admission request has no %s", what)
	}
	// jsonmap decodes as unstructured's decoder does, in one pass; what it
	// declines (here also a repeated metadata or managedFields key) is left
	// to that decoder, which names the problem.
	if m, undecoded, ok := jsonmap.ObjectDeferring(raw, len(objectManagedFields[0]), objectManagedFields); ok {
		if u, ok := kubernetesObject(m); ok {
			return u, undecoded[0], nil
		}
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, none, fmt.Errorf("admission request %s is not a valid Kubernetes object: %w", what, err)
	}
	return u, none, nil
}

// response builds the AdmissionResponse. A denial is a 422 Invalid with one cause
// per violation, the same shape as built-in validation, so kubectl prints each
// field and message.
func response(req *guard.Request, d *guard.Decision) admission.Response {
	if !d.Allowed() {
		var errs field.ErrorList
		for _, v := range d.Denials() {
			errs = append(errs, field.Forbidden(fieldPath(v.Field), fmt.Sprintf("[%s] %s", v.Rule, v.Message)))
		}
		status := apierrors.NewInvalid(req.Kind.GroupKind(), req.Name, errs).ErrStatus
		resp := admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
		return resp.WithWarnings(d.Warnings...)
	}
	var resp admission.Response
	if len(d.Patch) > 0 {
		resp = admission.Patched("", d.Patch...)
	} else {
		resp = admission.Allowed("")
	}
	resp.AuditAnnotations = d.AuditAnnotations
	return resp.WithWarnings(d.Warnings...)
}
