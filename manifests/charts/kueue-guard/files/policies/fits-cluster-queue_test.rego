package kueue_guard.fits_cluster_queue_test

import data.kueue_guard.fits_cluster_queue as policy

gpu := "nvidia.com/gpu"

quota(flavor, resource, nominal, borrowing, used) := {
	"flavor": flavor, "resource": resource, "nominal": nominal,
	"borrowingLimit": borrowing, "lendingLimit": null, "used": used, "reserved": used,
}

# cq's capacity is what Kueue's scheduler would compute for a queue whose
# cohort has enough to lend: nominal plus borrowing limit, or plus 1000 when it
# may borrow without a limit.
cq(cohort, quotas) := {
	"name": "cq", "cohort": cohort, "stopPolicy": "None", "quotas": quotas,
	"capacity": [{"flavor": q.flavor, "resource": q.resource, "max": cap(cohort, q)} | some q in quotas],
	"resources": {r: totals(cohort, [q | some q in quotas; q.resource == r]) | some q0 in quotas; r := q0.resource},
}

# totals is input.clusterQueue.resources[r] as kueue-guard sums it.
totals(cohort, qs) := {
	"flavors": [q.flavor | some q in qs],
	"max": sum([cap(cohort, q) | some q in qs]),
	"largestFlavor": max([cap(cohort, q) | some q in qs]),
	"free": sum([max([0, cap(cohort, q) - max([q.used, q.reserved])]) | some q in qs]),
}

cap(null, q) := q.nominal

cap(cohort, q) := q.nominal + q.borrowingLimit if {
	cohort != null
	q.borrowingLimit != null
}

cap(cohort, q) := q.nominal + 1000 if {
	cohort != null
	q.borrowingLimit == null
}

# whole is a workload admitted whole: one unit, at full size.
whole(pod_sets, total) := {
	"podSets": [object.union(ps, {"minCount": null}) | some ps in pod_sets],
	"totalRequests": total, "admissionUnit": "workload", "unitRequests": total, "minUnitRequests": total,
}

workload(pods, gpus_per_pod) := whole(
	[{"name": "main", "count": pods, "requests": {gpu: gpus_per_pod, "cpu": 1}}],
	{gpu: pods * gpus_per_pod, "cpu": pods},
)

inp(queue, wl) := {
	"request": {"operation": "CREATE", "kind": {"group": "batch", "version": "v1", "kind": "Job"}},
	"workload": wl,
	"localQueue": {"name": "lq", "clusterQueue": "cq", "stopPolicy": "None"},
	"clusterQueue": queue,
}

gpu_queue(used) := cq("research", [quota("a100", gpu, 4, 4, used), quota("default", "cpu", 64, null, 0)])

test_never_fits_is_denied if {
	policy.deny == {`requests 10 nvidia.com/gpu but ClusterQueue "cq" can provide at most 8 (nominal 4, and what cohort "research" can lend it)`} with input as inp(gpu_queue(0), workload(5, 2))
}

test_fits_with_borrowing if {
	count(policy.deny) == 0 with input as inp(gpu_queue(0), workload(4, 2))
	count(policy.warn) == 0 with input as inp(gpu_queue(0), workload(4, 2))
}

test_warns_when_not_enough_is_free_now if {
	count(policy.deny) == 0 with input as inp(gpu_queue(2), workload(4, 2))
	policy.warn == {`requests 8 nvidia.com/gpu but ClusterQueue "cq" has 6 free now: it may wait for quota`} with input as inp(gpu_queue(2), workload(4, 2))
}

# Borrowing without a limit is bounded by what the cohort tree has.
test_borrowing_without_a_limit_is_bounded_by_the_cohort if {
	queue := cq("research", [quota("a100", gpu, 4, null, 0), quota("default", "cpu", 64, null, 0)])
	count(policy.deny) == 0 with input as inp(queue, workload(50, 2))
	count(policy.warn) == 0 with input as inp(queue, workload(50, 2))
}

test_no_cohort_means_nominal_only if {
	queue := cq(null, [quota("a100", gpu, 4, null, 0), quota("default", "cpu", 64, null, 0)])
	policy.deny == {`requests 6 nvidia.com/gpu but ClusterQueue "cq" can provide at most 4 (nominal 4; no cohort to borrow from)`} with input as inp(queue, workload(3, 2))
}

test_flavors_add_up_for_the_total if {
	queue := cq(null, [quota("a100", gpu, 4, null, 0), quota("h100", gpu, 4, null, 0), quota("default", "cpu", 64, null, 0)])
	policy.deny == {`requests 10 nvidia.com/gpu but ClusterQueue "cq" can provide at most 8 (across flavors a100, h100)`} with input as inp(queue, workload(5, 2))
}

