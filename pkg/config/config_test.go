package config_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kueue-guard/kueue-guard/pkg/config"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const header = "apiVersion: config.kueue-guard.io/v1alpha1\nkind: Configuration\n"

const fullExample = header + `
audit: {interval: 5m, reports: false, maxObjects: 500}
installProfile: oss
kueueNamespace: kueue-system
kueueAbsent: deny
exemptNamespaces: [monitoring, istio-system]
defaulting:
  missingLocalQueue: deny
  rules:
  - name: gpu-jobs
    namespaceSelector: {matchLabels: {team: ml}}
    requestsResource: nvidia.com/gpu
    localQueue: gpu
    priorityClass: high
  - name: everything-else
    localQueue: default
integrations:
  action: warn
  frameworks: [batch/job, jobset.x-k8s.io/jobset]
controllers:
  allowed:
  - {namespace: kueue-system, name: kueue-controller-manager}
policies:
  directory: /etc/kueue-guard/policies
  onError: allow
trust:
  controllers: ["system:kube-controller-manager", "system:serviceaccount:operators:*", "group:system:controllers"]
simulation:
  warn: create
`

// defaulted is the configuration every empty field must end up as.
func defaulted() *config.Configuration {
	return &config.Configuration{
		TypeMeta:       metav1.TypeMeta{APIVersion: config.GroupVersion, Kind: config.Kind},
		InstallProfile: config.ProfileManaged,
		KueueNamespace: "kueue-system",
		KueueAbsent:    config.KueueAbsentSuspend,
		Simulation:     config.Simulation{Warn: config.SimulationWarnDryRun},
		Defaulting: config.Defaulting{MissingLocalQueue: config.MissingLocalQueueWarn, Backstop: config.BackstopDeny,
			Unqueued: config.Unqueued{Action: config.UnqueuedAllow}},
		Integrations: config.Integrations{Action: config.IntegrationActionDeny},
		Controllers: config.Controllers{Allowed: []config.ControllerRef{
			{Namespace: "kueue-system", Name: "kueue-controller-manager"},
		}},
		Policies: config.Policies{Directory: "/etc/kueue-guard/policies", OnError: config.OnErrorDeny, DecisionCacheSize: ptr.To[int32](config.DefaultDecisionCacheSize)},
		Trust:    config.Trust{Controllers: config.DefaultTrustedControllers("kueue-system")},
		Audit: config.Audit{Interval: &metav1.Duration{Duration: config.DefaultAuditInterval}, Reports: new(true),
			MaxObjects: config.DefaultAuditMaxObjects, MaxResultsPerReport: config.DefaultAuditMaxResultsPerReport},
	}
}

// with returns a defaulted configuration changed by mutate.
func with(mutate func(*config.Configuration)) *config.Configuration {
	c := defaulted()
	mutate(c)
	return c
}

// summarize reduces field errors to "path: type" so that tables state exactly which checks fired.
func summarize(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Field+": "+e.Type.String())
	}
	return out
}

var _ = Describe("Default", func() {
	It("is fully defaulted and valid", func() {
		c := config.Default()
		Expect(c).To(Equal(defaulted()))
		Expect(c.Validate()).To(BeEmpty())
	})

	It("returns a fresh value each time", func() {
		a := config.Default()
		a.Controllers.Allowed[0].Name = "changed"
		Expect(config.Default().Controllers.Allowed[0].Name).To(Equal("kueue-controller-manager"))
	})
})

