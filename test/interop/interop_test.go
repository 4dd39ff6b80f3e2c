package interop

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/resources"
	kueueworkload "sigs.k8s.io/kueue/pkg/workload"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/kueuecontroller"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
	"github.com/kueue-guard/kueue-guard/test/fixtures"
	"github.com/kueue-guard/kueue-guard/test/testenv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// compatFile is the document this suite checks (and writes with
// KUEUE_COMPAT_UPDATE=1), relative to the repository root.
const compatFile = "docs/kueue-compat.md"

// podSetView is what is compared of one pod set: Kueue's name, count, minCount
// and one pod's requests (Kueue's resources.Requests units: milli-CPU, bytes,
// counts).
type podSetView struct {
	Name     string
	Count    int32
	MinCount string
	Requests string
}

func (p podSetView) String() string {
	return fmt.Sprintf("%s ×%d (min %s) %s", p.Name, p.Count, p.MinCount, p.Requests)
}

func requestsString(r resources.Requests) string {
	keys := make([]string, 0, r.Len())
	for k, v := range r.Iter() {
		if v != 0 {
			keys = append(keys, fmt.Sprintf("%s=%d", k, v))
		}
	}
	slices.Sort(keys)
	return "{" + strings.Join(keys, " ") + "}"
}

func minCount(m *int32) string {
	if m == nil {
		return "-"
	}
	return fmt.Sprint(*m)
}

// kueueView is what Kueue charges for a Workload: its own AdjustResources
// (RuntimeClass overhead, LimitRange defaults, limits as requests, read through
// an index like its manager's) and its own workload.Info arithmetic.
func kueueView(wl *kueue.Workload) []podSetView {
	wl = wl.DeepCopy()
	kueueworkload.AdjustResources(ctx, indexed, wl)
	info := kueueworkload.NewInfo(wl)
	out := make([]podSetView, 0, len(wl.Spec.PodSets))
	for i, ps := range wl.Spec.PodSets {
		v := podSetView{Name: string(ps.Name), Count: ps.Count, MinCount: minCount(ps.MinCount), Requests: "{}"}
		if ps.Count > 0 {
			v.Requests = requestsString(info.TotalRequests[i].SinglePodRequests())
		}
		out = append(out, v)
	}
	return out
}

// apiResources reads LimitRanges and RuntimeClasses from the API server, for
// kueue-guard's side of the comparison.
type apiResources struct{}

func (apiResources) LimitRanges(ns string) []corev1.LimitRange {
	list := &corev1.LimitRangeList{}
	Expect(admin.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

func (apiResources) RuntimeClass(name string) (*nodev1.RuntimeClass, bool) {
	rc := &nodev1.RuntimeClass{}
	if err := admin.Get(ctx, client.ObjectKey{Name: name}, rc); err != nil {
		return nil, false
	}
	return rc, true
}

func (apiResources) TrainingRuntime(kind, namespace, name string) (*unstructured.Unstructured, bool) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "trainer.kubeflow.org", Version: "v1alpha1", Kind: kind})
	if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		return nil, false
	}
	return u, true
}

// guardView is kueue-guard's summary of the object as the API server holds it
// (after every defaulting and mutating webhook), for one admission unit: what
// Kueue makes one Workload of (one pod of a Deployment, one group of a
// LeaderWorkerSet).
func guardView(obj *unstructured.Unstructured) []podSetView {
	sum, err := workload.SummarizeWith(ctx, obj, workload.Options{Resources: apiResources{}, Runtimes: apiResources{}})
	Expect(err).NotTo(HaveOccurred())
	out := make([]podSetView, 0, len(sum.PodSets))
	groups, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if !found {
		groups = 1
	}
	for _, ps := range sum.PodSets {
		switch sum.AdmissionUnit {
		case workload.UnitPod:
			ps.Count = 1
		case workload.UnitGroup:
			ps.Count /= int32(groups)
		}
		v := podSetView{Name: ps.Name, Count: ps.Count, MinCount: minCount(ps.MinCount), Requests: "{}"}
		if ps.Count > 0 {
			v.Requests = requestsString(resources.NewRequestsFromResourceList(ps.Requests))
		}
		out = append(out, v)
	}
	return out
}

