package kueue_guard.dra_claims_counted_test

import data.kueue_guard.dra_claims_counted as policy

import data.kueue_guard.specs_test.with_specs

pod(claims) := {"containers": [{"name": "main"}], "resourceClaims": claims}

job_input(op, claims, old_claims) := with_specs({
	"request": {"operation": op, "kind": {"group": "batch", "version": "v1", "kind": "Job"}},
	"object": {"spec": {"template": {"spec": pod(claims)}}},
	"oldObject": old_object(old_claims),
	"workload": {"grows": false, "podSpecPaths": [["spec", "template", "spec"]]},
	"oldWorkload": old_workload(old_claims),
})

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
		"msg": `the pods use ResourceClaim "shared-gpus" by name: Kueue counts DRA devices only from ResourceClaimTemplates, and admits no workload that names a claim (or charges it to no queue with its DRA integration off); use resourceClaimTemplateName`,
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

unmapped := "DeviceClass fpga.example.com is not mapped in DRA configuration for podset main"

uncounted_input(op, reason, old_reason) := json.patch(job_input(op, [from_template], old_claims(old_reason)), array.concat(
	[{"op": "add", "path": "/workload/claimsUncounted", "value": reason}],
	old_reason_patch(old_reason),
))

old_claims(null) := null

old_claims(r) := [from_template] if r != null

old_reason_patch(null) := []

old_reason_patch(r) := [{"op": "add", "path": "/oldWorkload/claimsUncounted", "value": r}] if r != null

test_devices_kueue_would_not_count_are_denied_with_the_reason if {
	policy.deny == {concat("", [
		"Kueue would not count the devices the pods claim through ResourceClaimTemplates, so no quota would hold them: ",
		unmapped,
	])} with input as uncounted_input("CREATE", unmapped, null)
}

test_counted_devices_pass if {
	count(policy.deny) == 0 with input as uncounted_input("CREATE", "", null)
}

test_uncounted_claims_warn_when_configured if {
	count(policy.deny) == 0 with input as uncounted_input("CREATE", unmapped, null)
		with data.kueue_guard.config.uncounted_claims as "warn"
	count(policy.warn) == 1 with input as uncounted_input("CREATE", unmapped, null)
		with data.kueue_guard.config.uncounted_claims as "warn"
}

test_an_update_keeping_the_old_reason_passes if {
	count(policy.deny) == 0 with input as uncounted_input("UPDATE", unmapped, unmapped)
}

test_an_update_bringing_uncounted_claims_in_is_denied if {
	count(policy.deny) == 1 with input as uncounted_input("UPDATE", unmapped, "")
}