var _ = Describe("SetDefaults", func() {
	DescribeTable("applies documented defaults",
		func(doc string, want *config.Configuration) {
			c, err := config.Decode([]byte(doc))
			Expect(err).NotTo(HaveOccurred())
			Expect(c).To(Equal(want))
		},
		Entry("only apiVersion and kind", header, defaulted()),
		Entry("managed controller follows kueueNamespace", header+"kueueNamespace: kueue\n",
			with(func(c *config.Configuration) {
				c.KueueNamespace = "kueue"
				c.Controllers.Allowed[0].Namespace = "kueue"
				c.Trust.Controllers = config.DefaultTrustedControllers("kueue")
			})),
		Entry("oss gets no default controller", header+"installProfile: oss\n",
			with(func(c *config.Configuration) {
				c.InstallProfile = config.ProfileOSS
				c.Controllers.Allowed = nil
			})),
		Entry("controller without namespace gets kueueNamespace",
			header+"kueueNamespace: kq\ncontrollers: {allowed: [{name: my-kueue}]}\n",
			with(func(c *config.Configuration) {
				c.KueueNamespace = "kq"
				c.Controllers.Allowed = []config.ControllerRef{{Namespace: "kq", Name: "my-kueue"}}
				c.Trust.Controllers = config.DefaultTrustedControllers("kq")
			})),
		Entry("explicit values are kept", header+"defaulting: {missingLocalQueue: ignore}\npolicies: {directory: /p, onError: allow, decisionCacheSize: 0}\n",
			with(func(c *config.Configuration) {
				c.Defaulting.MissingLocalQueue = config.MissingLocalQueueIgnore
				c.Policies = config.Policies{Directory: "/p", OnError: config.OnErrorAllow, DecisionCacheSize: ptr.To[int32](0)}
			})),
	)

	It("is idempotent", func() {
		c := config.Default()
		c.SetDefaults()
		Expect(c).To(Equal(defaulted()))
	})
})

var _ = Describe("Decode", func() {
	It("decodes the full example", func() {
		c, err := config.Decode([]byte(fullExample))
		Expect(err).NotTo(HaveOccurred())
		Expect(c).To(Equal(&config.Configuration{
			TypeMeta:         metav1.TypeMeta{APIVersion: config.GroupVersion, Kind: config.Kind},
			InstallProfile:   config.ProfileOSS,
			KueueNamespace:   "kueue-system",
			KueueAbsent:      config.KueueAbsentDeny,
			Simulation:       config.Simulation{Warn: config.SimulationWarnCreate},
			ExemptNamespaces: []string{"monitoring", "istio-system"},
			Defaulting: config.Defaulting{
				MissingLocalQueue: config.MissingLocalQueueDeny,
				Backstop:          config.BackstopDeny,
				Unqueued:          config.Unqueued{Action: config.UnqueuedAllow},
				Rules: []config.DefaultingRule{
					{
						Name:              "gpu-jobs",
						NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "ml"}},
						RequestsResource:  "nvidia.com/gpu",
						LocalQueue:        "gpu",
						PriorityClass:     "high",
					},
					{Name: "everything-else", LocalQueue: "default"},
				},
			},
			Integrations: config.Integrations{
				Action:     config.IntegrationActionWarn,
				Frameworks: []string{"batch/job", "jobset.x-k8s.io/jobset"},
			},
			Controllers: config.Controllers{Allowed: []config.ControllerRef{
				{Namespace: "kueue-system", Name: "kueue-controller-manager"},
			}},
			Policies: config.Policies{Directory: "/etc/kueue-guard/policies", OnError: config.OnErrorAllow, DecisionCacheSize: ptr.To[int32](config.DefaultDecisionCacheSize)},
			Trust: config.Trust{Controllers: []string{"system:kube-controller-manager", "system:serviceaccount:operators:*",
				"group:system:controllers"}},
			Audit: config.Audit{Interval: &metav1.Duration{Duration: 5 * time.Minute}, Reports: new(false),
				MaxObjects: 500, MaxResultsPerReport: config.DefaultAuditMaxResultsPerReport},
		}))
	})

	DescribeTable("rejects bad documents with an actionable error",
		func(doc string, wantSubstrings ...string) {
			c, err := config.Decode([]byte(doc))
			Expect(c).To(BeNil())
			Expect(err).To(HaveOccurred())
			for _, s := range wantSubstrings {
				Expect(err.Error()).To(ContainSubstring(s))
			}
		},
		Entry("empty file", "", "configuration is empty", `apiVersion "config.kueue-guard.io/v1alpha1"`),
		Entry("comments only", "# nothing here\n", "configuration is empty"),
		Entry("not a mapping", "- a\n- b\n", "decoding configuration"),
		Entry("unknown top-level field", header+"installProfil: oss\n", `unknown field "installProfil"`),
		Entry("unknown nested field", header+"defaulting:\n  rulez: []\n", `unknown field "defaulting.rulez"`),
		Entry("unknown field inside a rule selector",
			header+"defaulting:\n  rules:\n  - name: a\n    localQueue: q\n    namespaceSelector: {matchLabelz: {a: b}}\n",
			`unknown field "defaulting.rules[0].namespaceSelector.matchLabelz"`),
		Entry("field name in the wrong case", header+"installprofile: oss\n", `unknown field "installprofile"`),
		Entry("duplicate key", header+"kueueNamespace: a\nkueueNamespace: b\n", `"kueueNamespace" already set`),
		Entry("wrong type", header+"exemptNamespaces: kube-public\n", "decoding configuration", "exemptNamespaces"),
		Entry("missing apiVersion", "kind: Configuration\n",
			`apiVersion is missing: expected "config.kueue-guard.io/v1alpha1"`),
		Entry("wrong apiVersion", "apiVersion: config.kueue-guard.io/v1\nkind: Configuration\n",
			`apiVersion "config.kueue-guard.io/v1" is not supported: expected "config.kueue-guard.io/v1alpha1"`),
		Entry("missing kind", "apiVersion: config.kueue-guard.io/v1alpha1\n", `kind is missing: expected "Configuration"`),
		Entry("wrong kind", "apiVersion: config.kueue-guard.io/v1alpha1\nkind: Config\n",
			`kind "Config" is not supported: expected "Configuration"`),
		Entry("every validation problem is listed",
			header+"installProfile: cloud\npolicies: {onError: ignore}\n",
			"invalid configuration",
			`installProfile: Unsupported value: "cloud": supported values: "managed", "oss"`,
			`policies.onError: Unsupported value: "ignore": supported values: "deny", "allow"`),
		Entry("frameworks with the managed profile", header+"integrations: {frameworks: [batch/job]}\n",
			`integrations.frameworks: Forbidden: may only be set with installProfile "oss"`),
	)
})

