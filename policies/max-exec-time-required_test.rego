package kueue_guard.max_exec_time_required_test

import data.kueue_guard.max_exec_time_required as policy

inp(kind, labels) := {
	"request": {"operation": "CREATE", "kind": {"group": "batch", "version": "v1", "kind": kind}},
	"object": {"metadata": {"labels": labels}, "spec": {"jobTemplate": {"metadata": {"labels": labels}}}},
}

test_missing_label_warns if {
	policy.warn == {{
		"msg": "no kueue.x-k8s.io/max-exec-time-seconds label: an overrun would hold its quota",
		"field": `metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]`,
	}} with input as inp("Job", {})
}

test_label_present if {
	count(policy.warn) == 0 with input as inp("Job", {"kueue.x-k8s.io/max-exec-time-seconds": "3600"})
}

test_cronjob_reads_the_job_template if {
	some v in policy.warn with input as inp("CronJob", {})
	v.field == `spec.jobTemplate.metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]`
}

test_never_denies if {
	not policy.deny with input as inp("Job", {})
}

# The policy reads the label by its key written out: it must be lib's.
test_label_key_is_libs if {
	count(policy.warn) == 0 with input as inp("Job", {data.kueue_guard.lib.max_exec_time_label: "60"})
	count(policy.warn) == 0 with input as inp("CronJob", {data.kueue_guard.lib.max_exec_time_label: "60"})
}

test_cronjob_label_on_itself_only_warns if {
	count(policy.warn) == 1 with input as {
		"request": {"operation": "CREATE", "kind": {"group": "batch", "version": "v1", "kind": "CronJob"}},
		"object": {"metadata": {"labels": {"kueue.x-k8s.io/max-exec-time-seconds": "60"}}, "spec": {"jobTemplate": {"metadata": {"labels": {}}}}},
	}
}
