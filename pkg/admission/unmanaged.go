package admission

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kueue-guard/kueue-guard/pkg/cluster"
	"github.com/kueue-guard/kueue-guard/pkg/integrations"
)

// RuleKueueUnmanaged warns about a workload Kueue will not manage whatever its
// queue: defaulting gives it none, and a queue it has does not hold it.
var RuleKueueUnmanaged = Register(Rule{
	ID:    RuleNamespace + ".kueue_unmanaged",
	Title: "Kueue manages the workload",
	Doc: "Kueue leaves some workloads alone whatever their queue: Pods, Deployments, StatefulSets and " +
		"LeaderWorkerSets in namespaces outside its managedJobsNamespaceSelector (by default kube-system and " +
		"Kueue's own), and RayJobs on an existing cluster (spec.clusterSelector). Queue defaulting skips them; " +
		"a queue they carry is reported, since they run outside quota.",
	Enforcement: EnforcementWarn,
	Check:       queueChecksName,
	WebhookOnly: "it reads Kueue's managedJobsNamespaceSelector (Kueue's Configuration)",
})

// KueueIgnores says why Kueue will not manage the workload whatever its queue
// label (a pod-based kind outside Kueue's managedJobsNamespaceSelector, a RayJob
// on an existing cluster), or "" when it will, or when Kueue's Configuration is
// not known: then nothing is assumed. The reviewer's --explain says the same.
func KueueIgnores(obj *unstructured.Unstructured, namespace string, in *integrations.Integration, view cluster.View) string {
	return kueueIgnores(obj, namespace, in, view)
}

func kueueIgnores(obj *unstructured.Unstructured, namespace string, in *integrations.Integration, view cluster.View) string {
	if in.GVK.Group == "ray.io" && in.GVK.Kind == "RayJob" {
		if sel, _, _ := unstructured.NestedMap(obj.Object, "spec", "clusterSelector"); len(sel) > 0 {
			return "a RayJob on an existing RayCluster (spec.clusterSelector) is not managed by Kueue, and KubeRay refuses it with a queue"
		}
	}
	if !in.PodBased || namespace == "" {
		return ""
	}
	cfg, ok := view.KueueConfig()
	if !ok || cfg.ManagesNamespace(namespace, view) {
		return ""
	}
	return fmt.Sprintf("Kueue does not manage %ss in namespace %q (its managedJobsNamespaceSelector)", in.GVK.Kind, namespace)
}

// kueueHoldsUnqueued reports whether Kueue itself holds a workload that has no
// queue: its Configuration sets manageJobsWithoutQueueName and the namespace is
// one it manages (managedJobsNamespaceSelector modulates the setting for every
// kind).
func kueueHoldsUnqueued(namespace string, view cluster.View) bool {
	cfg, ok := view.KueueConfig()
	return ok && cfg.ManageJobsWithoutQueueName && cfg.ManagesNamespace(namespace, view)
}
