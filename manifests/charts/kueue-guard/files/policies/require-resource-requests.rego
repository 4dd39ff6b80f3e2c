# METADATA
# title: Resource requests required
# description: >-
#   Denies a new queued workload with a container that declares neither a request nor
#   a limit for cpu or memory (data.kueue_guard.config.required_requests). Kueue
#   charges quota by requests (a limit stands in for a missing request), so such a
#   container would run on quota it never reserved. Every pod template of the object
#   is checked, wherever its kind keeps it.
# schemas:
#   - input: schema.input
# custom:
#   enforcement: deny
#   match:
#     operations: [CREATE, UPDATE]
package kueue_guard.require_resource_requests

import data.kueue_guard.lib

required := object.get(lib.settings, "required_requests", ["cpu", "memory"])

# pod_specs are [path, spec] for every pod spec in the object (kueue-guard finds
# them: input.workload.podSpecPaths): spec itself for a
# Pod, and every pod template's spec in the other kinds.
pod_specs contains [path, pod] if {
	some path in input.workload.podSpecPaths
	pod := object.get(input.object, path, null)
	is_array(pod.containers)
}

declares(c, r) if object.get(c, ["resources", "requests", r], null) != null

declares(c, r) if object.get(c, ["resources", "limits", r], null) != null

deny contains {"msg": msg, "field": field} if {
	lib.judged
	some spec in pod_specs
	[path, pod] := spec
	some i, c in pod.containers
	missing := [r | some r in required; not declares(c, r)]
	count(missing) > 0
	field := sprintf("%s.containers[%d].resources.requests", [lib.field_path(path), i])
	msg := sprintf("container %q has no %s request: Kueue charges quota by requests", [object.get(c, "name", ""), concat(" or ", missing)])
}
