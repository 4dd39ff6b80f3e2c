package kueue_guard.max_gpus_per_workload_test

import data.kueue_guard.max_gpus_per_workload as policy

config := {"gpu_resources": ["nvidia.com/gpu", "amd.com/gpu"], "max_gpus": {"default": 8, "namespaces": {"big": 32}}}

request(ns, labels, total) := {
	"request": {"operation": "CREATE", "kind": {"group": "batch", "version": "v1", "kind": "Job"}, "namespace": ns},
	"namespace": {"name": ns, "labels": labels, "annotations": {}},
	"workload": {"totalRequests": total, "unitRequests": total, "minUnitRequests": total, "admissionUnit": "workload", "podSets": []},
	"object": {},
}

test_default_limit_denies_above if {
	msgs := policy.deny with input as request("ml", {}, {"nvidia.com/gpu": 10, "cpu": 4})
		with data.kueue_guard.config as config
	msgs == {`requests 10 GPUs (nvidia.com/gpu) but namespace "ml" allows at most 8 per workload`}
}

# Kueue admits a Deployment pod by pod: 10 pods of 1 GPU are ten 1-GPU workloads.
test_a_deployment_is_judged_per_pod if {
	inp := object.union(request("ml", {}, {"nvidia.com/gpu": 10}), {"workload": {"admissionUnit": "pod", "unitRequests": {"nvidia.com/gpu": 1}}})
	count(policy.deny) == 0 with input as inp with data.kueue_guard.config as config
	big := object.union(inp, {"workload": {"unitRequests": {"nvidia.com/gpu": 9}}})
	policy.deny == {`each pod requests 9 GPUs (nvidia.com/gpu) but namespace "ml" allows at most 8 per workload`} with input as big
		with data.kueue_guard.config as config
}

# A partially admissible job may still be admitted whole: its full size is capped.
test_partial_admission_is_capped_at_full_size if {
	inp := object.union(request("ml", {}, {"nvidia.com/gpu": 16}), {"workload": {"minUnitRequests": {"nvidia.com/gpu": 4}}})
	count(policy.deny) == 1 with input as inp with data.kueue_guard.config as config
}

test_default_limit_allows_at_limit if {
	count(policy.deny) == 0 with input as request("ml", {}, {"nvidia.com/gpu": 8})
		with data.kueue_guard.config as config
}

test_gpu_kinds_add_up if {
	some msg in policy.deny with input as request("ml", {}, {"nvidia.com/gpu": 6, "amd.com/gpu": 4})
		with data.kueue_guard.config as config
	contains(msg, "requests 10 GPUs (amd.com/gpu, nvidia.com/gpu)")
}

test_namespace_data_overrides_default if {
	count(policy.deny) == 0 with input as request("big", {}, {"nvidia.com/gpu": 16})
		with data.kueue_guard.config as config
}

test_namespace_label_wins if {
	msgs := policy.deny with input as request("big", {"kueue-guard.io/max-gpus": "2"}, {"nvidia.com/gpu": 4})
		with data.kueue_guard.config as config
	msgs == {`requests 4 GPUs (nvidia.com/gpu) but namespace "big" allows at most 2 per workload`}
}

test_invalid_label_is_ignored_with_a_warning if {
	inp := request("ml", {"kueue-guard.io/max-gpus": "lots"}, {"nvidia.com/gpu": 4})
	count(policy.deny) == 0 with input as inp with data.kueue_guard.config as config
	count(policy.warn) == 1 with input as inp with data.kueue_guard.config as config
}

test_no_limit_without_label_or_data if {
	count(policy.deny) == 0 with input as request("ml", {}, {"nvidia.com/gpu": 64})
		with data.kueue_guard.config as {}
}

test_no_gpus_no_denial if {
	count(policy.deny) == 0 with input as request("ml", {"kueue-guard.io/max-gpus": "0"}, {"cpu": 64})
		with data.kueue_guard.config as config
}

test_updates_are_not_judged if {
	inp := json.patch(request("ml", {}, {"nvidia.com/gpu": 10}), [{"op": "replace", "path": "/request/operation", "value": "UPDATE"}])
	count(policy.deny) == 0 with input as inp with data.kueue_guard.config as config
}

# A queued Job admitted at 1 x 4 GPUs that is patched to 4 pods grows: judged.
test_growing_update_is_judged if {
	inp := object.union(request("ml", {}, {"nvidia.com/gpu": 16}), {
		"request": {"operation": "UPDATE"},
		"workload": {"grows": true},
		"oldWorkload": {"totalRequests": {"nvidia.com/gpu": 4}, "podSets": []},
	})
	count(policy.deny) == 1 with input as inp with data.kueue_guard.config as config
}

test_shrinking_update_is_not_judged if {
	inp := object.union(request("ml", {}, {"nvidia.com/gpu": 10}), {
		"request": {"operation": "UPDATE"},
		"workload": {"grows": false},
		"oldWorkload": {"totalRequests": {"nvidia.com/gpu": 16}, "podSets": []},
	})
	count(policy.deny) == 0 with input as inp with data.kueue_guard.config as config
}

test_a_prefix_counts_every_mig_profile if {
	cfg := object.union(config, {"gpu_resources": ["nvidia.com/gpu", "nvidia.com/mig-*"]})
	msgs := policy.deny with input as request("ml", {}, {"nvidia.com/mig-1g.5gb": 7, "nvidia.com/mig-3g.20gb": 2, "nvidia.com/migrate": 5})
		with data.kueue_guard.config as cfg
	msgs == {`requests 9 GPUs (nvidia.com/mig-1g.5gb, nvidia.com/mig-3g.20gb) but namespace "ml" allows at most 8 per workload`}
}

test_a_resource_two_entries_cover_counts_once if {
	cfg := object.union(config, {"gpu_resources": ["nvidia.com/gpu", "nvidia.com/*"]})
	count(policy.deny) == 0 with input as request("ml", {}, {"nvidia.com/gpu": 8}) with data.kueue_guard.config as cfg
}

test_the_defaults_cover_the_common_vendors if {
	some msg in policy.deny with input as request("ml", {}, {"gpu.intel.com/xe": 3, "habana.ai/gaudi": 3, "google.com/tpu": 3})
		with data.kueue_guard.config as {"max_gpus": {"default": 8}}
	contains(msg, "requests 9 GPUs (google.com/tpu, gpu.intel.com/xe, habana.ai/gaudi)")
}

test_no_gpus_below_a_limit_below_zero if {
	cfg := object.union(config, {"max_gpus": {"default": -1}})
	count(policy.deny) == 0 with input as request("ml", {}, {"cpu": 4}) with data.kueue_guard.config as cfg
	count(policy.deny) == 1 with input as request("ml", {}, {"nvidia.com/gpu": 1}) with data.kueue_guard.config as cfg
}

# The label is read by its key written out: it must be max_gpus_label.
test_label_key_is_the_constant if {
	count(policy.deny) == 1 with input as request("big", {policy.max_gpus_label: "2"}, {"nvidia.com/gpu": 4})
	count(policy.warn) == 1 with input as request("ml", {policy.max_gpus_label: "lots"}, {"cpu": 1})
}
