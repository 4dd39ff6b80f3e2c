package equivalence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/review"
	"github.com/kueue-guard/kueue-guard/pkg/workload"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// webhookConfigurationKinds never reach admission webhooks (the API server
// exempts them so that no webhook can lock itself in): only the reviewer judges
// them, so they have no webhook answer to compare with.
var webhookConfigurationKinds = map[string]bool{"MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true}

// answer is what the webhook server answered for one CREATE, over all its
// webhooks (mutating, then both validating ones).
type answer struct {
	allowed  bool
	denials  []string
	warnings []string
	patch    []jsonpatch.Operation
	// original is the object the mutating webhook received (defaulted by the
	// API server), nil when it was not called.
	original []byte
	webhooks []string
}

func webhookAnswer(obs []observation) answer {
	a := answer{allowed: true, denials: []string{}, warnings: []string{}}
	for _, o := range obs {
		if o.request.Operation != admissionv1.Create {
			continue
		}
		a.webhooks = append(a.webhooks, o.webhook)
		r := o.response
		a.warnings = append(a.warnings, r.Warnings...)
		if o.webhook == mutateWebhook {
			a.patch = append(a.patch, r.Patches...)
			a.original = o.request.Object.Raw
		}
		if r.Allowed {
			continue
		}
		a.allowed = false
		Expect(r.Result).NotTo(BeNil())
		Expect(r.Result.Code).To(BeEquivalentTo(422), "the %s webhook failed instead of deciding: %s", o.webhook, r.Result.Message)
		Expect(r.Result.Details).NotTo(BeNil())
		for _, c := range r.Result.Details.Causes {
			a.denials = append(a.denials, c.Field+" "+strings.TrimPrefix(c.Message, "Forbidden: "))
		}
	}
	slices.Sort(a.denials)
	slices.Sort(a.warnings)
	slices.Sort(a.webhooks)
	a.webhooks = slices.Compact(a.webhooks)
	return a
}

// reviewerDenials renders the reviewer's denials as the webhook's causes: field
// (metadata when a violation has none, as the handler does), then "[rule] message".
func reviewerDenials(o *review.Object) []string {
	out := []string{}
	for _, f := range o.Findings {
		if f.Enforcement != "deny" {
			continue
		}
		field := f.Field
		if field == "" {
			field = "metadata"
		}
		out = append(out, fmt.Sprintf("%s [%s] %s", field, f.Rule, f.Message))
	}
	slices.Sort(out)
	return out
}

func sorted(ss []string) []string {
	out := append([]string{}, ss...)
	slices.Sort(out)
	return out
}

// flatten turns a patch into its leaf operations. The API server hands the
// webhook a defaulted object, which can hold a map (a CronJob's
// jobTemplate.metadata, say) that the manifest read by the reviewer lacks: the
// webhook then adds keys into that map where the reviewer adds the whole map.
// Both patches produce the same labels and annotations; comparing leaves — every
// "add /a {"b": {"c": v}}" read as "add /a/b/c v" — compares what they do, not
// how the diff happened to group it.
func flatten(ops []jsonpatch.Operation) []string {
	out := []string{}
	var walk func(op, path string, v any)
	walk = func(op, path string, v any) {
		if m, ok := v.(map[string]any); ok && len(m) > 0 && (op == "add" || op == "replace") {
			for k, vv := range m {
				walk(op, path+"/"+strings.NewReplacer("~", "~0", "/", "~1").Replace(k), vv)
			}
			return
		}
		b, err := json.Marshal(v)
		Expect(err).NotTo(HaveOccurred())
		out = append(out, op+" "+path+" "+string(b))
	}
	for _, op := range ops {
		walk(op.Operation, op.Path, op.Value)
	}
	slices.Sort(out)
	return out
}

// labelsAfter applies a patch to an object and returns the labels and
// annotations where the kind keeps its queue label.
func labelsAfter(original []byte, patch []jsonpatch.Operation, in *integrations.Integration) (map[string]string, map[string]string) {
	GinkgoHelper()
	out := original
	if len(patch) > 0 {
		pj, err := json.Marshal(patch)
		Expect(err).NotTo(HaveOccurred())
		p, err := jsonpatchapply.DecodePatch(pj)
		Expect(err).NotTo(HaveOccurred())
		out, err = p.Apply(original)
		Expect(err).NotTo(HaveOccurred())
	}
	u := &unstructured.Unstructured{}
	Expect(u.UnmarshalJSON(out)).To(Succeed())
	annotations, _ := workload.Annotations(u, in)
	return workload.Labels(u, in), annotations
}

var _ = Describe("the reviewer and the webhook", Ordered, ContinueOnFailure, func() {
	// The corpus is read when the tree is built, so that each object is its own
	// table entry; the review itself needs the suite's server and user.
	manifests, readErrs := review.Read([]string{corpusDir}, nil)
	var report *review.Report

	BeforeAll(func() {
		Expect(readErrs).To(BeEmpty())
		Expect(manifests).NotTo(BeEmpty())
		state, errs := review.LoadStateFile(statePath, cfg.KueueNamespace)
		Expect(errs).To(BeEmpty())
		// No Kueue serves here, which a state (a file, a listing) does not
		// say: the reviewer is told, as the server sees it.
		state.Snapshot.SetKueueServing(false)
		var err error
		report, err = review.Review(ctx, review.Options{Config: cfg, PolicyDir: policyDir, State: state, User: user,
			OwnNamespace: ownNamespace}, manifests, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(report.Objects).To(HaveLen(len(manifests)))
		Expect(report.Summary.Errors).To(BeZero())
		Expect(report.Context.User.Groups).To(ConsistOf(user.Groups))
	})

	var entries []TableEntry
	for i, m := range manifests {
		gk := m.Object.GroupVersionKind().GroupKind()
		if review.IsManifestStateKind(gk) || webhookConfigurationKinds[gk.Kind] {
			continue
		}
		entries = append(entries, Entry(fmt.Sprintf("%s %s (%s)", m.Object.GetKind(), m.Object.GetName(), m.Source), i))
	}

	DescribeTable("give the same decision, rules, warnings and patch for", func(i int) {
		m, o := manifests[i], report.Objects[i]
		obj := m.Object.DeepCopy()
		if obj.GetNamespace() == "" {
			namespaced, err := env.Client.IsObjectNamespaced(obj)
			Expect(err).NotTo(HaveOccurred())
			if namespaced {
				obj.SetNamespace(review.DefaultNamespace)
			}
		}
		key := objectKey(obj.GetKind(), obj.GetNamespace(), obj.GetName())
		rec.reset(key)
		err := env.Client.Create(ctx, obj)
		if err == nil {
			DeferCleanup(func() {
				Expect(client.IgnoreNotFound(env.Client.Delete(ctx, obj, client.PropagationPolicy("Background")))).To(Succeed())
			})
		}
		w := webhookAnswer(rec.get(key))
		By(fmt.Sprintf("the webhook answered through %v: allowed=%t denials=%v warnings=%v patch=%v", w.webhooks, w.allowed, w.denials, w.warnings, flatten(w.patch)))

		// The comparison must not be vacuous: the webhooks the reviewer ran
		// must have been called by the API server.
		if slices.Contains(o.Checks, review.CheckWorkload) {
			Expect(w.webhooks).To(ContainElement(mutateWebhook))
			if w.allowed || len(w.webhooks) > 1 {
				Expect(w.webhooks).To(ContainElement("validate-workloads"))
			}
		}
		if slices.Contains(o.Checks, review.CheckControllers) && w.allowed {
			Expect(w.webhooks).To(ContainElement("validate-kueue-controllers"))
		}
		if w.allowed {
			Expect(err).NotTo(HaveOccurred())
		} else {
			Expect(err).To(MatchError(ContainSubstring("denied the request")))
		}

		status := Not(Equal(review.StatusDenied))
		if !w.allowed {
			status = Equal(review.StatusDenied)
		}
		Expect(o.Status).To(status, "reviewer status %s, findings %v", o.Status, o.Findings)
		Expect(reviewerDenials(o)).To(Equal(w.denials))
		Expect(sorted(o.Warnings)).To(Equal(w.warnings))
		Expect(flatten(o.Patch)).To(Equal(flatten(w.patch)))

		if in, ok := integrations.Lookup(obj.GroupVersionKind().GroupKind()); ok && w.original != nil {
			raw, err := json.Marshal(m.Object.Object)
			Expect(err).NotTo(HaveOccurred())
			reviewLabels, reviewAnnotations := labelsAfter(raw, o.Patch, in)
			hookLabels, hookAnnotations := labelsAfter(w.original, w.patch, in)
			Expect(reviewLabels).To(Equal(hookLabels))
			Expect(reviewAnnotations).To(Equal(hookAnnotations))
		}
	}, entries)

	It("reviews a corpus with every kind the issue lists, and denials, warnings and patches among them", func() {
		kinds := map[string]bool{}
		for _, m := range manifests {
			kinds[m.Object.GetKind()] = true
		}
		for _, k := range []string{"Job", "CronJob", "JobSet", "RayJob", "RayCluster", "MPIJob", "PyTorchJob", "TrainJob",
			"AppWrapper", "LeaderWorkerSet", "Deployment", "StatefulSet", "Pod"} {
			Expect(kinds).To(HaveKey(k))
		}
		Expect(report.Summary.Denied).To(BeNumerically(">", 3))
		Expect(report.Summary.Warned).To(BeNumerically(">", 3))
		Expect(report.Summary.Patched).To(BeNumerically(">", 3))
	})

	It("reads the same cluster state from a live cluster with one listing", func() {
		live, err := review.ListCluster(ctx, env.Config, cfg.KueueNamespace)
		Expect(err).NotTo(HaveOccurred())
		Expect(live.Known()).To(BeTrue())
		live.Snapshot.SetKueueServing(false)
		fromLive, err := review.Review(ctx, review.Options{Config: cfg, PolicyDir: policyDir, State: live, User: user,
			OwnNamespace: ownNamespace}, manifests, nil)
		Expect(err).NotTo(HaveOccurred())
		for i, o := range report.Objects {
			l := fromLive.Objects[i]
			Expect(l.Status).To(Equal(o.Status), o.Ref())
			Expect(l.Findings).To(Equal(o.Findings), o.Ref())
			Expect(l.Warnings).To(Equal(o.Warnings), o.Ref())
			Expect(flatten(l.Patch)).To(Equal(flatten(o.Patch)), o.Ref())
		}
	})

	It("runs the CLI against a live cluster with --live-cluster --kubeconfig", func() {
		var out, errOut bytes.Buffer
		kube := review.NewKubeFlags()
		*kube.KubeConfig = env.KubeconfigPath
		// The suite's configuration (kueueAbsent: allow, as no Kueue serves
		// here). The CLI reviews as if Kueue served: with allow, that changes
		// the patches of what it defaults (Kueue's hold), not the findings.
		data, err := yaml.Marshal(cfg)
		Expect(err).NotTo(HaveOccurred())
		suiteConfig := filepath.Join(GinkgoT().TempDir(), "config.yaml")
		Expect(os.WriteFile(suiteConfig, data, 0o600)).To(Succeed())
		c := &review.CLI{Files: []string{corpusDir}, ConfigFile: suiteConfig, PolicyDir: policyDir, LiveCluster: true, Kube: kube,
			Output: review.FormatJSON, As: user.Username, AsGroups: user.Groups, OwnNamespace: ownNamespace}
		code, _ := c.Run(ctx, nil, nil, nil, &out, &errOut)
		Expect(errOut.String()).To(BeEmpty())
		Expect(code).To(Equal(review.ExitDenied))
		var got review.Report
		Expect(json.Unmarshal(out.Bytes(), &got)).To(Succeed())
		Expect(got.Context.ClusterState).To(Equal(review.StateLive))
		Expect(got.Objects).To(HaveLen(len(report.Objects)))
		for i, o := range report.Objects {
			Expect(got.Objects[i].Status).To(Equal(o.Status), o.Ref())
			Expect(got.Objects[i].Findings).To(Equal(o.Findings), o.Ref())
		}
	})
})
