package policies_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/kueue-guard/kueue-guard/pkg/admission"
	"github.com/kueue-guard/kueue-guard/pkg/policies"
	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// startEngine runs Start in the background until the spec ends.
func startEngine(e *policies.Engine) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Start(ctx) }()
	DeferCleanup(func() {
		cancel()
		Eventually(done).Should(Receive(BeNil()))
	})
}

// messageFor evaluates a queued Job and returns the single violation message.
func messagesFor(e *policies.Engine) func() []string {
	return func() []string {
		d := validate(e, createRequest(fixtures.Job("ml", "j").Queue("lq").Obj()), snapshot())
		var out []string
		for _, v := range d.Violations {
			out = append(out, v.Message)
		}
		return out
	}
}

func version(e *policies.Engine) func() uint64 {
	return func() uint64 {
		v, _ := e.Version()
		return v
	}
}

func fastReload(o *policies.Options) { o.Debounce = 20 * time.Millisecond }

var _ = Describe("Hot reload", func() {
	var dir string
	BeforeEach(func() { dir = GinkgoT().TempDir() })

	It("is not ready before the first good set, then picks up every change", func() {
		writeFiles(dir, map[string]string{"p.rego": "package t.p\n\ndeny contains \"v0\" if {"})
		e, _ := newEngine(dir, fastReload)
		startEngine(e)
		Eventually(func() float64 { return metricValue(e.Metrics().LoadErrors) }).Should(Equal(1.0))
		Expect(e.Ready()).To(BeFalse())
		Expect(e.ReadyCheck(nil)).To(MatchError(ContainSubstring("p.rego:3")))

		writeFiles(dir, map[string]string{"p.rego": policy("t.p", "", `deny contains "v1" if true`)})
		Eventually(e.Ready).Should(BeTrue())
		Expect(messagesFor(e)()).To(ConsistOf("v1"))
		Expect(e.ReadyCheck(nil)).To(Succeed())

		By("adding a policy in a new subdirectory")
		writeFiles(dir, map[string]string{"more/q.rego": policy("t.q", "warn", `deny contains "q1" if true`)})
		Eventually(messagesFor(e)).Should(ConsistOf("v1", "q1"))

		By("changing a policy in that subdirectory")
		writeFiles(dir, map[string]string{"more/q.rego": policy("t.q", "warn", `deny contains "q2" if true`)})
		Eventually(messagesFor(e)).Should(ConsistOf("v1", "q2"))

		By("removing a policy")
		Expect(os.RemoveAll(filepath.Join(dir, "more"))).To(Succeed())
		Eventually(messagesFor(e)).Should(ConsistOf("v1"))
	})

	It("keeps serving the last good set when a broken one arrives, and counts it", func() {
		writeFiles(dir, map[string]string{"p.rego": policy("t.p", "", `deny contains "good" if true`)})
		e, _ := newEngine(dir, fastReload)
		startEngine(e)
		Eventually(e.Ready).Should(BeTrue())
		Expect(version(e)()).To(Equal(uint64(1)))

		writeFiles(dir, map[string]string{"p.rego": "package t.p\n\ndeny contains msg if {\n  msg := http.send({})\n}\n"})
		Eventually(func() float64 { return metricValue(e.Metrics().LoadErrors) }).Should(Equal(1.0))
		Expect(messagesFor(e)()).To(ConsistOf("good"))
		Expect(version(e)()).To(Equal(uint64(1)))
		Expect(e.Ready()).To(BeTrue(), "a refused set does not make a ready server unready")

		writeFiles(dir, map[string]string{"p.rego": policy("t.p", "", `deny contains "fixed" if true`)})
		Eventually(messagesFor(e)).Should(ConsistOf("fixed"))
		Expect(version(e)()).To(Equal(uint64(2)))
		Expect(metricValue(e.Metrics().Loads)).To(Equal(2.0))
		Expect(metricValue(e.Metrics().LoadErrors)).To(Equal(1.0))
	})

	It("follows a ConfigMap volume's ..data symlink swap", func() {
		// The kubelet's layout: files are symlinks into ..data, itself a symlink to
		// a timestamped directory; an update writes a new directory and renames a
		// new symlink over ..data.
		writeVersion := func(name, msg string) {
			writeFiles(filepath.Join(dir, name), map[string]string{
				"p.rego":    policy("t.cm", "", `deny contains sprintf("%s %v", ["`+msg+`", data.limit]) if true`),
				"data.yaml": "limit: " + msg + "\n",
			})
		}
		writeVersion("..2025_01_01_00_00_00.000000001", "1")
		Expect(os.Symlink("..2025_01_01_00_00_00.000000001", filepath.Join(dir, "..data"))).To(Succeed())
		for _, f := range []string{"p.rego", "data.yaml"} {
			Expect(os.Symlink(filepath.Join("..data", f), filepath.Join(dir, f))).To(Succeed())
		}
		e, _ := newEngine(dir, fastReload)
		startEngine(e)
		Eventually(messagesFor(e)).Should(ConsistOf("1 1"))
		Expect(e.Policies()).To(HaveLen(1), "hidden directories are not loaded twice")

		writeVersion("..2025_01_01_00_01_00.000000002", "2")
		Expect(os.Symlink("..2025_01_01_00_01_00.000000002", filepath.Join(dir, "..data_tmp"))).To(Succeed())
		Expect(os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data"))).To(Succeed())
		Expect(os.RemoveAll(filepath.Join(dir, "..2025_01_01_00_00_00.000000001"))).To(Succeed())
		Eventually(messagesFor(e)).Should(ConsistOf("2 2"))
		Expect(version(e)()).To(Equal(uint64(2)))
	})

	It("re-reads periodically in case an event was lost", func() {
		writeFiles(dir, map[string]string{"p.rego": policy("t.p", "", `deny contains "a" if true`)})
		e, _ := newEngine(dir, func(o *policies.Options) {
			o.Debounce = time.Hour // events never fire a reload in this spec
			o.Resync = 50 * time.Millisecond
		})
		startEngine(e)
		Eventually(e.Ready).Should(BeTrue())
		writeFiles(dir, map[string]string{"p.rego": policy("t.p", "", `deny contains "b" if true`)})
		Eventually(messagesFor(e)).Should(ConsistOf("b"))
	})

	It("fails to start on a directory that cannot be watched", func() {
		e, _ := newEngine(filepath.Join(dir, "missing"))
		Expect(e.Start(context.Background())).To(MatchError(ContainSubstring("watching policy directory")))
	})

	It("swaps sets atomically under concurrent requests", func() {
		writeFiles(dir, map[string]string{"p.rego": policy("t.p", "", `deny contains "a" if true`)})
		e, _ := newEngine(dir, fastReload)
		startEngine(e)
		Eventually(e.Ready).Should(BeTrue())
		stop := make(chan struct{})
		errs := make(chan string, 100)
		// Joined before the spec ends: the goroutines use the global Gomega,
		// which a later test (the fuzz targets) configures again.
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				defer GinkgoRecover()
				for {
					select {
					case <-stop:
						return
					default:
					}
					d := validate(e, createRequest(fixtures.Job("ml", "j").Queue("lq").Obj()), snapshot())
					if len(d.Violations) != 1 || d.Violations[0].Enforcement != admission.EnforcementDeny ||
						(d.Violations[0].Message != "a" && d.Violations[0].Message != "b") {
						errs <- d.Summary()
						return
					}
				}
			})
		}
		writeFiles(dir, map[string]string{"p.rego": policy("t.p", "", `deny contains "b" if true`)})
		Eventually(messagesFor(e)).Should(ConsistOf("b"))
		close(stop)
		wg.Wait()
		Expect(errs).NotTo(Receive())
	})
})
