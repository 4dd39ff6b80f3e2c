# METADATA
# title: Resource requests required
# description: >-
#   Denies a new queued workload with a container, init container or sidecar (a
#   restartable init container, which runs as long as the pod) that declares no
#   request, or a request of zero or below data.kueue_guard.config.minimum_requests,
#   for a resource in data.kueue_guard.config.required_requests (cpu and memory by
#   default). Kueue charges quota by requests (a limit stands in for a missing
#   request) and counts every one of these containers, so such a container would
#   run on quota it never reserved. Every pod template of the object is checked,
#   wherever its kind keeps it.
# schemas:
#   - input: schema.input
# custom:
#   enforcement: deny
#   match:
#     operations: [CREATE, UPDATE]
#     updates: [grows]
package kueue_guard.require_resource_requests

import data.kueue_guard.lib

required := object.get(lib.settings, "required_requests", ["cpu", "memory"])

# minimum is the least request each required resource may declare; a request
# must be above zero whatever it says.
minimum := object.get(lib.settings, "minimum_requests", {})

# pod_specs are [path, spec] for every pod spec in the object (kueue-guard finds
# them: input.workload.podSpecPaths and podSpecs): spec itself for a
# Pod, and every pod template's spec in the other kinds.
pod_specs contains [path, pod] if {
	some i, path in input.workload.podSpecPaths
	pod := input.workload.podSpecs[i]
	is_array(pod.containers)
}

# containers are [path, list, index, container] for the regular and init
# containers (a sidecar is an init container with restartPolicy: Always) of
# every pod spec. Fields and names are rendered only for a denial: this runs
# on every request.
containers contains [path, list, i, c] if {
	some [path, pod] in pod_specs
	some list in ["containers", "initContainers"]
	some i, c in object.get(pod, list, [])
}

field_of(path, list, i) := sprintf("%s.%s[%d].resources.requests", [lib.field_path(path), list, i])

fix(r) := sprintf("request at least %v", [minimum[r]]) if minimum[r]

else := "request more than 0"

kind_of("containers", _) := "container"

kind_of("initContainers", c) := "sidecar" if c.restartPolicy == "Always"

else := "init container"

# declared(c, r) is the request Kueue charges for r: the request, else the limit.
# declared(c, r) is the container's request of r, else its limit (Kueue
# takes a limit as the request); undefined when it declares neither.
declared(c, r) := q if {
	q := c.resources.requests[r]
	q != null
} else := q if {
	q := c.resources.limits[r]
	q != null
}

quantity(q) := q if is_number(q)

quantity(q) := units.parse(q) if is_string(q)

too_small(q, _) if quantity(q) <= 0

too_small(q, r) if quantity(q) < quantity(minimum[r])

deny contains {"msg": msg, "field": field_of(path, list, i)} if {
	lib.judged
	some [path, list, i, c] in containers
	missing := [r | some r in required; not declared(c, r)]
	count(missing) > 0
	msg := sprintf("%s %q has no %s request: Kueue charges quota by requests", [kind_of(list, c), object.get(c, "name", ""), concat(" or ", missing)])
}

deny contains {"msg": msg, "field": sprintf("%s.%s", [field_of(path, list, i), r])} if {
	lib.judged
	some [path, list, i, c] in containers
	some r in required
	q := declared(c, r)
	too_small(q, r)
	msg := sprintf(
		"%s %q requests %v %s: Kueue charges quota by requests, so it would run on quota it never reserved; %s",
		[kind_of(list, c), object.get(c, "name", ""), q, r, fix(r)],
	)
}
