package kueue_guard.require_resource_requests_test

import data.kueue_guard.require_resource_requests as policy

import data.kueue_guard.specs_test.with_specs

complete := {"name": "main", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}

job(containers) := paths({
	"request": {"operation": "CREATE", "kind": {"group": "batch", "version": "v1", "kind": "Job"}},
	"object": {"spec": {"parallelism": 2, "template": {"spec": {"containers": containers}}}},
})

# paths adds input.workload.podSpecPaths as kueue-guard computes them: every map
# under spec whose containers is a list.
paths(inp) := with_specs(object.union(inp, {"workload": {"podSpecPaths": [array.concat(["spec"], p) |
	walk(inp.object.spec, [p, v])
	is_array(v.containers)
]}}))

test_complete_requests_pass if {
	count(policy.deny) == 0 with input as job([complete])
}

test_limits_stand_in_for_requests if {
	c := {"name": "main", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}
	count(policy.deny) == 0 with input as job([c])
}

test_missing_memory_is_denied_with_its_field if {
	c := {"name": "side", "resources": {"requests": {"cpu": "1"}}}
	policy.deny == {{
		"msg": `container "side" has no memory request: Kueue charges quota by requests`,
		"field": "spec.template.spec.containers[1].resources.requests",
	}} with input as job([complete, c])
}

test_no_resources_at_all if {
	some v in policy.deny with input as job([{"name": "bare"}])
	v.msg == `container "bare" has no cpu or memory request: Kueue charges quota by requests`
}

test_pod_spec_of_a_pod if {
	inp := {
		"request": {"operation": "CREATE", "kind": {"group": "", "version": "v1", "kind": "Pod"}},
		"object": {"spec": {"containers": [{"name": "p"}]}},
	}
	some v in policy.deny with input as paths(inp)
	v.field == "spec.containers[0].resources.requests"
}

test_every_template_of_a_jobset if {
	inp := {
		"request": {"operation": "CREATE", "kind": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "kind": "JobSet"}},
		"object": {"spec": {"replicatedJobs": [
			{"name": "driver", "template": {"spec": {"template": {"spec": {"containers": [complete]}}}}},
			{"name": "workers", "template": {"spec": {"template": {"spec": {"containers": [{"name": "w"}]}}}}},
		]}},
	}
	fields := {v.field | some v in policy.deny} with input as paths(inp)
	fields == {"spec.replicatedJobs[1].template.spec.template.spec.containers[0].resources.requests"}
}

test_mpijob_role_keys if {
	inp := {
		"request": {"operation": "CREATE", "kind": {"group": "kubeflow.org", "version": "v2beta1", "kind": "MPIJob"}},
		"object": {"spec": {"mpiReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [{"name": "w"}]}}}}}},
	}
	fields := {v.field | some v in policy.deny} with input as paths(inp)
	fields == {"spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources.requests"}
}

test_required_resources_from_data if {
	c := {"name": "main", "resources": {"requests": {"cpu": "1"}}}
	count(policy.deny) == 0 with input as job([c]) with data.kueue_guard.config as {"required_requests": ["cpu"]}
}

test_updates_are_not_judged if {
	inp := json.patch(job([{"name": "bare"}]), [{"op": "replace", "path": "/request/operation", "value": "UPDATE"}])
	count(policy.deny) == 0 with input as paths(inp)
}

# Dropping requests on an update lowers what Kueue charges (a BestEffort pod is
# charged nothing) while the pods may use more: the update grows the workload
# in kueue-guard's sense and is judged.
test_update_dropping_requests_is_judged if {
	base := json.patch(job([{"name": "main"}]), [{"op": "replace", "path": "/request/operation", "value": "UPDATE"}])
	count(policy.deny) > 0 with input as paths(object.union(base, {"workload": {"grows": true}}))
}

pod_with(spec) := paths({
	"request": {"operation": "CREATE", "kind": {"group": "", "version": "v1", "kind": "Pod"}},
	"object": {"spec": spec},
})

test_init_containers_and_sidecars_are_judged if {
	sidecar := {"name": "proxy", "restartPolicy": "Always"}
	denials := policy.deny with input as pod_with({"containers": [complete], "initContainers": [{"name": "setup"}, sidecar]})
	{v.msg | some v in denials} == {
		`init container "setup" has no cpu or memory request: Kueue charges quota by requests`,
		`sidecar "proxy" has no cpu or memory request: Kueue charges quota by requests`,
	}
	{v.field | some v in denials} == {"spec.initContainers[0].resources.requests", "spec.initContainers[1].resources.requests"}
}

test_a_zero_request_says_nothing if {
	zero := {"name": "main", "resources": {"requests": {"cpu": "0", "memory": "1Gi"}}}
	policy.deny == {{
		"msg": `container "main" requests 0 cpu: Kueue charges quota by requests, so it would run on quota it never reserved; request more than 0`,
		"field": "spec.template.spec.containers[0].resources.requests.cpu",
	}} with input as job([zero])
}

test_a_zero_limit_standing_in_for_the_request_is_zero_too if {
	c := {"name": "main", "resources": {"limits": {"cpu": "0m", "memory": "1Gi"}}}
	count(policy.deny) == 1 with input as job([c])
}

test_minimum_requests_from_config if {
	small := {"name": "main", "resources": {"requests": {"cpu": "5m", "memory": "1Gi"}}}
	enough := {"name": "main", "resources": {"requests": {"cpu": "10m", "memory": "1Gi"}}}
	conf := {"minimum_requests": {"cpu": "10m"}}
	some v in policy.deny with input as job([small]) with data.kueue_guard.config as conf
	v.msg == `container "main" requests 5m cpu: Kueue charges quota by requests, so it would run on quota it never reserved; request at least 10m`
	count(policy.deny) == 0 with input as job([enough]) with data.kueue_guard.config as conf
}

test_numbers_as_quantities if {
	c := {"name": "main", "resources": {"requests": {"cpu": 2, "memory": 0}}}
	{v.field | some v in policy.deny} == {"spec.template.spec.containers[0].resources.requests.memory"} with input as job([c])
}

# Nano and micro quantities are valid Kubernetes quantities that units.parse
# does not know: the policy reads them by their value, never fails on them.
test_nano_and_micro_quantities if {
	tiny := {"name": "main", "resources": {"requests": {"cpu": "1n", "memory": "1Gi"}}}
	count(policy.deny) == 0 with input as job([tiny])
	zero := {"name": "main", "resources": {"requests": {"cpu": "0n", "memory": "0u"}}}
	count(policy.deny) == 2 with input as job([zero])
	conf := {"minimum_requests": {"cpu": "10m"}}
	below := {"name": "main", "resources": {"requests": {"cpu": "9999999n", "memory": "1Gi"}}}
	some v in policy.deny with input as job([below]) with data.kueue_guard.config as conf
	v.msg == `container "main" requests 9999999n cpu: Kueue charges quota by requests, so it would run on quota it never reserved; request at least 10m`
	enough := {"name": "main", "resources": {"requests": {"cpu": "10000u", "memory": "1Gi"}}}
	count(policy.deny) == 0 with input as job([enough]) with data.kueue_guard.config as conf
	count(policy.deny) == 0 with input as job([enough]) with data.kueue_guard.config as {"minimum_requests": {"cpu": "10000000n"}}
}
