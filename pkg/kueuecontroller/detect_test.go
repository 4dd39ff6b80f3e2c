package kueuecontroller_test

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/kueuecontroller"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Detect", func() {
	DescribeTable("objects that run a Kueue controller manager",
		func(build func() *unstructured.Unstructured, want kueuecontroller.Match) {
			got, ok := kueuecontroller.Detect(build())
			Expect(ok).To(BeTrue())
			// The release found is version_test.go's table; here, why it matched.
			want.Version = got.Version
			Expect(got).To(Equal(&want))
		},
		Entry("Kueue's chart Deployment, by image, labels, the chart's marks, port and argument", chartDeployment,
			kueuecontroller.Match{Reasons: []string{imageReason, labelsReason, chartReason, portReason, configReason}, Container: "manager"}),
		Entry("a renamed, unlabelled copy in another namespace, by image, port and argument", renamedCopy,
			kueuecontroller.Match{Reasons: []string{imageReason, portReason, configReason}, Container: "manager"}),
		Entry("the chart Deployment's ReplicaSet",
			func() *unstructured.Unstructured { return replicaSetOf(chartDeployment()) },
			kueuecontroller.Match{Reasons: []string{imageReason, labelsReason, chartReason, portReason, configReason}, Container: "manager"}),
		Entry("a Pod of the chart Deployment",
			func() *unstructured.Unstructured { return podOf(replicaSetOf(chartDeployment())) },
			kueuecontroller.Match{Reasons: []string{imageReason, labelsReason, chartTemplateReason, portReason, configReason}, Container: "manager"}),
		Entry("a Pod of the renamed copy",
			func() *unstructured.Unstructured { return podOf(replicaSetOf(renamedCopy())) },
			kueuecontroller.Match{Reasons: []string{imageReason, portReason, configReason}, Container: "manager"}),
		Entry("Kueue's kustomize install (config/default)", func() *unstructured.Unstructured {
			return makeObj("Deployment", kueueNamespace, kueueDeployment).
				labels("app.kubernetes.io/name", "kueue", "control-plane", "controller-manager").
				podLabels("app.kubernetes.io/name", "kueue", "control-plane", "controller-manager").
				commandContainer("manager", kueueImage, []string{"/manager"}, []string{kueueConfigArg, "--zap-log-level=2"}).
				obj()
		}, kueuecontroller.Match{Reasons: []string{imageReason, labelsReason, configReason}, Container: "manager"}),
		Entry("the chart's default staging image, under another name", func() *unstructured.Unstructured {
			return makeObj("Deployment", "default", "scheduler").
				container("main", "us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue:main").obj()
		}, kueuecontroller.Match{Reasons: []string{`image "us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue:main"`}, Container: "main"}),
		Entry("AKS's managed image in a StatefulSet", func() *unstructured.Unstructured {
			return makeObj("StatefulSet", "ops", "queueing").
				container("mgr", "mcr.microsoft.com/aks/kueue/kueue-controller-manager:v0.13").obj()
		}, kueuecontroller.Match{Reasons: []string{`image "mcr.microsoft.com/aks/kueue/kueue-controller-manager:v0.13"`}, Container: "mgr"}),
		Entry("a mirrored image pinned by digest in a DaemonSet", func() *unstructured.Unstructured {
			return makeObj("DaemonSet", "ops", "everywhere").
				container("mgr", "myregistry.io/mirror/kueue-controller-manager@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef").obj()
		}, kueuecontroller.Match{Reasons: []string{`image "myregistry.io/mirror/kueue-controller-manager@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"`}, Container: "mgr"}),
		Entry("a local registry with a port, tag and digest, in a bare Pod", func() *unstructured.Unstructured {
			return makeObj("Pod", "dev", "kueue-dev").
				container("sidecar", "busybox:1.36").
				container("kueue", "localhost:5000/Kueue/Kueue:dev@sha256:abc").obj()
		}, kueuecontroller.Match{Reasons: []string{`image "localhost:5000/Kueue/Kueue:dev@sha256:abc"`}, Container: "kueue"}),
		Entry("an init container", func() *unstructured.Unstructured {
			return makeObj("Deployment", "ops", "sneaky").
				container("app", "nginx:1.27").
				initContainer("setup", "docker.io/kueue/kueue:v0.19.2").obj()
		}, kueuecontroller.Match{Reasons: []string{`image "docker.io/kueue/kueue:v0.19.2"`}, Container: "setup"}),
		Entry("the labels alone, on the object", func() *unstructured.Unstructured {
			return makeObj("Deployment", "ops", "relabelled").
				labels("app.kubernetes.io/name", "kueue", "control-plane", "controller-manager").
				container("manager", "example.com/acme/scheduler:v1").obj()
		}, kueuecontroller.Match{Reasons: []string{labelsReason}}),
		Entry("the labels alone, on the pod template", func() *unstructured.Unstructured {
			return makeObj("ReplicaSet", "ops", "relabelled").
				podLabels("app.kubernetes.io/name", "kueue", "control-plane", "controller-manager").
				container("manager", "example.com/acme/scheduler:v1").obj()
		}, kueuecontroller.Match{Reasons: []string{labelsReason}}),
		Entry("labels with the config argument: the argument names the container", func() *unstructured.Unstructured {
			return makeObj("Pod", "ops", "relabelled").
				podLabels("app.kubernetes.io/name", "kueue", "control-plane", "controller-manager").
				container("proxy", "example.com/proxy:v1").
				container("manager", "example.com/acme/scheduler:v1", "-config", "/etc/kueue/controller_manager_config.yaml").obj()
		}, kueuecontroller.Match{Reasons: []string{labelsReason, "argument -config /etc/kueue/controller_manager_config.yaml"}, Container: "manager"}),
		Entry("the two-word --config form straddling command and args", func() *unstructured.Unstructured {
			return makeObj("Deployment", "ops", "kq").
				commandContainer("manager", kueueImage, []string{"/manager", "--config"}, []string{"/etc/kueue/controller_manager_config.yaml"}).obj()
		}, kueuecontroller.Match{Reasons: []string{imageReason, "argument --config /etc/kueue/controller_manager_config.yaml"}, Container: "manager"}),
		Entry("junk entries around a real container", func() *unstructured.Unstructured {
			return makeObj("Deployment", "ops", "kq").
				podField([]any{"junk", int64(42), nil, map[string]any{"name": "manager", "image": kueueImage}}, "spec", "containers").obj()
		}, kueuecontroller.Match{Reasons: []string{imageReason}, Container: "manager"}),
		Entry("a flat mirror of upstream's image in a private registry", func() *unstructured.Unstructured {
			return makeObj("Deployment", "ops", "scheduler").
				container("manager", "myregistry.azurecr.io/kueue:v0.19.2").obj()
		}, kueuecontroller.Match{Reasons: []string{`image "myregistry.azurecr.io/kueue:v0.19.2"`}, Container: "manager"}),
		Entry("Kueue's chart with nameOverride and an image mirrored under another name: the chart's marks", func() *unstructured.Unstructured {
			return makeObj("Deployment", "batch", "batch-scheduler-controller-manager").
				labels("app.kubernetes.io/name", "scheduler", "control-plane", "controller-manager",
					"helm.sh/chart", "kueue-0.19.2", "app.kubernetes.io/component", "controller").
				podLabels("app.kubernetes.io/name", "scheduler", "control-plane", "controller-manager").
				podField(map[string]any{"charts.kueue.x-k8s.io/config-checksum": "abc"}, "metadata", "annotations").
				container("manager", "mirror.example.com/platform/scheduler:v0.19.2").obj()
		}, kueuecontroller.Match{Reasons: []string{
			"Kueue's Helm chart (pod template annotation charts.kueue.x-k8s.io/config-checksum, label helm.sh/chart=kueue-0.19.2)"}}),
		Entry("Kueue's manager arguments and visibility port, under any image and labels", func() *unstructured.Unstructured {
			c := containerMap("manager", "mirror.example.com/platform/scheduler:v0.19.2", []string{"/manager"}, []string{kueueConfigArg})
			c["ports"] = []any{map[string]any{"name": "webhook-server", "containerPort": int64(9443)},
				map[string]any{"name": "visibility", "containerPort": int64(8082)}}
			return makeObj("Deployment", "ops", "scheduler").appendContainer("containers", c).obj()
		}, kueuecontroller.Match{Reasons: []string{"container port visibility", configReason},
			Container: "manager"}),
		Entry("an ephemeral container added to a Pod (kubectl debug)", func() *unstructured.Unstructured {
			return makeObj("Pod", "ops", "web").container("web", "nginx:1.27").
				appendContainer("ephemeralContainers", containerMap("debugger", kueueImage, nil, nil)).obj()
		}, kueuecontroller.Match{Reasons: []string{imageReason}, Container: "debugger"}),
		Entry("reasons are de-duplicated across replicas of one container", func() *unstructured.Unstructured {
			return makeObj("Deployment", "ops", "kq").
				container("a", kueueImage, kueueConfigArg).
				container("b", kueueImage, kueueConfigArg).obj()
		}, kueuecontroller.Match{Reasons: []string{imageReason, configReason}, Container: "a"}),
	)

	DescribeTable("objects that do not",
		func(build func() *unstructured.Unstructured) {
			got, ok := kueuecontroller.Detect(build())
			Expect(ok).To(BeFalse())
			Expect(got).To(BeNil())
		},
		Entry("kueue-guard itself", func() *unstructured.Unstructured {
			return makeObj("Deployment", "kueue-guard-system", "kueue-guard").
				labels("app.kubernetes.io/name", "kueue-guard", "control-plane", "controller-manager").
				podLabels("app.kubernetes.io/name", "kueue-guard").
				container("webhook", "ghcr.io/kueue-guard/kueue-guard:v1", "serve", "--config=/etc/kueue-guard/config.yaml").obj()
		}),
		Entry("KueueViz backend, as the chart renders it", func() *unstructured.Unstructured {
			return makeObj("Deployment", kueueNamespace, "kueue-kueueviz-backend").
				podLabels("app", "kueueviz-backend").
				container("backend", "registry.k8s.io/kueue/kueueviz-backend:v0.19.2").obj()
		}),
		Entry("KueueViz frontend, as the chart renders it", func() *unstructured.Unstructured {
			return makeObj("Deployment", kueueNamespace, "kueue-kueueviz-frontend").
				podLabels("app", "kueueviz-frontend").
				container("frontend", "registry.k8s.io/kueue/kueueviz-frontend:v0.19.2").obj()
		}),
		Entry("kueue-populator, as its chart renders it (its --config file has Kueue's name)", func() *unstructured.Unstructured {
			return makeObj("Deployment", kueueNamespace, "kueue-populator-kueue-populator").
				labels("app.kubernetes.io/name", "kueue-populator", "control-plane", "kueue-populator").
				podLabels("app.kubernetes.io/name", "kueue-populator", "control-plane", "kueue-populator").
				container("manager", "registry.k8s.io/kueue/kueue-populator:v0.19.2",
					"--config=/etc/kueue/controller_manager_config.yaml", "--zap-log-level=2").obj()
		}),
		Entry("a kubebuilder operator with the ComponentConfig scaffold", func() *unstructured.Unstructured {
			return makeObj("Deployment", "gpu-operator", "gpu-operator-controller-manager").
				podLabels("control-plane", "controller-manager").
				commandContainer("manager", "docker.io/rocm/gpu-operator:v1.2.0",
					[]string{"/manager"}, []string{"--config=controller_manager_config.yaml", "--zap-log-level=2"}).obj()
		}),
		Entry("KueueViz frontend with the chart's annotation and labels", func() *unstructured.Unstructured {
			return makeObj("Deployment", kueueNamespace, "kueue-kueueviz-frontend").
				labels("helm.sh/chart", "kueue-0.19.2").
				podLabels("app", "kueueviz-frontend").
				podField(map[string]any{"charts.kueue.x-k8s.io/config-checksum": "abc"}, "metadata", "annotations").
				container("frontend", "registry.k8s.io/kueue/kueueviz-frontend:v0.19.2").obj()
		}),
		Entry("another chart named after Kueue", func() *unstructured.Unstructured {
			return makeObj("Deployment", kueueNamespace, "populator").
				labels("helm.sh/chart", "kueue-populator-0.1.0", "app.kubernetes.io/component", "controller").
				container("manager", "example.com/populator:v1").obj()
		}),
		Entry("a port named visibility without Kueue's Configuration file", func() *unstructured.Unstructured {
			c := containerMap("app", "example.com/app:v1", nil, []string{"--config=/etc/app.yaml"})
			c["ports"] = []any{map[string]any{"name": "visibility", "containerPort": int64(8082)}}
			return makeObj("Deployment", "ops", "app").appendContainer("containers", c).obj()
		}),
		Entry("a plain nginx Deployment", func() *unstructured.Unstructured {
			return makeObj("Deployment", "web", "nginx").
				labels("app", "nginx").podLabels("app", "nginx").
				container("nginx", "nginx:1.27").obj()
		}),
		Entry("Kueue's manager binary and log flag without its image", func() *unstructured.Unstructured {
			return makeObj("Deployment", "ops", "manager").
				commandContainer("manager", "example.com/acme/manager:v1",
					[]string{"/manager"}, []string{"--zap-log-level=2", "--leader-elect"}).obj()
		}),
		Entry("a registry host named after Kueue", func() *unstructured.Unstructured {
			return makeObj("Deployment", "ops", "tools").
				container("tools", "kueue.example.com/tools/kueue:v1").obj()
		}),
		Entry("an image named kueue with no kueue in its path", func() *unstructured.Unstructured {
			return makeObj("Deployment", "ops", "tools").
				container("tools", "ghcr.io/someone/kueue:v1").obj()
		}),
		Entry("images that merely contain the word", func() *unstructured.Unstructured {
			return makeObj("Deployment", "ops", "tools").
				container("viz", "example.com/kueueviz/backend:v1").
				container("ctl", "registry.k8s.io/kueue/kueuectl:v0.19.2").
				container("imp", "registry.k8s.io/kueue/importer:v0.19.2").
				container("cm", "example.com/kueue/kueue-controller-manager-exporter:v1").obj()
		}),
		Entry("only one of the two selector labels", func() *unstructured.Unstructured {
			return makeObj("Deployment", "ops", "half").
				labels("app.kubernetes.io/name", "kueue").
				podLabels("control-plane", "controller-manager").
				container("c", "nginx:1.27").obj()
		}),
		Entry("a kind the controller guard does not admit", func() *unstructured.Unstructured {
			u := makeObj("Deployment", "ops", "job").container("c", kueueImage).obj()
			u.SetAPIVersion("batch/v1")
			u.SetKind("Job")
			return u
		}),
		Entry("an apps kind name in another group", func() *unstructured.Unstructured {
			u := makeObj("Deployment", "ops", "fake").container("c", kueueImage).obj()
			u.SetAPIVersion("example.com/v1")
			return u
		}),
	)

	DescribeTable("malformed objects neither panic nor match",
		func(build func() *unstructured.Unstructured) {
			obj := build()
			var ok bool
			Expect(func() { _, ok = kueuecontroller.Detect(obj) }).NotTo(Panic())
			Expect(ok).To(BeFalse())
			Expect(func() { kueuecontroller.IdentityOf(obj) }).NotTo(Panic())
		},
		Entry("nil", func() *unstructured.Unstructured { return nil }),
		Entry("nil content", func() *unstructured.Unstructured { return &unstructured.Unstructured{} }),
		Entry("apiVersion not a string", func() *unstructured.Unstructured {
			return makeObj("Pod", "ns", "p").container("c", kueueImage).field(int64(1), "apiVersion").obj()
		}),
		Entry("containers not a list", func() *unstructured.Unstructured {
			return makeObj("Deployment", "ns", "d").podField(kueueImage, "spec", "containers").obj()
		}),
		Entry("containers a map", func() *unstructured.Unstructured {
			return makeObj("Pod", "ns", "p").field(map[string]any{"image": kueueImage}, "spec", "containers").obj()
		}),
		Entry("image not a string", func() *unstructured.Unstructured {
			return makeObj("Deployment", "ns", "d").
				podField([]any{map[string]any{"name": "c", "image": []any{kueueImage}}}, "spec", "containers").obj()
		}),
		Entry("args and command not lists, name not a string", func() *unstructured.Unstructured {
			return makeObj("StatefulSet", "ns", "s").
				podField([]any{map[string]any{"name": int64(3), "image": "nginx", "command": "/manager", "args": kueueConfigArg}},
					"spec", "containers").obj()
		}),
		Entry("arguments not strings", func() *unstructured.Unstructured {
			return makeObj("DaemonSet", "ns", "ds").
				podField([]any{map[string]any{"name": "c", "image": "nginx", "args": []any{int64(1), nil, []any{"--config"}, map[string]any{}}}},
					"spec", "containers").obj()
		}),
		Entry("template not an object", func() *unstructured.Unstructured {
			return makeObj("Deployment", "ns", "d").field([]any{kueueImage}, "spec", "template").obj()
		}),
		Entry("spec not an object", func() *unstructured.Unstructured {
			return makeObj("Pod", "ns", "p").field("kueue", "spec").obj()
		}),
		Entry("labels not an object", func() *unstructured.Unstructured {
			return makeObj("Deployment", "ns", "d").
				field([]any{"app.kubernetes.io/name", "kueue"}, "metadata", "labels").
				podField("control-plane=controller-manager", "metadata", "labels").obj()
		}),
		Entry("label values not strings", func() *unstructured.Unstructured {
			return makeObj("Deployment", "ns", "d").
				field(map[string]any{"app.kubernetes.io/name": []any{"kueue"}, "control-plane": true}, "metadata", "labels").obj()
		}),
		Entry("metadata not an object", func() *unstructured.Unstructured {
			return makeObj("Pod", "ns", "p").field("x", "metadata").obj()
		}),
		Entry("owner references malformed", func() *unstructured.Unstructured {
			return makeObj("Pod", "ns", "p").field([]any{"rs", int64(1)}, "metadata", "ownerReferences").obj()
		}),
	)

	It("bounds the reasons and the text it quotes from the object", func() {
		b := makeObj("Deployment", "ns", "flood")
		long := "registry.k8s.io/kueue/kueue:" + strings.Repeat("v", 10_000)
		b.container("first", long)
		for i := range 100 {
			b.container("c", "registry.k8s.io/kueue/kueue:v0."+strings.Repeat("1", i+1))
		}
		got, ok := kueuecontroller.Detect(b.obj())
		Expect(ok).To(BeTrue())
		Expect(got.Container).To(Equal("first"))
		Expect(got.Reasons).To(HaveLen(16))
		Expect(len(got.Reasons[0])).To(BeNumerically("<", 300))
		Expect(got.Reasons[0]).To(HavePrefix(`image "registry.k8s.io/kueue/kueue:vvv`))
	})

	It("quotes arguments that could garble a message", func() {
		got, ok := kueuecontroller.Detect(makeObj("Deployment", "ns", "d").
			container("manager", kueueImage, "--config=/x y\n/controller_manager_config.yaml").obj())
		Expect(ok).To(BeTrue())
		Expect(got.Reasons).To(Equal([]string{imageReason, `argument "--config=/x y\n/controller_manager_config.yaml"`}))
	})
})
