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

# The rules judge every regular and init container (a sidecar is an init
# container with restartPolicy: Always), pod[list][j], of every pod spec of the
# object: pod is input.workload.podSpecs[i], found at
# input.workload.podSpecPaths[i] (for a Pod, its spec; for the other kinds,
# every pod template's). Each binds the container where it enumerates it:
# kueue-guard follows the variable and builds only what the rule reads of it
# (never its environment or command). Fields and names are rendered only for a
# denial: this runs on every request.
field_of(i, list, j) := sprintf("%s.%s[%d].resources.requests", [lib.field_path(input.workload.podSpecPaths[i]), list, j])

fix(r) := sprintf("request at least %v", [minimum[r]]) if minimum[r]

else := "request more than 0"

kind_of("containers", _) := "container"

kind_of("initContainers", c) := "sidecar" if c.restartPolicy == "Always"

else := "init container"

# declared(c, r) is the container's request of r, else its limit (Kueue
# takes a limit as the request); undefined when it declares neither.
declared(c, r) := q if {
	q := c.resources.requests[r]
	q != null
} else := q if {
	q := c.resources.limits[r]
	q != null
}

# too_small(q, r) is true for a request of zero or below, or below r's
# minimum. One chain of else, the common case first: a request written with
# a nonzero first digit ("500m", "2Gi") under no minimum is decided by one
# body, where separate rules cost every container and resource a call of
# each (and of lib.at_most_zero's two). The minimum is looked up before the
# quantity is parsed: most settings name none.
too_small(q, r) := false if {
	is_string(q)
	strings.any_prefix_match(q, lib.nonzero_digits)
	not minimum[r]
} else if {
	lib.at_most_zero(q)
} else if {
	m := minimum[r]
	lib.quantity(q) < lib.quantity(m)
} else := false

deny contains {"msg": msg, "field": field_of(i, list, j)} if {
	lib.judged == true
	some i, pod in input.workload.podSpecs
	is_array(pod.containers)
	some list in ["containers", "initContainers"]
	some j, c in pod[list]

	# The missing resources are listed only once one is missing.
	some r in required
	not declared(c, r)
	missing := [m | some m in required; not declared(c, m)]
	msg := sprintf("%s %q has no %s request: Kueue charges quota by requests", [kind_of(list, c), object.get(c, "name", ""), concat(" or ", missing)])
}

deny contains {"msg": msg, "field": sprintf("%s.%s", [field_of(i, list, j), r])} if {
	lib.judged == true
	some i, pod in input.workload.podSpecs
	is_array(pod.containers)
	some list in ["containers", "initContainers"]
	some j, c in pod[list]
	some r in required
	q := declared(c, r)
	too_small(q, r) == true
	msg := sprintf(
		"%s %q requests %v %s: Kueue charges quota by requests, so it would run on quota it never reserved; %s",
		[kind_of(list, c), object.get(c, "name", ""), q, r, fix(r)],
	)
}
