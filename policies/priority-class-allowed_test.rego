package kueue_guard.priority_class_allowed_test

import data.kueue_guard.priority_class_allowed as policy

import data.kueue_guard.specs_test.with_specs

config := {"priority_classes": {
	"critical": {"groups": ["ml-admins"], "namespaces": ["prod"]},
	"urgent": {"users": ["alice"]},
	"frozen": {},
}}

inp(user, groups, ns, class) := {
	"request": {
		"operation": "CREATE", "namespace": ns,
		"kind": {"group": "batch", "version": "v1", "kind": "Job"},
		"userInfo": {"username": user, "groups": groups},
	},
	"workload": {"priorityClass": class, "priority": {"class": class, "source": "kueue.x-k8s.io/workloadpriorityclass"}},
	"object": {"metadata": {"labels": {"kueue.x-k8s.io/priority-class": class}}},
	"oldObject": null,
}

test_unrestricted_class_is_open if {
	count(policy.deny) == 0 with input as inp("bob", [], "dev", "low") with data.kueue_guard.config as config
}

test_no_class_is_open if {
	count(policy.deny) == 0 with input as inp("bob", [], "dev", "") with data.kueue_guard.config as config
}

test_allowed_group if {
	count(policy.deny) == 0 with input as inp("bob", ["ml-admins"], "dev", "critical") with data.kueue_guard.config as config
}

test_allowed_namespace if {
	count(policy.deny) == 0 with input as inp("bob", [], "prod", "critical") with data.kueue_guard.config as config
}

test_allowed_user if {
	count(policy.deny) == 0 with input as inp("alice", [], "dev", "urgent") with data.kueue_guard.config as config
}

test_others_are_denied if {
	policy.deny == {{
		"msg": `WorkloadPriorityClass "critical" is reserved for groups ml-admins; namespaces prod`,
		"field": `metadata.labels[kueue.x-k8s.io/priority-class]`,
	}} with input as inp("bob", ["system:authenticated"], "dev", "critical") with data.kueue_guard.config as config
}

test_class_for_nobody if {
	some v in policy.deny with input as inp("alice", [], "prod", "frozen") with data.kueue_guard.config as config
	v.msg == `WorkloadPriorityClass "frozen" is reserved for nobody`
}

cronjob_child(user, trusted) := object.union(inp(user, [], "dev", "critical"), {
	"request": {"trustedController": trusted},
	"object": {"metadata": {
		"labels": {"kueue.x-k8s.io/priority-class": "critical"},
		"ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "controller": true}],
	}},
})

test_trusted_controller_created_objects_are_skipped if {
	owned := cronjob_child("system:serviceaccount:kube-system:cronjob-controller", true)
	count(policy.deny) == 0 with input as owned with data.kueue_guard.config as config
}

# A tenant who writes a controller owner reference into their own Job is not a
# controller: the reserved class is denied all the same.
test_forged_owner_is_judged if {
	forged := cronjob_child("bob", false)
	count(policy.deny) == 1 with input as forged with data.kueue_guard.config as config
}

# Without the label Kueue takes the pods' priorityClassName: the same table
# judges it.
pod_class(user, class) := with_specs({
	"request": {
		"operation": "CREATE", "namespace": "dev",
		"kind": {"group": "batch", "version": "v1", "kind": "Job"},
		"userInfo": {"username": user, "groups": []},
	},
	"workload": {
		"priorityClass": "", "priority": {"class": class, "source": "scheduling.k8s.io/priorityclass"},
		"podSpecPaths": [["spec", "template", "spec"]],
	},
	"object": {"spec": {"template": {"spec": {"priorityClassName": class}}}},
	"oldObject": null,
})

test_pod_priority_class_is_judged_by_the_same_table if {
	policy.deny == {{
		"msg": `PriorityClass "critical" (which Kueue takes as the workload's priority without a kueue.x-k8s.io/priority-class label) is reserved for groups ml-admins; namespaces prod`,
		"field": "spec.template.spec.priorityClassName",
	}} with input as pod_class("bob", "critical") with data.kueue_guard.config as config
	count(policy.deny) == 0 with input as pod_class("bob", "low") with data.kueue_guard.config as config
}

test_an_update_that_does_not_change_the_priority_is_not_judged if {
	upd := object.union(pod_class("bob", "critical"), {
		"request": {"operation": "UPDATE"},
		"oldWorkload": {"priority": {"class": "critical", "source": "scheduling.k8s.io/priorityclass"}},
	})
	count(policy.deny) == 0 with input as upd with data.kueue_guard.config as config
	moved := object.union(upd, {"oldWorkload": {"priority": {"class": "low", "source": "scheduling.k8s.io/priorityclass"}}})
	count(policy.deny) == 1 with input as moved with data.kueue_guard.config as config
}

test_a_scheduling_policy_class_points_there if {
	inp := with_specs(json.patch(pod_class("bob", "critical"), [
		{"op": "replace", "path": "/object", "value": {"spec": {"runPolicy": {"schedulingPolicy": {"priorityClass": "critical"}}}}},
		{"op": "replace", "path": "/workload/podSpecPaths", "value": []},
	]))
	some v in policy.deny with input as inp with data.kueue_guard.config as config
	v.field == "spec.runPolicy.schedulingPolicy.priorityClass"
}
