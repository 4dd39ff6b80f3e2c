package kueue_guard.dra_claims_counted_test

import data.kueue_guard.dra_claims_counted as policy

pod(claims) := {"containers": [{"name": "main"}], "resourceClaims": claims}

job_input(op, claims, old_claims) := {
	"request": {"operation": op, "kind": {"group": "batch", "version": "v1", "kind": "Job"}},
	"object": {"spec": {"template": {"spec": pod(claims)}}},
	"oldObject": old_object(old_claims),
	"workload": {"grows": false, "podSpecPaths": [["spec", "template", "spec"]]},
	"oldWorkload": old_workload(old_claims),
}

old_object(null) := null

old_object(c) := {"spec": {"template": {"spec": pod(c)}}} if c != null

old_workload(null) := null

old_workload(c) := {"podSpecPaths": [["spec", "template", "spec"]]} if c != null

from_template := {"name": "gpu", "resourceClaimTemplateName": "eight-gpus"}

by_name := {"name": "gpu", "resourceClaimName": "shared-gpus"}

test_a_claim_template_passes if {
	count(policy.deny) == 0 with input as job_input("CREATE", [from_template], null)
}

test_no_claims_pass if {
	count(policy.deny) == 0 with input as job_input("CREATE", [], null)
}

test_a_named_claim_is_denied_with_the_fix if {
	policy.deny == {{
		"msg": `the pods use ResourceClaim "shared-gpus" by name: Kueue charges DRA devices only from ResourceClaimTemplates, so these would be charged to no queue; use resourceClaimTemplateName`,
		"field": "spec.template.spec.resourceClaims[1].resourceClaimName",
	}} with input as job_input("CREATE", [from_template, by_name], null)
}

test_an_update_keeping_an_old_named_claim_passes if {
	count(policy.deny) == 0 with input as job_input("UPDATE", [by_name], [by_name])
}

test_an_update_bringing_a_named_claim_in_is_denied if {
	count(policy.deny) == 1 with input as job_input("UPDATE", [by_name], [from_template])
}

test_a_growing_update_judges_old_claims_too if {
	inp := json.patch(job_input("UPDATE", [by_name], [by_name]), [{"op": "replace", "path": "/workload/grows", "value": true}])
	count(policy.deny) == 1 with input as inp
}
