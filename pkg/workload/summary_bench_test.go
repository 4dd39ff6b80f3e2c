package workload_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
	"github.com/kueue-guard/kueue-guard/pkg/workload"
)

// The summary is computed on every admission request, so its cost is the
// webhook's floor latency for a workload.

func BenchmarkSummarizeJob(b *testing.B) {
	obj := job(5, 0, tmpl(withInit(
		podSpec(ctr("main", rl{"cpu": "2", "memory": "4Gi"}, rl{"nvidia.com/gpu": "1"})),
		sidecar(ctr("proxy", rl{"cpu": "100m", "memory": "64Mi"}, nil)))))
	benchmarkSummarize(b, obj)
}

func BenchmarkSummarizeJobSet(b *testing.B) {
	obj := jobSet(
		replicatedJob("driver", 1, 1, cpu("1")),
		replicatedJob("workers", 4, 8, tmpl(podSpec(ctr("main", rl{"cpu": "4", "memory": "16Gi"}, rl{"nvidia.com/gpu": "2"})))),
	)
	benchmarkSummarize(b, obj)
}

func benchmarkSummarize(b *testing.B, obj *unstructured.Unstructured) {
	ctx := b.Context()
	if _, err := workload.Summarize(ctx, obj); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := workload.Summarize(ctx, obj); err != nil {
			b.Fatal(err)
		}
	}
}

// The nested-label walk runs on every validating request (the label
// consistency guard) and, for Deployments, StatefulSets and LeaderWorkerSets
// without a label of their own, on every queue lookup: it must not allocate
// for the nodes it only passes through.
func BenchmarkNestedLabelSitesJobSet(b *testing.B) {
	obj := jobSet(
		replicatedJob("driver", 1, 1, cpu("1")),
		replicatedJob("workers", 4, 8, tmpl(podSpec(ctr("main", rl{"cpu": "4", "memory": "16Gi"}, rl{"nvidia.com/gpu": "2"})))),
	)
	in, ok := integrations.Lookup(obj.GroupVersionKind().GroupKind())
	if !ok {
		b.Fatal("JobSet is not in the catalog")
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = workload.NestedLabelSites(obj, in, integrations.QueueNameLabel, integrations.PriorityClassLabel)
	}
}