var _ = Describe("Validate", func() {
	DescribeTable("reports each problem at its field path",
		func(mutate func(*config.Configuration), want []string, wantDetail string) {
			errs := with(mutate).Validate()
			Expect(summarize(errs)).To(Equal(want))
			if wantDetail != "" {
				Expect(errs.ToAggregate().Error()).To(ContainSubstring(wantDetail))
			}
		},
		Entry("valid", func(*config.Configuration) {}, []string{}, ""),
		Entry("bad kueueAbsent", func(c *config.Configuration) { c.KueueAbsent = "wait" }, []string{"kueueAbsent: Unsupported value"},
			`supported values: "suspend", "deny", "allow"`),
		Entry("bad simulation.warn", func(c *config.Configuration) { c.Simulation.Warn = "always" }, []string{"simulation.warn: Unsupported value"},
			`supported values: "dryRun", "create", "never"`),
		Entry("bad apiVersion", func(c *config.Configuration) { c.APIVersion = "v1" },
			[]string{"apiVersion: Unsupported value"}, `supported values: "config.kueue-guard.io/v1alpha1"`),
		Entry("bad kind", func(c *config.Configuration) { c.Kind = "Config" },
			[]string{"kind: Unsupported value"}, `supported values: "Configuration"`),
		Entry("bad installProfile", func(c *config.Configuration) { c.InstallProfile = "cloud" },
			[]string{"installProfile: Unsupported value"}, `supported values: "managed", "oss"`),
		Entry("bad missingLocalQueue", func(c *config.Configuration) { c.Defaulting.MissingLocalQueue = "fail" },
			[]string{"defaulting.missingLocalQueue: Unsupported value"}, `supported values: "warn", "deny", "ignore"`),
		Entry("bad integrations.action", func(c *config.Configuration) { c.Integrations.Action = "allow" },
			[]string{"integrations.action: Unsupported value"}, `supported values: "deny", "warn"`),
		Entry("bad defaulting.backstop", func(c *config.Configuration) { c.Defaulting.Backstop = "maybe" },
			[]string{"defaulting.backstop: Unsupported value"}, `supported values: "deny", "warn", "off"`),
		Entry("bad defaulting.unqueued", func(c *config.Configuration) {
			c.Defaulting.Unqueued.Action = "ignore"
			c.Defaulting.Unqueued.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}
		}, []string{"defaulting.unqueued.action: Unsupported value", "defaulting.unqueued.namespaceSelector: Invalid value"}, ""),
		Entry("bad trust.controllers", func(c *config.Configuration) {
			c.Trust.Controllers = []string{"ok", " spaced", "", "*", "quo'te", "group:a*", "mid*dle*", "ok"}
		}, []string{"trust.controllers[1]: Invalid value", "trust.controllers[2]: Required value", "trust.controllers[3]: Required value",
			"trust.controllers[4]: Invalid value", "trust.controllers[5]: Invalid value", "trust.controllers[6]: Invalid value",
			"trust.controllers[7]: Duplicate value"}, "must not contain quotes"),
		Entry("bad policies.onError", func(c *config.Configuration) { c.Policies.OnError = "ignore" },
			[]string{"policies.onError: Unsupported value"}, `supported values: "deny", "allow"`),
		Entry("empty and duplicate policies.allowBuiltins", func(c *config.Configuration) {
			c.Policies.AllowBuiltins = []string{"time.now_ns", "", "time.now_ns"}
		}, []string{"policies.allowBuiltins[1]: Required value", "policies.allowBuiltins[2]: Duplicate value"}, ""),
		Entry("negative policies.decisionCacheSize", func(c *config.Configuration) {
			c.Policies.DecisionCacheSize = ptr.To[int32](-1)
		}, []string{"policies.decisionCacheSize: Invalid value"}, "must be 0 (no reuse) or more"),
		Entry("unset enums are unsupported, not silently defaulted", func(c *config.Configuration) {
			c.InstallProfile = ""
			c.Policies.OnError = ""
		}, []string{"installProfile: Unsupported value", "policies.onError: Unsupported value"}, ""),
		Entry("bad kueueNamespace", func(c *config.Configuration) {
			c.KueueNamespace = "Kueue_System"
			c.Controllers.Allowed[0].Namespace = "kueue-system"
		}, []string{"kueueNamespace: Invalid value"}, "RFC 1123 label"),
		Entry("bad and duplicate exemptNamespaces", func(c *config.Configuration) {
			c.ExemptNamespaces = []string{"ok", "not.a.label", "", "ok"}
		}, []string{
			"exemptNamespaces[1]: Invalid value",
			"exemptNamespaces[2]: Required value",
			"exemptNamespaces[3]: Duplicate value",
		}, ""),
		Entry("duplicate rule names", func(c *config.Configuration) {
			c.Defaulting.Rules = []config.DefaultingRule{
				{Name: "gpu", LocalQueue: "a"},
				{Name: "cpu", LocalQueue: "b"},
				{Name: "gpu", LocalQueue: "c"},
			}
		}, []string{"defaulting.rules[2].name: Duplicate value"}, `defaulting.rules[2].name: Duplicate value: "gpu"`),
		Entry("rule without name or queue", func(c *config.Configuration) {
			c.Defaulting.Rules = []config.DefaultingRule{{}}
		}, []string{"defaulting.rules[0].name: Required value", "defaulting.rules[0].localQueue: Required value"}, ""),
		Entry("rule with malformed names", func(c *config.Configuration) {
			c.Defaulting.Rules = []config.DefaultingRule{{
				Name: "GPU Jobs", LocalQueue: "Gpu_Queue", PriorityClass: "High!", RequestsResource: "nvidia.com/gpu/x",
			}}
		}, []string{
			"defaulting.rules[0].name: Invalid value",
			"defaulting.rules[0].requestsResource: Invalid value",
			"defaulting.rules[0].localQueue: Invalid value",
			"defaulting.rules[0].priorityClass: Invalid value",
		}, ""),
		Entry("bad namespace selector", func(c *config.Configuration) {
			c.Defaulting.Rules = []config.DefaultingRule{{
				Name: "r", LocalQueue: "q",
				NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "team", Operator: "Near", Values: []string{"ml"}},
				}},
			}}
		}, []string{"defaulting.rules[0].namespaceSelector: Invalid value"}, `"Near" is not a valid label selector operator`),
		Entry("frameworks under managed", func(c *config.Configuration) {
			c.Integrations.Frameworks = []string{"batch/job"}
		}, []string{"integrations.frameworks: Forbidden"}, `may only be set with installProfile "oss"`),
		Entry("empty, padded and duplicate frameworks under oss", func(c *config.Configuration) {
			c.InstallProfile = config.ProfileOSS
			c.Integrations.Frameworks = []string{"batch/job", "", " batch/job", "batch/job"}
		}, []string{
			"integrations.frameworks[1]: Required value",
			"integrations.frameworks[2]: Invalid value",
			"integrations.frameworks[3]: Duplicate value",
		}, ""),
		Entry("bad and duplicate controllers", func(c *config.Configuration) {
			c.Controllers.Allowed = []config.ControllerRef{
				{Namespace: "kueue-system", Name: "kueue-controller-manager"},
				{Namespace: "kueue-system", Name: "kueue-controller-manager"},
				{Namespace: "Bad_NS", Name: ""},
			}
		}, []string{
			"controllers.allowed[1]: Duplicate value",
			"controllers.allowed[2].namespace: Invalid value",
			"controllers.allowed[2].name: Required value",
		}, ""),
		Entry("empty policy directory", func(c *config.Configuration) { c.Policies.Directory = "" },
			[]string{"policies.directory: Required value"}, ""),
	)
})