// ownedWorkload waits for the Workload Kueue creates for obj: owned by obj
// itself, or, for the kinds Kueue admits through their pods (Deployment,
// StatefulSet), by one of the pods their controllers create.
func ownedWorkload(obj *unstructured.Unstructured) *kueue.Workload {
	var found *kueue.Workload
	Eventually(func(g Gomega) {
		owners := map[types.UID]bool{obj.GetUID(): true}
		if sel, ok, _ := unstructured.NestedStringMap(obj.Object, "spec", "selector", "matchLabels"); ok {
			pods := &corev1.PodList{}
			g.Expect(admin.List(ctx, pods, client.InNamespace(obj.GetNamespace()), client.MatchingLabels(sel))).To(Succeed())
			for _, p := range pods.Items {
				owners[p.UID] = true
			}
		}
		list := &kueue.WorkloadList{}
		g.Expect(admin.List(ctx, list, client.InNamespace(obj.GetNamespace()))).To(Succeed())
		for i := range list.Items {
			for _, o := range list.Items[i].OwnerReferences {
				if owners[o.UID] {
					found = &list.Items[i]
				}
			}
		}
		g.Expect(found).NotTo(BeNil(), "Kueue created no Workload for %s %s", obj.GetKind(), obj.GetName())
	}, "30s", "200ms").Should(Succeed())
	return found
}

// compatRow is one line of docs/kueue-compat.md.
type compatRow struct{ kind, object, result string }

var rows []compatRow

func gpu(o fixtures.Object, n string) fixtures.Object { return o.Requests("nvidia.com/gpu", n) }

func kubeflowJob(kind, replicaKey, container string, roles ...string) fixtures.Object {
	specs := map[string]any{}
	for i, r := range roles {
		t := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
			"name": container, "image": "registry.example/train:1",
			"resources": map[string]any{"requests": map[string]any{"cpu": "1", "memory": "1Gi"}}}}}}
		specs[r] = map[string]any{"replicas": int64(i + 1), "template": t}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kubeflow.org/v1", "kind": kind,
		"metadata": map[string]any{"name": strings.ToLower(kind), "namespace": namespace},
		"spec":     map[string]any{replicaKey: specs}}}
	return fixtures.Object{Unstructured: u}
}

// appWrapper wraps a Job of 2 pods and declares its pod set, as AppWrapper's own
// webhook (not running here) would.
func appWrapper() fixtures.Object {
	o := fixtures.AppWrapper(namespace, "appwrapper")
	comps, _, _ := unstructured.NestedSlice(o.Object, "spec", "components")
	c := comps[0].(map[string]any)
	c["template"].(map[string]any)["spec"].(map[string]any)["parallelism"] = int64(2)
	c["template"].(map[string]any)["spec"].(map[string]any)["completions"] = int64(2)
	c["podSets"] = []any{map[string]any{"replicas": int64(2), "path": "template.spec.template"}}
	Expect(unstructured.SetNestedSlice(o.Object, comps, "spec", "components")).To(Succeed())
	return o
}

// sparkApplication is a Python application with a driver and 3 executors.
func sparkApplication() fixtures.Object {
	return fixtures.Object{Unstructured: &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
		"metadata": map[string]any{"name": "spark", "namespace": namespace},
		"spec": map[string]any{"type": "Python", "mode": "cluster", "sparkVersion": "3.5.0", "image": "spark:3.5.0",
			"mainApplicationFile": "local:///opt/app.py",
			"driver":              map[string]any{"cores": int64(1), "coreRequest": "500m", "memory": "512m"},
			"executor":            map[string]any{"instances": int64(3), "cores": int64(1), "coreRequest": "1", "memory": "2g"}}}}}
}

// rayService is a RayService whose cluster is the RayJob fixture's.
func rayService() fixtures.Object {
	spec, _, _ := unstructured.NestedMap(fixtures.RayCluster(namespace, "x").Object, "spec")
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "ray.io/v1", "kind": "RayService",
		"metadata": map[string]any{"name": "rayservice", "namespace": namespace},
		"spec":     map[string]any{"rayClusterConfig": spec}}}
	return fixtures.Object{Unstructured: u}
}

