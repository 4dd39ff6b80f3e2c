// Package kueueorder checks that kueue-guard's mutating webhook runs before
// Kueue's. The API server calls mutating webhook configurations in name order;
// when Kueue's runs first, it sees a job without the queue label kueue-guard is
// about to add, does not suspend it, and the job is created running, outside
// quota. Kueue's configuration is found by the webhooks it serves, whatever it
// is called (a Helm release "aks-kueue" names it
// "aks-kueue-mutating-webhook-configuration").
package kueueorder

import (
	"cmp"
	"net/url"
	"path"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
)

// KueueMutatingPath is the path Kueue's manager serves the mutating webhook of
// a kind at (controller-runtime's convention: /mutate-<group with dashes>-<version>-<kind>).
func KueueMutatingPath(gvk schema.GroupVersionKind) string {
	return "/mutate-" + strings.ReplaceAll(gvk.Group, ".", "-") + "-" + gvk.Version + "-" + strings.ToLower(gvk.Kind)
}

// kueuePaths are Kueue's mutating webhook paths for every catalog kind.
var kueuePaths = func() map[string]bool {
	m := map[string]bool{}
	for _, in := range integrations.All() {
		m[KueueMutatingPath(in.GVK)] = true
	}
	return m
}()

// kueueAPIPathPrefix starts the paths of Kueue's webhooks for its own API
// (ClusterQueue, ResourceFlavor, Workload), whatever its version.
const kueueAPIPathPrefix = "/mutate-kueue-x-k8s-io-"

// isKueues reports whether a configuration is Kueue's: it serves a webhook of
// Kueue's own API. A workload path alone does not tell, since the frameworks'
// operators serve the same controller-runtime paths (the JobSet operator's
// configuration has /mutate-jobset-x-k8s-io-v1alpha2-jobset and /mutate--v1-pod).
func isKueues(c admissionregistrationv1.MutatingWebhookConfiguration) bool {
	for _, w := range c.Webhooks {
		if strings.HasPrefix(WebhookPath(w.ClientConfig), kueueAPIPathPrefix) {
			return true
		}
	}
	return false
}

// Registered reports whether Kueue's configuration registers one of its
// workload mutating webhooks: while none does, nothing suspends a new queued
// workload but kueue-guard.
func Registered(configs []admissionregistrationv1.MutatingWebhookConfiguration) bool {
	for _, c := range configs {
		if !isKueues(c) {
			continue
		}
		for _, w := range c.Webhooks {
			if kueuePaths[WebhookPath(w.ClientConfig)] {
				return true
			}
		}
	}
	return false
}

// Problem is a configuration holding Kueue's workload webhooks that the API
// server calls before kueue-guard's, and whose webhooks are not re-invoked
// after later mutations.
type Problem struct {
	// Configuration is the MutatingWebhookConfiguration's name.
	Configuration string
	// Webhooks are its webhooks that serve Kueue's workload paths.
	Webhooks []string
}

// Check returns every configuration other than ours that serves Kueue's
// workload mutating webhooks, sorts before ours, and does not set
// reinvocationPolicy IfNeeded on them (with IfNeeded the API server calls
// Kueue's webhook again after ours has labelled the job, so order does not
// matter). Sorted by name. ours empty checks nothing.
func Check(ours string, configs []admissionregistrationv1.MutatingWebhookConfiguration) []Problem {
	if ours == "" {
		return nil
	}
	var out []Problem
	for _, c := range configs {
		if c.Name == ours || c.Name > ours || !isKueues(c) {
			continue
		}
		var hooks []string
		for _, w := range c.Webhooks {
			if kueuePaths[WebhookPath(w.ClientConfig)] &&
				(w.ReinvocationPolicy == nil || *w.ReinvocationPolicy != admissionregistrationv1.IfNeededReinvocationPolicy) {
				hooks = append(hooks, w.Name)
			}
		}
		if len(hooks) > 0 {
			out = append(out, Problem{Configuration: c.Name, Webhooks: hooks})
		}
	}
	slices.SortFunc(out, func(a, b Problem) int { return cmp.Compare(a.Configuration, b.Configuration) })
	return out
}

// WebhookPath is the path a webhook is served at, whether it is called through
// a Service or by URL, cleaned ("https://host//mutate-x" serves /mutate-x, as
// an HTTP mux sees it); "" when neither names one.
func WebhookPath(c admissionregistrationv1.WebhookClientConfig) string {
	p := ""
	if c.Service != nil && c.Service.Path != nil {
		p = *c.Service.Path
	} else if c.URL != nil {
		if u, err := url.Parse(*c.URL); err == nil {
			p = u.Path
		}
	}
	if p == "" {
		return ""
	}
	return path.Clean("/" + p)
}