var _ = Describe("DefaultingRule.Selector", func() {
	DescribeTable("matches namespaces by labels",
		func(sel *metav1.LabelSelector, nsLabels map[string]string, want bool) {
			s, err := config.DefaultingRule{NamespaceSelector: sel}.Selector()
			Expect(err).NotTo(HaveOccurred())
			Expect(s.Matches(labels.Set(nsLabels))).To(Equal(want))
		},
		Entry("nil selects every namespace", nil, map[string]string{"any": "thing"}, true),
		Entry("nil selects unlabelled namespaces", nil, nil, true),
		Entry("matchLabels match", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "ml"}},
			map[string]string{"team": "ml"}, true),
		Entry("matchLabels mismatch", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "ml"}},
			map[string]string{"team": "web"}, false),
	)

	It("returns the error of a bad selector", func() {
		_, err := config.DefaultingRule{NamespaceSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}},
		}}.Selector()
		Expect(err).To(MatchError(ContainSubstring(`"Near" is not a valid label selector operator`)))
	})
})

var _ = Describe("IsExempt", func() {
	c := with(func(c *config.Configuration) { c.ExemptNamespaces = []string{"monitoring"} })

	DescribeTable("exempts system, own and listed namespaces only",
		func(cfg *config.Configuration, namespace, own string, want bool) {
			Expect(cfg.IsExempt(namespace, own)).To(Equal(want))
		},
		Entry("kube-system", c, "kube-system", "kueue-guard", true),
		Entry("own namespace", c, "kueue-guard", "kueue-guard", true),
		Entry("listed namespace", c, "monitoring", "kueue-guard", true),
		Entry("ordinary namespace", c, "team-a", "kueue-guard", false),
		Entry("kueue's namespace is always exempt", c, "kueue-system", "kueue-guard", true),
		Entry("empty own namespace does not exempt cluster-scoped objects", c, "", "", false),
		Entry("nil configuration still exempts kube-system", (*config.Configuration)(nil), "kube-system", "x", true),
		Entry("nil configuration exempts nothing else", (*config.Configuration)(nil), "monitoring", "x", false),
	)
})

