# METADATA
# title: Workload fits its ClusterQueue
# description: >-
#   Denies a new workload, or an update that grows one, that can never be admitted by its ClusterQueue: even at
#   the fewest pods Kueue may admit it with (partial admission's minCount; one pod of a Deployment, one group of
#   a LeaderWorkerSet), its request of a resource exceeds what every flavor of the queue together could
#   provide with full borrowing (input.clusterQueue.resources, from capacity: each flavor's quota plus what its
#   cohort tree may lend it, within borrowing and lending limits, as Kueue's scheduler computes it), or one
#   pod set needs more than the largest flavor. Warns when the
#   workload needs more than is free now, or requests a resource the queue has no
#   quota for. (A stopped queue is reported by kueue-guard's built-in queue checks.)
# schemas:
#   - input: schema.input
# custom:
#   enforcement: deny
#   match:
#     operations: [CREATE, UPDATE]
#     updates: [grows]
package kueue_guard.fits_cluster_queue

import data.kueue_guard.lib

# cq is an alias the compiler replaces by the reference: a rule holding the
# queue would cost each of its many uses a lookup of the rule's value.
import input.clusterQueue as cq

cohort := cq.cohort

# excluded resources are ignored, as Kueue's resources.excludeResourcePrefixes.
excluded_prefixes := object.get(lib.settings, "excluded_resource_prefixes", [])

# requested(r): the workload requests r, and Kueue does not ignore it. (One
# built-in over the prefixes: a rule iterating them would cost every request
# a function call per resource and prefix.)
requested(r) if {
	input.workload.totalRequests[r] > 0
	not strings.any_prefix_match(r, excluded_prefixes)
}

# The rules below look each resource up in input.clusterQueue.resources (the
# queue's totals of a resource, summed over its flavors by kueue-guard) where
# they need it, inline and the comparison that fails most often first: a set
# of resources, or a function call per resource, costs every request its
# allocations (BenchmarkShippedPolicyEvaluation). A resource's max, largestFlavor
# and free are numbers together, or null together when its capacity is
# unknown (Kueue would not admit to it).

at_least(r) := "" if {
	input.workload.minUnitRequests[r] == input.workload.totalRequests[r]
} else := sprintf(" (at least %s at the fewest pods Kueue may admit it with)", [lib.amount(r, input.workload.minUnitRequests[r])])

# unit_pods(ps) are the pods of a pod set in the least Kueue admits at once.
unit_pods(ps) := 1 if input.workload.admissionUnit == "pod"

unit_pods(ps) := ps.minCount if {
	input.workload.admissionUnit == "workload"
	ps.minCount != null
}

unit_pods(ps) := ps.count if {
	input.workload.admissionUnit == "workload"
	ps.minCount == null
}

explain(r) := sprintf("(nominal %s, and what cohort %q can lend it)", [lib.amount(r, nominal(r)), cohort]) if {
	count(cq.resources[r].flavors) == 1
	cohort != null
} else := sprintf("(nominal %s; no cohort to borrow from)", [lib.amount(r, nominal(r))]) if {
	count(cq.resources[r].flavors) == 1
} else := sprintf("(across flavors %s)", [concat(", ", cq.resources[r].flavors)])

nominal(r) := q.nominal if {
	some q in cq.quotas
	q.resource == r
}

deny contains msg if {
	lib.judged == true
	some r, need in input.workload.minUnitRequests
	t := cq.resources[r]
	t.max != null
	need > t.max # even the fewest pods Kueue may admit need more than the queue's capacity
	count(t.flavors) > 0
	requested(r)
	total := input.workload.totalRequests[r]
	msg := sprintf(
		"requests %s %s%s but ClusterQueue %q can provide at most %s %s",
		[lib.amount(r, total), r, at_least(r), cq.name, lib.amount(r, t.max), explain(r)],
	)
}

# Kueue gives each pod set one flavor, so a pod set must fit the largest one.
deny contains msg if {
	lib.judged == true
	some r, t in cq.resources
	count(t.flavors) > 1 # the first checked: most queues have one flavor of a resource
	t.max != null
	not input.workload.minUnitRequests[r] > t.max # denied above
	requested(r)
	largest := t.largestFlavor
	some ps in input.workload.podSets
	need := unit_pods(ps) * object.get(ps.requests, r, 0)
	need > largest
	msg := sprintf(
		"pod set %q requests %s %s but no flavor of ClusterQueue %q provides more than %s",
		[ps.name, lib.amount(r, need), r, cq.name, lib.amount(r, largest)],
	)
}

warn contains msg if {
	lib.judged == true
	some r, need in input.workload.minUnitRequests
	t := cq.resources[r]
	t.max != null
	need > t.free
	need <= t.max # else denied above
	count(t.flavors) > 0
	requested(r)
	msg := sprintf(
		"requests %s %s but ClusterQueue %q has %s free now: it may wait for quota",
		[lib.amount(r, need), r, cq.name, lib.amount(r, t.free)],
	)
}

warn contains msg if {
	lib.judged == true
	is_object(cq)
	some r, _ in input.workload.totalRequests
	not cq.resources[r].flavors[0] # no quota for r
	requested(r)
	msg := sprintf("requests %s, for which ClusterQueue %q has no quota: Kueue cannot admit it", [r, cq.name])
}
