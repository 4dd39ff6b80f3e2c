package kueue_guard.pod_termination_bounded_test

import data.kueue_guard.pod_termination_bounded as policy

import data.kueue_guard.specs_test.with_specs

pod := {"containers": [{"name": "main"}]}

fixed_job := {"podReplacementPolicy": "Failed", "parallelism": 2, "template": {"spec": pod}}

job_input(op, spec, old) := with_specs({
	"request": {"operation": op, "kind": {"group": "batch", "version": "v1", "kind": "Job"}},
	"object": {"spec": spec},
	"oldObject": old_object(old),
	"workload": {"grows": false, "podSpecPaths": [["spec", "template", "spec"]], "jobSpecPaths": [["spec"]]},
	"oldWorkload": old_workload(old),
})

old_object(null) := null

old_object(old) := {"spec": old} if old != null

old_workload(null) := null

old_workload(old) := {"podSpecPaths": [["spec", "template", "spec"]], "jobSpecPaths": [["spec"]]} if old != null

create(spec) := job_input("CREATE", spec, null)

with_spec(spec, key, value) := object.union(spec, {key: value})

with_grace(spec, secs) := object.union(spec, {"template": {"spec": object.union(pod, {"terminationGracePeriodSeconds": secs})}})

test_failed_replacement_and_default_grace_pass if {
	count(policy.deny) == 0 with input as create(fixed_job)
}

test_a_pod_failure_policy_implies_failed if {
	spec := {"podFailurePolicy": {"rules": []}, "template": {"spec": pod}}
	count(policy.deny) == 0 with input as create(spec)
}

test_default_replacement_is_denied_with_the_fix if {
	spec := object.remove(fixed_job, ["podReplacementPolicy"])
	policy.deny == {{
		"msg": "podReplacementPolicy is TerminatingOrFailed: a replacement pod starts while the pod it replaces is still terminating, so both run on quota Kueue charged once; set podReplacementPolicy: Failed",
		"field": "spec.podReplacementPolicy",
	}} with input as create(spec)
}

test_explicit_terminating_or_failed_is_denied if {
	some v in policy.deny with input as create(with_spec(fixed_job, "podReplacementPolicy", "TerminatingOrFailed"))
	v.field == "spec.podReplacementPolicy"
}

test_a_week_long_grace_period_is_denied_with_the_bound if {
	policy.deny == {{
		"msg": "terminationGracePeriodSeconds is 604800: a pod Kueue stops would keep its resources that long after Kueue gives its quota to another workload; set it to 300 or less",
		"field": "spec.template.spec.terminationGracePeriodSeconds",
	}} with input as create(with_grace(fixed_job, 604800))
}

test_the_bound_itself_passes if {
	count(policy.deny) == 0 with input as create(with_grace(fixed_job, 300))
}

test_the_bound_comes_from_data if {
	some v in policy.deny with input as create(with_grace(fixed_job, 120))
		with data.kueue_guard.config as {"max_termination_grace_period_seconds": 60}
	contains(v.msg, "set it to 60 or less")
}

test_every_replicated_job_of_a_jobset if {
	inp := {
		"request": {"operation": "CREATE", "kind": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "kind": "JobSet"}},
		"object": {"spec": {"replicatedJobs": [{"template": {"spec": fixed_job}}, {"template": {"spec": {"template": {"spec": pod}}}}]}},
		"workload": {"grows": false, "podSpecPaths": [], "jobSpecPaths": [
			["spec", "replicatedJobs", 0, "template", "spec"],
			["spec", "replicatedJobs", 1, "template", "spec"],
		]},
	}
	{v.field | some v in policy.deny} == {"spec.replicatedJobs[1].template.spec.podReplacementPolicy"} with input as with_specs(inp)
}

test_a_deployment_is_judged_on_grace_only if {
	inp := {
		"request": {"operation": "CREATE", "kind": {"group": "apps", "version": "v1", "kind": "Deployment"}},
		"object": {"spec": {"template": {"spec": object.union(pod, {"terminationGracePeriodSeconds": 3600})}}},
		"workload": {"grows": false, "podSpecPaths": [["spec", "template", "spec"]], "jobSpecPaths": []},
	}
	{v.field | some v in policy.deny} == {"spec.template.spec.terminationGracePeriodSeconds"} with input as with_specs(inp)
}

test_an_update_that_keeps_an_old_problem_passes if {
	old := object.remove(fixed_job, ["podReplacementPolicy"])
	count(policy.deny) == 0 with input as job_input("UPDATE", with_spec(old, "suspend", false), old)
}

test_an_update_that_brings_a_problem_in_is_denied if {
	some v in policy.deny with input as job_input("UPDATE", with_grace(fixed_job, 86400), fixed_job)
	v.field == "spec.template.spec.terminationGracePeriodSeconds"
}

test_an_update_that_lengthens_a_long_grace_is_denied if {
	old := with_grace(fixed_job, 3600)
	some v in policy.deny with input as job_input("UPDATE", with_grace(fixed_job, 86400), old)
	contains(v.msg, "86400")
}

test_a_growing_update_judges_old_problems_too if {
	old := object.remove(fixed_job, ["podReplacementPolicy"])
	inp := json.patch(job_input("UPDATE", with_spec(old, "parallelism", 8), old), [{"op": "replace", "path": "/workload/grows", "value": true}])
	some v in policy.deny with input as with_specs(inp)
	v.field == "spec.podReplacementPolicy"
}

test_an_unreadable_old_object_judges_as_new if {
	old := object.remove(fixed_job, ["podReplacementPolicy"])
	inp := json.patch(job_input("UPDATE", old, old), [{"op": "replace", "path": "/oldWorkload", "value": null}])
	count(policy.deny) == 1 with input as with_specs(inp)
}
