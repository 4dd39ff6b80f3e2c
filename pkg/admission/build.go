package admission

import (
	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/pkg/trust"
)

// configExemptions adapts the configuration to Exemptions.
type configExemptions struct {
	cfg *config.Configuration
	own string
}

func (e configExemptions) IsExempt(ns string) bool { return e.cfg.IsExempt(ns, e.own) }

func (e configExemptions) IsOwnNamespace(ns string) bool { return e.own != "" && ns == e.own }

// Build composes the pipeline the configuration describes, in order: the
// built-in guards first, the policies last. The server and the offline reviewer both call it, so they run the
// same steps; policies (which live in their own package) come in as extra
// validating steps, run last.
func Build(cfg *config.Configuration, ownNamespace string, policies ...ValidationStep) (*Pipeline, error) {
	resolver, err := NewQueueResolver(cfg)
	if err != nil {
		return nil, err
	}
	queuePolicy, err := NewQueuePolicy(cfg, resolver)
	if err != nil {
		return nil, err
	}
	suspender, absence := NewKueueAbsence(cfg.KueueAbsent)
	validating := []ValidationStep{
		ObjectShape{},
		OwnerGuard{},
		NewBackstop(queuePolicy),
		LabelConsistency{},
		NewIntegrationGuard(cfg, resolver),
		NewQueueChecks(cfg.Defaulting.MissingLocalQueue),
		QueueImmutability{},
		NewQueueRetention(queuePolicy),
		PodGroupResize{},
		absence,
		KueueHold{},
		ReleaseGuard{},
	}
	return NewPipeline(configExemptions{cfg: cfg, own: ownNamespace}, trust.New(cfg.Trust.Controllers), Steps{
		// Suspension after defaulting: a defaulted queue counts.
		Mutating:    []MutationStep{NewDefaulter(resolver, cfg.Defaulting.MissingLocalQueue), suspender, KueueHolder{}},
		Validating:  append(validating, policies...),
		Controllers: []ValidationStep{NewControllerGuard(cfg)},
	}), nil
}
