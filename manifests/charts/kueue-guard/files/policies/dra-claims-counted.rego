# METADATA
# title: Device claims Kueue counts
# description: >-
#   Denies a queued workload whose pods reference a ResourceClaim by name
#   (resourceClaims[].resourceClaimName). Kueue 0.19 charges a workload's DRA
#   devices (GPUs claimed through resource.k8s.io) only from the
#   ResourceClaimTemplates its pods name: the devices of a named claim are charged
#   to no ClusterQueue and counted by no policy, so a tenant could run any number
#   of GPUs on a queue capped far below. Name a ResourceClaimTemplate instead.
#   A new workload is judged, a growing update, and any update that brings a named
#   claim in.
# schemas:
#   - input: schema.input
# custom:
#   enforcement: deny
#   match:
#     operations: [CREATE, UPDATE]
package kueue_guard.dra_claims_counted

import data.kueue_guard.lib

# named(obj, wl) are [path, index, claim] for every pod spec's claim that names
# a ResourceClaim rather than a template.
named(obj, wl) := {[path, i, claim.resourceClaimName] |
	some path in wl.podSpecPaths
	some i, claim in object.get(obj, array.concat(path, ["resourceClaims"]), [])
	is_string(claim.resourceClaimName)
}

# The old object's named claims (lib.introduced).
old_named := named(input.oldObject, input.oldWorkload) if is_object(input.oldWorkload)

else := set()

deny contains {"msg": msg, "field": field} if {
	some [path, i, claim] in named(input.object, input.workload)
	lib.introduced([path, i, claim], old_named)
	field := sprintf("%s.resourceClaims[%d].resourceClaimName", [lib.field_path(path), i])
	msg := sprintf(
		"the pods use ResourceClaim %q by name: Kueue charges DRA devices only from ResourceClaimTemplates, so these would be charged to no queue; use resourceClaimTemplateName",
		[claim],
	)
}