var _ = Describe("kueue-guard's summary equals the Workload Kueue creates", Ordered, func() {
	DescribeTable("for each kind",
		func(description string, o fixtures.Object, ns string) {
			obj := o.Queue(localQueue).Obj()
			obj.SetNamespace(ns)
			Expect(admin.Create(ctx, obj)).To(Succeed())
			wl := ownedWorkload(obj)
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(obj.GroupVersionKind())
			Expect(admin.Get(ctx, client.ObjectKeyFromObject(obj), live)).To(Succeed())

			want, got := kueueView(wl), guardView(live)
			result := "equal: " + strings.Trim(fmt.Sprint(want), "[]")
			if fmt.Sprint(want) != fmt.Sprint(got) {
				result = fmt.Sprintf("differs: Kueue %v, kueue-guard %v", want, got)
			}
			rows = append(rows, compatRow{kind: obj.GetKind(), object: description, result: result})
			Expect(got).To(Equal(want), "pod sets of %s %s", obj.GetKind(), obj.GetName())
		},
		Entry(nil, "2 pods, CPU and a GPU each", gpu(fixtures.Job(namespace, "job").Parallelism(2), "1"), namespace),
		Entry(nil, "no requests, under a LimitRange with container defaults",
			fixtures.Job(limitedNamespace, "job-limitrange").Set([]any{map[string]any{"name": "main", "image": "busybox"}},
				"spec", "template", "spec", "containers"), limitedNamespace),
		Entry(nil, "a RuntimeClass with pod overhead",
			fixtures.Job(namespace, "job-runtimeclass").Set(runtimeClass, "spec", "template", "spec", "runtimeClassName"), namespace),
		Entry(nil, "partially admissible (job-min-parallelism 2 of 4)",
			fixtures.Job(namespace, "job-partial").Parallelism(4).Label("kueue.x-k8s.io/job-min-parallelism", "2").
				Set(map[string]any{"kueue.x-k8s.io/job-min-parallelism": "2"}, "metadata", "annotations"), namespace),
		Entry(nil, "pod-level resources (spec.template.spec.resources), charged from Kueue 0.19",
			fixtures.Job(namespace, "job-podlevel").Set(map[string]any{"requests": map[string]any{"cpu": "2", "memory": "1Gi"},
				"limits": map[string]any{"cpu": "2", "memory": "1Gi"}}, "spec", "template", "spec", "resources"), namespace),
		Entry(nil, "a single Pod", fixtures.Pod(namespace, "pod"), namespace),
		Entry(nil, "3 replicas: Kueue admits each pod as its own Workload (input.workload.admissionUnit pod)",
			fixtures.Deployment(namespace, "deployment").Set(int64(3), "spec", "replicas").Requests("nvidia.com/gpu", "1"), namespace),
		Entry(nil, "2 replicas: one pod group", fixtures.StatefulSet(namespace, "statefulset").Set(int64(2), "spec", "replicas"), namespace),
		Entry(nil, "2 replicated jobs", fixtures.JobSet(namespace, "jobset"), namespace),
		// Its containers carry environment, commands, probes, ports and mounts,
		// which the summary leaves out of Kueue's adapter: the outcome proves
		// them unread.
		Entry(nil, "a training job: 4 replicated jobs, containers with environment, probes and mounts, an init container",
			fixtures.TrainingJobSet(namespace, "training"), namespace),
		Entry(nil, "head, workers and Kueue's default submitter (K8sJobMode)", fixtures.RayJob(namespace, "rayjob"), namespace),
		Entry(nil, "a submitter pod template with a GPU",
			fixtures.RayJob(namespace, "rayjob-submitter").Set(map[string]any{"spec": map[string]any{"restartPolicy": "Never",
				"containers": []any{map[string]any{"name": "submit", "image": "ray",
					"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": "1"}}}}}}, "spec", "submitterPodTemplate"), namespace),
		Entry(nil, "head and one worker group", fixtures.RayCluster(namespace, "raycluster"), namespace),
		Entry(nil, "launcher and 2 workers", fixtures.MPIJob(namespace, "mpijob"), namespace),
		Entry(nil, "master and worker", fixtures.PyTorchJob(namespace, "pytorchjob"), namespace),
		Entry(nil, "chief and 2 workers", kubeflowJob("TFJob", "tfReplicaSpecs", "tensorflow", "Chief", "Worker"), namespace),
		Entry(nil, "master and 2 workers", kubeflowJob("XGBoostJob", "xgbReplicaSpecs", "xgboost", "Master", "Worker"), namespace),
		Entry(nil, "master and 2 workers", kubeflowJob("PaddleJob", "paddleReplicaSpecs", "paddle", "Master", "Worker"), namespace),
		Entry(nil, "1 worker", kubeflowJob("JAXJob", "jaxReplicaSpecs", "jax", "Worker"), namespace),
		Entry(nil, "a wrapped Job of 2 pods, its pod set declared (spec.components[].podSets)", appWrapper(), namespace),
		Entry(nil, "head and one worker group", rayService(), namespace),
		Entry(nil, "a driver and 3 executors", sparkApplication(), namespace),
		Entry(nil, "2 groups of a leader with a GPU and 2 workers: Kueue admits each group as its own Workload (input.workload.admissionUnit group)",
			fixtures.LeaderWorkerSet(namespace, "lws").Set(int64(2), "spec", "replicas").Set(int64(3), "spec", "leaderWorkerTemplate", "size").
				Set(map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "leader", "image": "registry.example/lead:1",
					"resources": map[string]any{"requests": map[string]any{"cpu": "1"}, "limits": map[string]any{"nvidia.com/gpu": "1"}}}}}},
					"spec", "leaderWorkerTemplate", "leaderTemplate").
				// What LeaderWorkerSet's own defaulting webhook (not running here) sets.
				Set(map[string]any{"type": "RollingUpdate", "rollingUpdateConfiguration": map[string]any{"maxUnavailable": int64(1), "maxSurge": int64(0)}},
					"spec", "rolloutStrategy").
				Set("LeaderCreated", "spec", "startupPolicy").
				Set("RecreateGroupOnPodRestart", "spec", "leaderWorkerTemplate", "restartPolicy"), namespace),
		Entry(nil, "torch-distributed ClusterTrainingRuntime, 2 nodes of a GPU each (trainer.resourcesPerNode)",
			fixtures.TrainJob(namespace, "trainjob").Set(map[string]any{"limits": map[string]any{"nvidia.com/gpu": "1"}},
				"spec", "trainer", "resourcesPerNode"), namespace),
		Entry(nil, "deepspeed-distributed ClusterTrainingRuntime (an MPI launcher that runs as a node), 3 nodes",
			fixtures.TrainJob(namespace, "trainjob-mpi").Set("deepspeed-distributed", "spec", "runtimeRef", "name").
				Set(int64(3), "spec", "trainer", "numNodes"), namespace),
	)

	// Kueue 0.19 names a pod group by annotation (WorkloadIdentifierAnnotations,
	// on by default) before the label.
	DescribeTable("counts a pod group as the one Workload Kueue makes of it",
		func(group, how string, mark func(fixtures.Object) fixtures.Object) {
			const size = 3
			var pods []*unstructured.Unstructured
			for i := range size {
				pod := mark(gpu(fixtures.Pod(namespace, fmt.Sprintf("%s-%d", group, i)), "1").Queue(localQueue).
					Set(map[string]any{"kueue.x-k8s.io/pod-group-total-count": strconv.Itoa(size)}, "metadata", "annotations")).Obj()
				Expect(admin.Create(ctx, pod)).To(Succeed())
				pods = append(pods, pod)
			}
			wl := ownedWorkload(pods[0])
			for _, pod := range pods {
				live := &unstructured.Unstructured{}
				live.SetGroupVersionKind(pod.GroupVersionKind())
				Expect(admin.Get(ctx, client.ObjectKeyFromObject(pod), live)).To(Succeed())
				want, got := kueueView(wl), guardView(live)
				Expect(got).To(Equal(want), "pod %s of the group", pod.GetName())
			}
			rows = append(rows, compatRow{kind: "Pod", object: fmt.Sprintf("a pod group of %d alike pods (%s, pod-group-total-count)", size, how),
				result: "equal: " + strings.Trim(fmt.Sprint(kueueView(wl)), "[]")})
		},
		Entry(nil, "pod-group", "label kueue.x-k8s.io/pod-group-name", func(o fixtures.Object) fixtures.Object {
			return o.Label("kueue.x-k8s.io/pod-group-name", "pod-group")
		}),
		Entry(nil, "pod-group-annotated", "annotation kueue.x-k8s.io/pod-group-name, Kueue 0.19", func(o fixtures.Object) fixtures.Object {
			return o.Set("pod-group-annotated", "metadata", "annotations", "kueue.x-k8s.io/pod-group-name")
		}),
	)

	It("counts an elastic Job scaled while queued as the Workload Kueue makes of its new size", func() {
		obj := fixtures.Job(namespace, "job-elastic").Parallelism(2).Set(int64(4), "spec", "completions").Queue(localQueue).
			Set(map[string]any{"kueue.x-k8s.io/elastic-job": "true"}, "metadata", "annotations").Obj()
		Expect(admin.Create(ctx, obj)).To(Succeed())
		ownedWorkload(obj)
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(obj.GroupVersionKind())
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(obj), live)).To(Succeed())
		Expect(unstructured.SetNestedField(live.Object, int64(3), "spec", "parallelism")).To(Succeed())
		Expect(admin.Update(ctx, live)).To(Succeed())
		var wl *kueue.Workload
		Eventually(func(g Gomega) {
			wl = nil
			list := &kueue.WorkloadList{}
			g.Expect(admin.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
			for i := range list.Items {
				for _, o := range list.Items[i].OwnerReferences {
					if o.UID == obj.GetUID() && list.Items[i].Spec.PodSets[0].Count == 3 {
						wl = &list.Items[i]
					}
				}
			}
			g.Expect(wl).NotTo(BeNil(), "a Workload of the Job's new size")
		}, "30s", "200ms").Should(Succeed())
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(obj), live)).To(Succeed())
		want, got := kueueView(wl), guardView(live)
		Expect(got).To(Equal(want))
		rows = append(rows, compatRow{kind: "Job", object: "elastic (kueue.x-k8s.io/elastic-job), parallelism 2 changed to 3 while queued",
			result: "equal: " + strings.Trim(fmt.Sprint(want), "[]")})
	})

	It("is what "+compatFile+" says (KUEUE_COMPAT_UPDATE=1 rewrites it)", func() {
		path := filepath.Join(testenv.RepoRoot(), compatFile)
		want := renderCompat(rows)
		if os.Getenv("KUEUE_COMPAT_UPDATE") == "1" {
			Expect(os.WriteFile(path, want, 0o644)).To(Succeed())
		}
		got, err := os.ReadFile(path)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(got)).To(Equal(string(want)), "run KUEUE_COMPAT_UPDATE=1 go test ./test/interop/ and review the diff")
	})
})

