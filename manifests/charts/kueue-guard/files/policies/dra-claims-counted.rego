# METADATA
# title: Device claims Kueue counts
# description: >-
#   Denies a queued workload whose DRA devices (GPUs claimed through
#   resource.k8s.io) Kueue would not count. Kueue 0.19 charges devices only from
#   the ResourceClaimTemplates a workload's pods name, by the device classes its
#   deviceClassMappings list: a workload that names a ResourceClaim
#   (resourceClaims[].resourceClaimName) is never admitted while Kueue's DRA
#   integration is on, and charged nothing while it is off; and a template's
#   devices are not counted with the integration off, or for a device class
#   without a mapping (input.workload.claimsUncounted says why). Devices no one
#   counts pass every quota policy. Set uncounted_claims to warn in data.yaml to
#   only warn about templates. A new workload is judged, a growing update, and
#   any update that brings the problem in.
# schemas:
#   - input: schema.input
# custom:
#   enforcement: deny
#   match:
#     operations: [CREATE, UPDATE]
#     updates: [grows, specs]
package kueue_guard.dra_claims_counted

import data.kueue_guard.lib

# named(wl) are [path, index, claim] for every pod spec's claim that names
# a ResourceClaim rather than a template.
named(wl) := {[path, i, claim.resourceClaimName] |
	some s, path in wl.podSpecPaths
	some i, claim in object.get(wl.podSpecs[s], "resourceClaims", [])
	is_string(claim.resourceClaimName)
}

# The old object's named claims (lib.introduced).
old_named := named(input.oldWorkload) if is_object(input.oldWorkload)

else := set()

deny contains {"msg": msg, "field": field} if {
	some [path, i, claim] in named(input.workload)
	lib.introduced([path, i, claim], old_named)
	field := sprintf("%s.resourceClaims[%d].resourceClaimName", [lib.field_path(path), i])
	msg := sprintf(
		"the pods use ResourceClaim %q by name: Kueue counts DRA devices only from ResourceClaimTemplates, and admits no workload that names a claim (or charges it to no queue with its DRA integration off); use resourceClaimTemplateName",
		[claim],
	)
}

# uncounted_claims (data.yaml) is deny or warn: what a workload whose templates'
# devices Kueue would not count gets.
uncounted_action := object.get(lib.settings, "uncounted_claims", "deny")

old_uncounted := {input.oldWorkload.claimsUncounted} if is_object(input.oldWorkload)

else := set()

uncounted := msg if {
	reason := input.workload.claimsUncounted
	reason != ""
	lib.introduced(reason, old_uncounted)
	msg := sprintf(
		"Kueue would not count the devices the pods claim through ResourceClaimTemplates, so no quota would hold them: %s",
		[reason],
	)
}

deny contains uncounted if uncounted_action != "warn"

warn contains uncounted if uncounted_action == "warn"
