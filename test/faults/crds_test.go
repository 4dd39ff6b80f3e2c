package faults

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kueue-guard/kueue-guard/pkg/config"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// crdFiles are the control plane's CRD files of the given API groups.
func crdFiles(groups ...string) []string {
	GinkgoHelper()
	all, err := testenv.CRDFiles()
	Expect(err).NotTo(HaveOccurred())
	out := testenv.CRDFilesOf(all, groups...)
	Expect(out).NotTo(BeEmpty())
	return out
}

// serveVersion sets whether a CRD serves one of its versions: what a Kueue
// serving another API version than kueue-guard reads looks like. (Deleting
// CRDs would do too, but the API server's cleanup of a CRD whose storage is
// re-initializing backs off for minutes on a busy machine.)
func serveVersion(name, version string, served bool) {
	GinkgoHelper()
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	Eventually(func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return err
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			if m := v.(map[string]any); m["name"] == version {
				m["served"] = served
			}
		}
		if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
			return err
		}
		return env.Client.Update(ctx, crd)
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// installCRDs creates CRDs and waits until they are established.
func installCRDs(files []string) {
	GinkgoHelper()
	start := time.Now()
	defer func() { GinkgoWriter.Printf("CRDs installed in %v\n", time.Since(start)) }()
	args := []string{"apply", "--server-side"}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	out, stderr, err := env.Kubectl(nil, args...)
	Expect(err).NotTo(HaveOccurred(), stderr)
	var names []string
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if name, _, ok := strings.Cut(line, " "); ok {
			names = append(names, name)
		}
	}
	// A CRD just created has no conditions yet, which kubectl wait refuses.
	Eventually(func() error {
		_, stderr, err := env.Kubectl(nil, append([]string{"wait", "--for=condition=Established", "--timeout=30s"}, names...)...)
		if err != nil {
			return fmt.Errorf("%w: %s", err, stderr)
		}
		return nil
	}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	// Established is not yet listable: a CRD deleted while its storage still
	// initializes waits minutes in the API server's cleanup backoff.
	var resources []string
	for _, n := range names {
		resources = append(resources, strings.TrimPrefix(n, "customresourcedefinition.apiextensions.k8s.io/"))
	}
	Eventually(func() error {
		_, stderr, err := env.Kubectl(nil, "get", strings.Join(resources, ","), "-A")
		if err != nil {
			return fmt.Errorf("%w: %s", err, stderr)
		}
		return nil
	}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// A policy that caps a LeaderWorkerSet at 2 groups: a scale is judged as the
// update of the cached workload, so it sees the scaled replica count.
const lwsGroupsPolicy = `package kueue_guard.lws_groups

import rego.v1

deny contains msg if {
	input.object.kind == "LeaderWorkerSet"
	input.object.spec.replicas > 2
	msg := sprintf("%d groups, at most 2", [input.object.spec.replicas])
}
`

// Kueue installed after kueue-guard, or serving another version than
// kueue-guard reads: kueue-guard keeps serving and says what it cannot check;
// when the CRDs come (back), queue checks resume without a restart. The same
// holds for a scaled kind's CRD.
var _ = Describe("Kueue's CRDs come and go", Ordered, func() {
	var (
		kueueCRDs, lwsCRDs []string
		srv                *testenv.Server
		c                  client.Client
		warned             *testenv.Warnings
		ns                 string
	)
	served := func() float64 {
		v, err := testenv.MetricValue(srv.MetricAddr, "kueue_guard_kueue_api_served")
		Expect(err).NotTo(HaveOccurred())
		return v
	}
	job := func() *unstructured.Unstructured { return fixtures.Job(ns, "j").Queue("q").Obj() }

	BeforeAll(func() {
		kueueCRDs, lwsCRDs = crdFiles("kueue.x-k8s.io"), crdFiles("leaderworkerset.x-k8s.io")
		_, _, err := env.Kubectl(nil, "get", "crd", "localqueues.kueue.x-k8s.io")
		Expect(err).To(HaveOccurred(), "the suite's cluster starts without Kueue's CRDs")

		cfg := testenv.ConfigWithoutKueue()
		cfg.InstallProfile = config.ProfileOSS
		cfg.Policies.Directory = GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(cfg.Policies.Directory, "lws-groups.rego"), []byte(lwsGroupsPolicy), 0o644)).To(Succeed())
		// A missing LocalQueue is refused: once Kueue is back, the check shows.
		cfg.Defaulting.MissingLocalQueue = config.MissingLocalQueueDeny
		start := time.Now()
		srv, err = env.StartServer(ctx, env.Config, cfg)
		Expect(err).NotTo(HaveOccurred(), "kueue-guard starts without Kueue's CRDs")
		DeferCleanup(srv.Stop)
		AddReportEntry("Kueue's CRDs absent at start", fmt.Sprintf("ready in %v", time.Since(start).Round(10*time.Millisecond)))

		c, warned, ns = warnedClient("no-kueue-")
	})

	It("admits a queued workload with the queues_unknown warning while Kueue is absent", func() {
		Eventually(served).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(BeZero())
		Expect(c.Create(ctx, job(), client.DryRunAll)).To(Succeed())
		Expect(warned.Take()).To(ContainSubstring(`kueue-guard cannot read Kueue's queues`))
	})

	It("resumes queue checks when Kueue's CRDs are installed, without a restart", func() {
		start := time.Now()
		installCRDs(kueueCRDs)
		Eventually(served).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Equal(1.0))
		AddReportEntry("Kueue's CRDs installed", fmt.Sprintf("queue checks resumed %v after the apply", time.Since(start).Round(10*time.Millisecond)))
		Expect(c.Create(ctx, job(), client.DryRunAll)).To(MatchError(ContainSubstring(`LocalQueue "q" does not exist`)))

		Expect(env.Client.Create(ctx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "q"},
			Spec: kueue.LocalQueueSpec{ClusterQueue: "cq"}})).To(Succeed())
		Eventually(func() error { return c.Create(ctx, job(), client.DryRunAll) }).
			WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		warned.Take()
	})

	It("judges the scale of a LeaderWorkerSet once its CRD appears", func() {
		installCRDs(lwsCRDs)
		lws := fixtures.LeaderWorkerSet(ns, "lws").Queue("q").
			Set(map[string]any{"type": "RollingUpdate", "rollingUpdateConfiguration": map[string]any{"maxUnavailable": int64(1), "maxSurge": int64(0)}},
				"spec", "rolloutStrategy").
			Set("LeaderCreated", "spec", "startupPolicy").
			Set("RecreateGroupOnPodRestart", "spec", "leaderWorkerTemplate", "restartPolicy").Obj()
		Eventually(func() error { return c.Create(ctx, lws.DeepCopy()) }).
			WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		scale := &unstructured.Unstructured{}
		scale.SetGroupVersionKind(autoscalingv1.SchemeGroupVersion.WithKind("Scale"))
		Eventually(func(g Gomega) {
			g.Expect(c.SubResource("scale").Get(ctx, lws, scale)).To(Succeed())
			g.Expect(unstructured.SetNestedField(scale.Object, int64(3), "spec", "replicas")).To(Succeed())
			err := c.SubResource("scale").Update(ctx, lws, client.WithSubResourceBody(scale), client.DryRunAll)
			g.Expect(err).To(MatchError(ContainSubstring("3 groups, at most 2")))
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	})

	It("says queues are unknown again when Kueue's CRDs stop serving the version it reads, and resumes when they serve it again", func() {
		kinds := []string{"localqueues", "clusterqueues", "resourceflavors", "cohorts"}
		for _, k := range kinds {
			serveVersion(k+".kueue.x-k8s.io", "v1beta2", false)
		}
		DeferCleanup(func() {
			for _, k := range kinds {
				serveVersion(k+".kueue.x-k8s.io", "v1beta2", true)
			}
		})
		Eventually(served).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(BeZero())
		Expect(c.Create(ctx, job(), client.DryRunAll)).To(Succeed())
		Expect(warned.Take()).To(ContainSubstring(`kueue-guard cannot read Kueue's queues`))

		for _, k := range kinds {
			serveVersion(k+".kueue.x-k8s.io", "v1beta2", true)
		}
		Eventually(served).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Equal(1.0))
		Eventually(func() error { return c.Create(ctx, job(), client.DryRunAll) }).
			WithTimeout(10*time.Second).WithPolling(100*time.Millisecond).Should(Succeed(), "the queue is seen again")
		Expect(warned.Take()).NotTo(ContainSubstring(`kueue-guard cannot read Kueue's queues`))
	})
})
