package kueue_guard.allowed_queues_test

import data.kueue_guard.allowed_queues as policy

inp(op, kind, queue, annotations) := {
	"request": {"operation": op, "kind": {"group": "batch", "version": "v1", "kind": kind}},
	"namespace": {"name": "ml", "labels": {}, "annotations": annotations},
	"workload": {"queueName": queue},
	"object": {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": queue}}},
	"oldObject": null,
}

allow_ab := {"kueue-guard.io/allowed-queues": "a, b"}

test_listed_queue_is_allowed if {
	count(policy.deny) == 0 with input as inp("CREATE", "Job", "b", allow_ab)
}

test_unlisted_queue_is_denied if {
	policy.deny == {{
		"msg": `LocalQueue "gpu" is not allowed in namespace "ml" (allowed: a, b)`,
		"field": `metadata.labels[kueue.x-k8s.io/queue-name]`,
	}} with input as inp("CREATE", "Job", "gpu", allow_ab)
}

test_no_annotation_allows_everything if {
	count(policy.deny) == 0 with input as inp("CREATE", "Job", "gpu", {})
}

test_empty_annotation_allows_nothing if {
	some v in policy.deny with input as inp("CREATE", "Job", "a", {"kueue-guard.io/allowed-queues": ""})
	endswith(v.msg, "(allowed: none)")
}

test_cronjob_field_is_in_the_job_template if {
	some v in policy.deny with input as inp("CREATE", "CronJob", "gpu", allow_ab)
	v.field == `spec.jobTemplate.metadata.labels[kueue.x-k8s.io/queue-name]`
}

test_update_changing_the_queue_is_judged if {
	base := inp("UPDATE", "Job", "gpu", allow_ab)
	moved := object.union(base, {
		"oldObject": {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "a"}}},
		"oldWorkload": {"queueName": "a"},
	})
	count(policy.deny) == 1 with input as moved
}

test_update_keeping_the_queue_is_not_judged if {
	base := inp("UPDATE", "Job", "gpu", allow_ab)
	same := object.union(base, {
		"oldObject": {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "gpu"}}},
		"oldWorkload": {"queueName": "gpu"},
	})
	count(policy.deny) == 0 with input as same
}

# The queue Kueue acts on may live in a pod template (a Deployment's): moving it
# there is a change of queue even though the object's own labels did not change.
test_update_moving_the_effective_queue_is_judged if {
	base := inp("UPDATE", "Deployment", "gpu", allow_ab)
	moved := object.union(base, {
		"object": {"metadata": {"labels": {}}},
		"oldObject": {"metadata": {"labels": {}}},
		"oldWorkload": {"queueName": "a"},
	})
	count(policy.deny) == 1 with input as moved
}

# Without an old summary (an old object that could not be read) the update is
# judged like a new workload.
test_update_without_old_summary_is_judged if {
	base := inp("UPDATE", "Job", "gpu", allow_ab)
	count(policy.deny) == 1 with input as object.union(base, {"oldWorkload": null})
}
