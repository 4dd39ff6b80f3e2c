package cluster

import (
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/pkg/kueuecontroller"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Kueue's Configuration", func() {
	DescribeTable("enabled integrations",
		func(data string, want []string) {
			got, err := ParseKueueFrameworks(data)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(Equal(want))
		},
		Entry("listed frameworks and external ones", "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"+
			"integrations:\n  frameworks: [batch/job, jobset.x-k8s.io/jobset]\n  externalFrameworks: [AppWrapper.v1beta2.workload.codeflare.dev]\n",
			[]string{"batch/job", "jobset.x-k8s.io/jobset", "AppWrapper.v1beta2.workload.codeflare.dev"}),
		Entry("Kueue's default when none are listed", "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n",
			[]string{"batch/job"}),
		Entry("an empty list means the default too", "integrations:\n  frameworks: []\n", []string{"batch/job"}),
	)

	It("reports a Configuration that is not YAML", func() {
		_, err := ParseKueueFrameworks("integrations: [unclosed")
		Expect(err).To(MatchError(ContainSubstring("reading Kueue's Configuration")))
	})

	It("finds the manager ConfigMap by key, preferring the chart's default name", func() {
		cm := func(name string, withKey bool) *corev1.ConfigMap {
			c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"other": "x"}}
			if withKey {
				c.Data[KueueConfigKey] = ""
			}
			return c
		}
		Expect(kueueConfigMap([]*corev1.ConfigMap{cm("unrelated", false)})).To(BeNil())
		Expect(kueueConfigMap([]*corev1.ConfigMap{cm("zz-config", true), cm("my-kueue-manager-config", true)}).Name).
			To(Equal("my-kueue-manager-config"))
		Expect(kueueConfigMap([]*corev1.ConfigMap{cm("my-kueue-manager-config", true), cm(KueueDefaultConfigMapName, true)}).Name).
			To(Equal(KueueDefaultConfigMapName))
	})
})

var _ = Describe("Kueue's whole Configuration", func() {
	ns := func(name string) labels.Set { return labels.Set{corev1.LabelMetadataName: name} }

	It("applies Kueue's defaults: pod-based workloads outside kube-system and Kueue's namespace", func() {
		cfg, err := ParseKueueConfig("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n", "kueue-system")
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Frameworks).To(Equal([]string{"batch/job"}))
		Expect(cfg.ManageJobsWithoutQueueName).To(BeFalse())
		Expect(cfg.ManagedJobsNamespaceSelector.Matches(ns("team-a"))).To(BeTrue())
		Expect(cfg.ManagedJobsNamespaceSelector.Matches(ns("kube-system"))).To(BeFalse())
		Expect(cfg.ManagedJobsNamespaceSelector.Matches(ns("kueue-system"))).To(BeFalse())
	})

	It("reads the selector, manageJobsWithoutQueueName, Kueue's own namespace and the resources section", func() {
		cfg, err := ParseKueueConfig(`namespace: batch-kueue
manageJobsWithoutQueueName: true
resources:
  excludeResourcePrefixes: [example.com/]
  transformations:
  - input: nvidia.com/mig-1g.5gb
    strategy: Replace
    outputs: {example.com/accelerator-memory: 5Gi}
`, "kueue-system")
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.ManageJobsWithoutQueueName).To(BeTrue())
		Expect(cfg.ManagedJobsNamespaceSelector.Matches(ns("batch-kueue"))).To(BeFalse(), "the Configuration's namespace wins")
		Expect(cfg.ManagedJobsNamespaceSelector.Matches(ns("kueue-system"))).To(BeTrue())
		Expect(cfg.Resources.ExcludeResourcePrefixes).To(Equal([]string{"example.com/"}))
		Expect(cfg.Resources.Transformations).To(HaveLen(1))

		cfg, err = ParseKueueConfig("managedJobsNamespaceSelector: {matchLabels: {kueue: managed}}\n", "kueue-system")
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.ManagedJobsNamespaceSelector.Matches(labels.Set{"kueue": "managed"})).To(BeTrue())
		Expect(cfg.ManagedJobsNamespaceSelector.Matches(ns("team-a"))).To(BeFalse())
	})

	It("reports a selector that does not parse", func() {
		_, err := ParseKueueConfig("managedJobsNamespaceSelector: {matchExpressions: [{key: a, operator: Bogus}]}\n", "kueue-system")
		Expect(err).To(MatchError(ContainSubstring("managedJobsNamespaceSelector")))
	})
})

var _ = Describe("the cached Deployments", func() {
	It("keep what the Kueue controller fingerprint and identity read, and nothing else", func() {
		data, err := os.ReadFile("../kueuecontroller/testdata/kueue-chart-deployment.yaml")
		Expect(err).NotTo(HaveOccurred())
		full := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal(data, &full.Object)).To(Succeed())
		out, err := stripDeployment(full)
		Expect(err).NotTo(HaveOccurred())
		slim := out.(*unstructured.Unstructured)

		fullMatch, ok := kueuecontroller.Detect(full)
		Expect(ok).To(BeTrue())
		slimMatch, ok := kueuecontroller.Detect(slim)
		Expect(ok).To(BeTrue())
		Expect(slimMatch).To(Equal(fullMatch))
		Expect(kueuecontroller.IdentityOf(slim)).To(Equal(kueuecontroller.IdentityOf(full)))

		_, found, _ := unstructured.NestedFieldNoCopy(slim.Object, "spec", "template", "spec", "volumes")
		Expect(found).To(BeFalse(), "volumes are not cached")
		_, found, _ = unstructured.NestedFieldNoCopy(slim.Object, "metadata", "annotations")
		Expect(found).To(BeFalse(), "annotations are not cached")
	})

	It("lists the controllers oldest first, so the first one wins", func() {
		older := &unstructured.Unstructured{}
		data, _ := os.ReadFile("../kueuecontroller/testdata/kueue-chart-deployment.yaml")
		Expect(yaml.Unmarshal(data, &older.Object)).To(Succeed())
		newer := older.DeepCopy()
		older.SetNamespace("z-kueue")
		older.SetCreationTimestamp(metav1.Unix(1000, 0))
		newer.SetNamespace("a-kueue")
		newer.SetCreationTimestamp(metav1.Unix(2000, 0))
		s, err := NewSnapshot(newer, older)
		Expect(err).NotTo(HaveOccurred())
		Expect(s.KueueControllers()).To(Equal([]ControllerRef{
			{Kind: "Deployment", Namespace: "z-kueue", Name: "kueue-controller-manager", Version: "v0.19.2"},
			{Kind: "Deployment", Namespace: "a-kueue", Name: "kueue-controller-manager", Version: "v0.19.2"},
		}), "oldest first, each with the release its image names")
	})
})
