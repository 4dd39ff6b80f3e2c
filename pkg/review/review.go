// Package review is `kueue-guard review`, the offline policy-as-code reviewer: it
// reads manifests (files, directories, stdin; multi-document YAML, JSON, Lists,
// `helm template` and `kustomize build` output), builds the cluster state they
// would be applied to, runs every object through the same admission pipeline as
// the webhook (admission.Build: queue defaulting, integration guard, queue
// checks, controller guard, Rego policies) as a CREATE by a given user, and
// renders the result as text, JSON, JUnit or SARIF.
//
// The pipeline is the webhook's, unchanged; what the review adds is honesty about
// what it does not know. Without a cluster state, a LocalQueue the manifests do
// not define is "unknown", never "missing": the review says so in a note instead
// of warning or denying about it.
package review

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"gomodules.xyz/jsonpatch/v2"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/fieldpath"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/kueuecontroller"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/pkg/schedsim"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// reviewer holds one review's pipeline and state.
type reviewer struct {
	opts     Options
	cfg      *config.Configuration
	state    *State
	pipeline *admission.Pipeline
	policies map[string]*policies.Policy
	user     authenticationv1.UserInfo
	ns       string
	sim      *schedsim.Simulator
}

// Review runs the pipeline on every manifest and returns the report. readErrs
// are the errors met while reading the manifests; they are part of the report and
// make its exit code ExitInputError. The only error returned is a *SetupError.
func Review(ctx context.Context, o Options, manifests []*Manifest, readErrs []*InputError) (*Report, error) {
	r := &reviewer{opts: o, cfg: o.Config, state: o.State, ns: o.DefaultNamespace}
	if r.cfg == nil {
		r.cfg = config.Default()
	}
	if r.state == nil {
		r.state = NewState(r.cfg.KueueNamespace)
	}
	if r.ns == "" {
		r.ns = DefaultNamespace
	}
	r.user = *o.User.DeepCopy()
	if !slices.Contains(r.user.Groups, AuthenticatedGroup) {
		r.user.Groups = append(r.user.Groups, AuthenticatedGroup)
	}

	report := &Report{APIVersion: ReportAPIVersion, Kind: ReportKind, Notes: []string{}, Errors: []*InputError{},
		Objects: []*Object{}, rules: map[string]RuleInfo{}}
	report.Errors = append(report.Errors, readErrs...)

	// Objects of the manifests that are cluster state join it before anything is
	// reviewed: a pull request adding a namespace and its jobs is one change.
	objects := make([]*Object, len(manifests))
	for i, m := range manifests {
		objects[i] = newObject(m)
		if !IsManifestStateKind(m.Object.GroupVersionKind().GroupKind()) {
			continue
		}
		o := objects[i]
		o.Status = StatusClusterState
		o.Reason = "added to the cluster state the other objects are reviewed against"
		note, err := r.state.addFromManifest(m.Object)
		switch {
		case err != nil:
			o.Status, o.Reason = StatusError, err.Error()
		case note != "":
			o.Notes = append(o.Notes, note)
		}
	}
	report.Notes = append(report.Notes, r.followKueue()...)
	if err := r.build(); err != nil {
		return nil, err
	}
	for _, ri := range AllRules(r.policies) {
		report.rules[ri.ID] = ri
	}
	for i, m := range manifests {
		if objects[i].Status == "" {
			r.review(ctx, m, objects[i])
		}
		if r.opts.Mutated && objects[i].Mutated == nil && objects[i].Status != StatusError {
			objects[i].Mutated = m.Object.Object
		}
		for _, f := range objects[i].Findings {
			report.rules[f.Rule] = ruleInfo(f.Rule, r.policies)
		}
	}
	report.Objects = objects
	report.Notes = append(report.Notes, r.state.Notes...)
	if !r.state.Known() {
		report.Notes = append(report.Notes, "no cluster state (--cluster-state or --live-cluster): Namespaces, LocalQueues and "+
			"ClusterQueues that the manifests do not define are unknown; queue checks and explanations say so instead of guessing")
	}
	report.Context = r.context()
	report.files = filesOf(manifests, readErrs)
	report.finish(o.FailOnWarn)
	return report, nil
}

// build composes the webhook's pipeline for this review.
func (r *reviewer) build() error {
	// A shallow copy: the pipeline only reads the configuration, and only a
	// value field changes.
	copied := *r.cfg
	cfg := &copied
	if !r.state.Known() && cfg.Defaulting.MissingLocalQueue == config.MissingLocalQueueDeny {
		// Without cluster state a queue the manifests do not define is unknown,
		// not missing: deny would reject every such workload (and stop the
		// mutating path before the validating one). Warn keeps the pipeline going
		// as if the queue existed; review() turns the warning into a note that
		// names the configured action.
		cfg.Defaulting.MissingLocalQueue = config.MissingLocalQueueWarn
	}
	var steps []admission.ValidationStep
	r.policies = map[string]*policies.Policy{}
	if r.opts.PolicyDir != "" {
		engine, err := policies.NewEngine(policies.Options{Directory: r.opts.PolicyDir, OnError: cfg.Policies.OnError,
			AllowBuiltins: cfg.Policies.AllowBuiltins, Resync: -1})
		if err != nil {
			return &SetupError{Err: fmt.Errorf("policies: %w", err)}
		}
		if err := engine.Load(); err != nil {
			return &SetupError{Err: fmt.Errorf("loading policies from %s: %w", r.opts.PolicyDir, err)}
		}
		for _, p := range engine.Policies() {
			r.policies[p.ID] = p
		}
		steps = append(steps, policies.NewStep(engine))
	}
	p, err := admission.Build(cfg, r.opts.OwnNamespace, steps...)
	if err != nil {
		return &SetupError{Err: fmt.Errorf("configuration: %w", err)}
	}
	r.pipeline = p
	return nil
}