// notCompared are the catalog kinds this suite does not create yet, and why.
var notCompared = map[string]string{
	"CronJob": "its Jobs are compared as Jobs; Kueue creates no Workload for the CronJob itself",
}

// knownDivergences are objects whose summary is known to differ from Kueue's
// Workload, and why; they are listed, not compared.
var knownDivergences = []compatRow{
	{
		kind:   "Pod",
		object: "a pod group whose pods differ (pod roles)",
		result: "differs, known: Kueue makes one pod set per role once every pod exists; admission sees one pod at a time, so each pod is judged as pod-group-total-count pods of its own role (for every resource, the largest pod's estimate is at least the group's total)",
	},
}

func renderCompat(rows []compatRow) []byte {
	version, err := testenv.KueueVersion()
	Expect(err).NotTo(HaveOccurred())
	var b bytes.Buffer
	b.WriteString("<!-- Written by test/interop (KUEUE_COMPAT_UPDATE=1 go test ./test/interop/). DO NOT EDIT. -->\n")
	b.WriteString("# Kueue compatibility\n\n")
	b.WriteString("What kueue-guard's policies read as `input.workload` is compared, on the real control plane, with the\n")
	b.WriteString("Workload the real Kueue manager (" + version + ") creates for the same object: every pod set's\n")
	b.WriteString("name, count, minCount and one pod's requests, after Kueue's own request adjustment (RuntimeClass\n")
	b.WriteString("overhead, LimitRange defaults, limits as missing requests).\n\n")
	b.WriteString("| kind | object | result |\n|---|---|---|\n")
	compared := map[string]bool{}
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.kind, r.object, r.result)
		compared[r.kind] = true
	}
	var rest []string
	for _, in := range integrations.All() {
		if !compared[in.GVK.Kind] {
			rest = append(rest, in.GVK.Kind)
		}
	}
	for _, k := range rest {
		fmt.Fprintf(&b, "| %s | — | %s |\n", k, notCompared[k])
	}
	for _, d := range knownDivergences {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", d.kind, d.object, d.result)
	}
	renderVersions(&b)
	return b.Bytes()
}

// renderVersions writes the support table: the minor the rows above come from,
// and what is known to differ in the others (kueuecontroller.Assess, which the
// server's kueue_guard_kueue_info, its log and preflight's kueue-version say).
func renderVersions(b *bytes.Buffer) {
	b.WriteString("\n## Kueue versions\n\n")
	b.WriteString("kueue-guard computes with the Kueue code of " + kueuecontroller.TestedVersion + " and every integration suite runs that\n")
	b.WriteString("manager. It reads the release a cluster runs from the manager's image tag or chart labels, and says\n")
	b.WriteString("when the minor differs: `kueue_guard_kueue_info{tested=\"false\"}`, a warning in its log, and\n")
	b.WriteString("`kueue-guard preflight`'s `kueue-version` check, each naming the differences below.\n\n")
	b.WriteString("| Kueue minor | status | known differences from the tested minor |\n|---|---|---|\n")
	for _, s := range kueuecontroller.Documented() {
		status, diff := "not tested", strings.Join(s.Differences, "; ")
		if s.Tested {
			status, diff = "tested ("+kueuecontroller.TestedVersion+")", "—"
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", s.Minor, status, diff)
	}
}