var _ = Describe("Load", func() {
	write := func(content string) string {
		p := filepath.Join(GinkgoT().TempDir(), "config.yaml")
		Expect(os.WriteFile(p, []byte(content), 0o600)).To(Succeed())
		return p
	}

	It("loads a valid file", func() {
		c, err := config.Load(write(fullExample))
		Expect(err).NotTo(HaveOccurred())
		Expect(c.InstallProfile).To(Equal(config.ProfileOSS))
		Expect(c.Defaulting.Rules).To(HaveLen(2))
	})

	It("names the path of a missing file", func() {
		p := filepath.Join(GinkgoT().TempDir(), "nope.yaml")
		_, err := config.Load(p)
		Expect(err).To(MatchError(ContainSubstring(`reading configuration file "` + p + `"`)))
		Expect(errors.Is(err, fs.ErrNotExist)).To(BeTrue())
	})

	It("names the path of an invalid file", func() {
		p := write(header + "defaulting:\n  rulez: []\n")
		_, err := config.Load(p)
		Expect(err).To(MatchError(And(
			ContainSubstring(`configuration file "`+p+`"`),
			ContainSubstring(`unknown field "defaulting.rulez"`),
		)))
	})

	It("refuses an oversized file", func() {
		p := write(header + "# " + strings.Repeat("x", config.MaxFileSize) + "\n")
		_, err := config.Load(p)
		Expect(err).To(MatchError(ContainSubstring("larger than")))
	})
})
