package kueueorder_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/pkg/kueueorder"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestKueueOrder(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Kueue Webhook Order Suite")
}

func config(name string, reinvocation *admissionregistrationv1.ReinvocationPolicyType, paths ...string) admissionregistrationv1.MutatingWebhookConfiguration {
	c := admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, p := range paths {
		c.Webhooks = append(c.Webhooks, admissionregistrationv1.MutatingWebhook{Name: "m" + p[1:] + ".kb.io", ReinvocationPolicy: reinvocation,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Path: new(p)}}})
	}
	return c
}

// kueueConfig is Kueue's configuration: the workload paths and one of its own API's.
func kueueConfig(name string, reinvocation *admissionregistrationv1.ReinvocationPolicyType, paths ...string) admissionregistrationv1.MutatingWebhookConfiguration {
	return config(name, reinvocation, append(paths, "/mutate-kueue-x-k8s-io-v1beta2-clusterqueue")...)
}

var _ = Describe("the mutating webhook order", func() {
	const ours = "kueue-guard-mutating"

	It("is fine when Kueue's configuration sorts after ours, as with Kueue's default name", func() {
		Expect(kueueorder.Check(ours, []admissionregistrationv1.MutatingWebhookConfiguration{
			kueueConfig("kueue-mutating-webhook-configuration", nil, "/mutate-batch-v1-job"), config(ours, nil)})).To(BeEmpty())
	})

	It("finds Kueue's webhooks by path under any release name that sorts before ours", func() {
		got := kueueorder.Check(ours, []admissionregistrationv1.MutatingWebhookConfiguration{
			config("aks-kueue-mutating-webhook-configuration", nil, "/mutate-batch-v1-job", "/mutate--v1-pod",
				"/mutate-kueue-x-k8s-io-v1beta2-clusterqueue"),
			config("cert-manager-webhook", nil, "/mutate"),
		})
		Expect(got).To(Equal([]kueueorder.Problem{{Configuration: "aks-kueue-mutating-webhook-configuration",
			Webhooks: []string{"mmutate-batch-v1-job.kb.io", "mmutate--v1-pod.kb.io"}}}))
	})

	It("accepts Kueue's webhooks re-invoked after ours (reinvocationPolicy IfNeeded)", func() {
		Expect(kueueorder.Check(ours, []admissionregistrationv1.MutatingWebhookConfiguration{
			kueueConfig("batch-kueue-mutating-webhook-configuration", ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy),
				"/mutate-batch-v1-job")})).To(BeEmpty())
	})

	It("checks nothing when our configuration's name is not known", func() {
		Expect(kueueorder.Check("", []admissionregistrationv1.MutatingWebhookConfiguration{
			kueueConfig("a-kueue", nil, "/mutate-batch-v1-job")})).To(BeEmpty())
	})

	It("tells Kueue's configuration from an operator's serving the same controller-runtime paths", func() {
		// The JobSet operator defaults JobSets and pods at the paths Kueue uses.
		jobset := config("jobset-mutating-webhook-configuration", nil, "/mutate-jobset-x-k8s-io-v1alpha2-jobset", "/mutate--v1-pod")
		Expect(kueueorder.Check(ours, []admissionregistrationv1.MutatingWebhookConfiguration{jobset})).To(BeEmpty())
		Expect(kueueorder.Registered([]admissionregistrationv1.MutatingWebhookConfiguration{jobset})).To(BeFalse(), "Kueue uninstalled, JobSet still there")
		kueue := kueueConfig("kueue-mutating-webhook-configuration", nil, "/mutate-jobset-x-k8s-io-v1alpha2-jobset")
		Expect(kueueorder.Registered([]admissionregistrationv1.MutatingWebhookConfiguration{jobset, kueue})).To(BeTrue())
		Expect(kueueorder.Registered([]admissionregistrationv1.MutatingWebhookConfiguration{
			config("kueue-mutating-webhook-configuration", nil, "/mutate-kueue-x-k8s-io-v1beta2-clusterqueue")})).To(BeFalse(),
			"Kueue's own API alone: no workload webhook holds anything")
	})

	It("knows every workload path Kueue's own webhook manifest serves", func() {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kueue").Output()
		Expect(err).NotTo(HaveOccurred())
		data, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "config", "components", "webhook", "manifests.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var kueue *admissionregistrationv1.MutatingWebhookConfiguration
		workloadHooks := 0
		for doc := range strings.SplitSeq(string(data), "\n---\n") {
			var c admissionregistrationv1.MutatingWebhookConfiguration
			Expect(yaml.Unmarshal([]byte(doc), &c)).To(Succeed())
			if c.Kind != "MutatingWebhookConfiguration" {
				continue
			}
			kueue = &c
			for _, w := range c.Webhooks {
				if !strings.Contains(*w.ClientConfig.Service.Path, "-kueue-x-k8s-io-") {
					workloadHooks++
				}
			}
		}
		Expect(kueue).NotTo(BeNil())
		Expect(workloadHooks).To(Equal(18), "Kueue's workload webhooks")
		// Kueue's own configuration, as its manifest ships it, under a name
		// that sorts before ours: recognised as Kueue's, every workload webhook named.
		kueue.Name = "a-kueue"
		configs := []admissionregistrationv1.MutatingWebhookConfiguration{*kueue}
		Expect(kueueorder.Registered(configs)).To(BeTrue())
		got := kueueorder.Check(ours, configs)
		Expect(got).To(HaveLen(1))
		Expect(got[0].Webhooks).To(HaveLen(18))
	})
})

var _ = Describe("WebhookPath", func() {
	It("reads a Service's path or a URL's, cleaned as a mux serves it", func() {
		svc := func(p string) admissionregistrationv1.WebhookClientConfig {
			return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Path: new(p)}}
		}
		byURL := func(u string) admissionregistrationv1.WebhookClientConfig {
			return admissionregistrationv1.WebhookClientConfig{URL: new(u)}
		}
		Expect(kueueorder.WebhookPath(svc("/mutate-workloads"))).To(Equal("/mutate-workloads"))
		Expect(kueueorder.WebhookPath(byURL("https://10.0.0.1:9443//mutate-batch-v1-job"))).To(Equal("/mutate-batch-v1-job"))
		Expect(kueueorder.WebhookPath(byURL("https://10.0.0.1:9443/mutate-batch-v1-job/"))).To(Equal("/mutate-batch-v1-job"))
		Expect(kueueorder.WebhookPath(byURL("https://10.0.0.1:9443"))).To(BeEmpty())
		Expect(kueueorder.WebhookPath(admissionregistrationv1.WebhookClientConfig{})).To(BeEmpty())
	})
})