func newObject(m *Manifest) *Object {
	return &Object{Source: m.Source, APIVersion: m.Object.GetAPIVersion(), Kind: m.Object.GetKind(),
		Namespace: m.Object.GetNamespace(), Name: objectName(m.Object), Checks: []string{}, Findings: []Finding{},
		Warnings: []string{}, Patch: []jsonpatch.Operation{}, Notes: []string{}, manifest: m}
}

// objectName is the object's name, its generateName followed by "*", or "" for
// an unnamed document (one the review skips).
func objectName(obj *unstructured.Unstructured) string {
	if n := obj.GetName(); n != "" {
		return n
	}
	if g := obj.GetGenerateName(); g != "" {
		return g + "*"
	}
	return ""
}

// review runs the pipeline on one object, as the API server would for a CREATE:
// the mutating webhook, then both validating webhooks on the mutated object.
func (r *reviewer) review(ctx context.Context, m *Manifest, o *Object) {
	req, err := r.request(m)
	if err != nil {
		o.Status, o.Reason = StatusError, err.Error()
		return
	}
	o.Namespace = req.Namespace
	gk := req.Kind.GroupKind()
	in, catalog := integrations.Lookup(gk)
	controller := controllerKinds[gk]
	exempt := req.Namespace != "" && r.cfg.IsExempt(req.Namespace, r.opts.OwnNamespace)

	// Only what the API server would send: the webhooks' match conditions skip
	// parts of other workloads, and objects that cannot run Kueue.
	d := &admission.Decision{}
	partOf := r.pipeline.Trust().PartOfAnother(req.UserInfo, req.Object)
	if catalog && !exempt && !partOf {
		o.Checks = append(o.Checks, CheckWorkload)
		if d, err = r.pipeline.Workload(ctx, req, r.state.Snapshot); err != nil {
			o.Status, o.Reason = StatusError, err.Error()
			return
		}
	}
	// The validating webhooks see the object as mutated.
	final := req.Object
	if d.Object != nil {
		final = d.Object
	}
	// The API server calls both validating webhooks (in parallel) and rejects the
	// request if either denies; the review reports both webhooks' findings. (It
	// also runs the controller guard after a mutating denial, which the API
	// server would not reach: a review lists everything wrong at once.)
	validated := *req
	validated.Object, validated.Raw, validated.Size = final, nil, 0
	c, err := r.pipeline.ValidateControllers(ctx, &validated, r.state.Snapshot)
	if err != nil {
		o.Status, o.Reason = StatusError, err.Error()
		return
	}
	if controller && (req.Namespace == "" || req.Namespace != r.opts.OwnNamespace) &&
		(admission.IsWebhookConfiguration(gk) || kueuecontroller.MayRunKueue(final)) {
		o.Checks = append(o.Checks, CheckControllers)
	}
	d.Violations = append(d.Violations, c.Violations...)
	d.Warnings = append(d.Warnings, c.Warnings...)

	if catalog && !exempt && !r.state.Known() {
		r.unknownQueue(req, in, final, d, o)
	}
	for _, v := range d.Violations {
		o.Findings = append(o.Findings, Finding{Rule: v.Rule, Enforcement: string(v.Enforcement), Field: fieldpath.String(v.Field),
			Message: v.Message, Line: m.Line(v.Field)})
	}
	o.Warnings = append(o.Warnings, d.Warnings...)
	o.Patch = append(o.Patch, sortedPatch(d.Patch)...)
	if c := d.Defaulted; c != nil {
		o.Defaulted = &Defaulted{LocalQueue: c.LocalQueue, PriorityClass: c.PriorityClass, Source: c.Source}
	}
	switch {
	case len(o.Checks) == 0 && gk == configurationKind:
		o.Status, o.Reason = StatusSkipped, "kueue-guard's own configuration, not a cluster object: pass it with --config"
	case len(o.Checks) == 0 && exempt:
		o.Status, o.Reason = StatusSkipped, fmt.Sprintf("namespace %q is exempt from kueue-guard", req.Namespace)
	case len(o.Checks) == 0 && catalog && partOf:
		owner := metav1.GetControllerOf(req.Object)
		o.Status, o.Reason = StatusSkipped, fmt.Sprintf("part of %s %s: it is judged as that workload, "+
			"and the webhooks are not called for it", owner.Kind, owner.Name)
	case len(o.Checks) == 0 && controller:
		o.Status, o.Reason = StatusSkipped, "cannot run a Kueue controller (no Kueue label or image): the controller guard is not called for it"
	case len(o.Checks) == 0:
		o.Status, o.Reason = StatusSkipped, "not a Kueue workload or controller kind: nothing checks it"
	case d.Allowed():
		o.Status = StatusAllowed
	default:
		o.Status = StatusDenied
	}
	if o.Status != StatusSkipped && catalog {
		r.namespaceNote(req.Namespace, o)
	}
	if r.opts.Mutated {
		mutated, err := applyPatch(m.Object, d.Patch)
		if err != nil {
			o.Notes = append(o.Notes, "cannot show the mutated object: "+err.Error())
		} else {
			o.Mutated = mutated
		}
	}
	if r.opts.Explain && catalog && !exempt && o.Status != StatusError {
		var choice *admission.QueueChoice
		if d.Defaulted != nil {
			choice = d.Defaulted
		}
		o.Placement = r.explain(ctx, final, in, req.Namespace, choice)
	}
	if r.opts.Simulate && catalog && !exempt && o.Status == StatusAllowed {
		r.simulate(ctx, final, in, o)
	}
}