test_a_pod_set_must_fit_one_flavor if {
	queue := cq(null, [quota("a100", gpu, 4, null, 0), quota("h100", gpu, 4, null, 0), quota("default", "cpu", 64, null, 0)])
	policy.deny == {`pod set "main" requests 6 nvidia.com/gpu but no flavor of ClusterQueue "cq" provides more than 4`} with input as inp(queue, workload(3, 2))
}

test_memory_is_rendered_in_gi if {
	queue := cq(null, [quota("default", "memory", 68719476736, null, 0)])
	wl := whole([{"name": "main", "count": 1, "requests": {"memory": 137438953472}}], {"memory": 137438953472})
	policy.deny == {`requests 128Gi memory but ClusterQueue "cq" can provide at most 64Gi (nominal 64Gi; no cohort to borrow from)`} with input as inp(queue, wl)
}

test_fractional_cpu if {
	queue := cq(null, [quota("default", "cpu", 0.5, null, 0)])
	wl := whole([{"name": "main", "count": 3, "requests": {"cpu": 0.25}}], {"cpu": 0.75})
	policy.deny == {`requests 0.75 cpu but ClusterQueue "cq" can provide at most 0.5 (nominal 0.5; no cohort to borrow from)`} with input as inp(queue, wl)
}

test_uncovered_resource_warns if {
	queue := cq(null, [quota("default", "cpu", 64, null, 0)])
	policy.warn == {`requests nvidia.com/gpu, for which ClusterQueue "cq" has no quota: Kueue cannot admit it`} with input as inp(queue, workload(1, 1))
}

# A resource the queue lists with no flavor is no quota either, and its null
# capacity denies nothing.
test_resource_without_flavors_warns if {
	queue := object.union(cq(null, [quota("default", "cpu", 64, null, 0)]), {"resources": {gpu: {"flavors": [], "max": null, "largestFlavor": null, "free": null}}})
	policy.warn == {`requests nvidia.com/gpu, for which ClusterQueue "cq" has no quota: Kueue cannot admit it`} with input as inp(queue, workload(1, 1))
	count(policy.deny) == 0 with input as inp(queue, workload(1, 1))
}

test_excluded_resources_are_ignored if {
	queue := cq(null, [quota("default", "cpu", 64, null, 0)])
	count(policy.warn) == 0 with input as inp(queue, workload(1, 1))
		with data.kueue_guard.config as {"excluded_resource_prefixes": ["nvidia.com/"]}
}

test_stopped_queue_is_left_to_the_builtin_checks if {
	queue := object.union(gpu_queue(0), {"stopPolicy": "Hold"})
	count(policy.warn) == 0 with input as inp(queue, workload(1, 1))
}

test_no_cluster_queue_no_opinion if {
	count(policy.deny) == 0 with input as inp(null, workload(100, 8))
	count(policy.warn) == 0 with input as inp(null, workload(100, 8))
}

# Partial admission: 8 pods of 2 GPUs never fit 8 GPUs whole, but Kueue may
# admit them at their minimum of 2 pods.
test_partially_admissible_job_is_judged_at_its_minimum if {
	wl := object.union(workload(8, 2), {
		"podSets": [{"name": "main", "count": 8, "minCount": 2, "requests": {gpu: 2, "cpu": 1}}],
		"minUnitRequests": {gpu: 4, "cpu": 2},
	})
	count(policy.deny) == 0 with input as inp(gpu_queue(0), wl)
	too_big := object.union(wl, {"podSets": [{"name": "main", "count": 8, "minCount": 5, "requests": {gpu: 2, "cpu": 1}}], "minUnitRequests": {gpu: 10, "cpu": 5}})
	policy.deny == {`requests 16 nvidia.com/gpu (at least 10 at the fewest pods Kueue may admit it with) but ClusterQueue "cq" can provide at most 8 (nominal 4, and what cohort "research" can lend it)`} with input as inp(gpu_queue(0), too_big)
}

# Kueue admits a Deployment pod by pod: 20 pods of 1 GPU each fit one at a time.
test_a_deployment_is_judged_per_pod if {
	wl := object.union(workload(20, 1), {"admissionUnit": "pod", "unitRequests": {gpu: 1, "cpu": 1}, "minUnitRequests": {gpu: 1, "cpu": 1}})
	count(policy.deny) == 0 with input as inp(gpu_queue(0), wl)
}

# Without capacity (Kueue would not admit to the queue) there is nothing to
# compare with: no denial, and the quota is still there, so no "no quota" warning.
test_unknown_capacity_no_opinion if {
	queue := object.union(gpu_queue(0), {"capacity": [], "resources": {
		gpu: {"flavors": ["a100"], "max": null, "largestFlavor": null, "free": null},
		"cpu": {"flavors": ["default"], "max": null, "largestFlavor": null, "free": null},
	}})
	count(policy.deny) == 0 with input as inp(queue, workload(100, 8))
	count(policy.warn) == 0 with input as inp(queue, workload(100, 8))
}