// unknownQueue applies what the review does not know, without cluster state, to
// a workload's decision: a LocalQueue the manifests do not define may well exist,
// so the kueue_guard.missing_local_queue violation (and its warning) is replaced by a note
// that says what the configured action would do if it did not.
func (r *reviewer) unknownQueue(req *admission.Request, in *integrations.Integration, final *unstructured.Unstructured, d *admission.Decision, o *Object) {
	queue := workload.QueueName(final, in)
	if queue == "" {
		if !r.pipeline.Trust().PartOfAnother(req.UserInfo, final) {
			o.Notes = append(o.Notes, fmt.Sprintf("queue unknown: no %s, and namespace %q's default queue (annotation %s, "+
				"defaulting rules, Kueue's LocalQueue %q) is unknown without cluster state; without a queue, Kueue, "+
				"the queue checks and the policies ignore this workload",
				integrations.QueueNameLabel, req.Namespace, admission.DefaultQueueAnnotation, admission.KueueDefaultLocalQueue))
		}
		return
	}
	if _, ok := r.state.Snapshot.LocalQueue(req.Namespace, queue); ok {
		return
	}
	var kept []admission.Violation
	dropped := map[string]bool{}
	for _, v := range d.Violations {
		if v.Rule == admission.RuleMissingLocalQueue {
			dropped[v.Message] = true
			continue
		}
		kept = append(kept, v)
	}
	d.Violations = kept
	var warnings []string
	for _, w := range d.Warnings {
		if !dropped[w] {
			warnings = append(warnings, w)
		}
	}
	d.Warnings = warnings
	action := string(r.cfg.Defaulting.MissingLocalQueue)
	o.Notes = append(o.Notes, fmt.Sprintf("LocalQueue %q in namespace %q is unknown without cluster state: if it does "+
		"not exist, defaulting.missingLocalQueue=%s %s; the policies saw no LocalQueue or ClusterQueue",
		queue, req.Namespace, action, missingActionEffect(action)))
}

func missingActionEffect(action string) string {
	switch config.MissingLocalQueueAction(action) {
	case config.MissingLocalQueueDeny:
		return "denies the workload"
	case config.MissingLocalQueueIgnore:
		return "admits it silently (it stays pending)"
	}
	return "admits it with a warning (it stays pending)"
}

// namespaceNote says when the workload's namespace is not known.
func (r *reviewer) namespaceNote(ns string, o *Object) {
	if _, ok := r.state.Snapshot.Namespace(ns); ok {
		return
	}
	if r.state.Known() {
		o.Notes = append(o.Notes, fmt.Sprintf("namespace %q is not in the cluster state nor in the manifests: "+
			"the API server rejects objects in a namespace that does not exist", ns))
		return
	}
	o.Notes = append(o.Notes, fmt.Sprintf("namespace %q is unknown without cluster state: the policies saw none of its "+
		"labels and annotations", ns))
}

func (r *reviewer) context() Context {
	c := Context{ClusterState: r.state.Source, ClusterStateSource: r.state.Where, Config: r.opts.ConfigFile,
		InstallProfile: string(r.cfg.InstallProfile), PolicyDirectory: r.opts.PolicyDir, Policies: sortedKeys(r.policies),
		User: User{Username: r.user.Username, Groups: append([]string{}, r.user.Groups...)}}
	return c
}

// filesOf lists the files read, in the order they were read.
func filesOf(ms []*Manifest, errs []*InputError) []string {
	seq := map[string]int{}
	note := func(file string, n int) {
		if cur, ok := seq[file]; !ok || n < cur {
			seq[file] = n
		}
	}
	for _, m := range ms {
		note(m.Source.File, m.fileSeq)
	}
	for _, e := range errs {
		note(e.File, e.fileSeq)
	}
	out := sortedKeys(seq)
	slices.SortStableFunc(out, func(a, b string) int { return cmp.Compare(seq[a], seq[b]) })
	return out
}
