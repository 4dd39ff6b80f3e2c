# METADATA
# title: Workload fits its ClusterQueue
# description: >-
#   Denies a new workload, or an update that grows one, that can never be admitted by its ClusterQueue: even at
#   the fewest pods Kueue may admit it with (partial admission's minCount; one pod of a Deployment, one group of
#   a LeaderWorkerSet), its request of a resource exceeds what every flavor of the queue together could
#   provide with full borrowing (input.clusterQueue.capacity: each flavor's quota plus what its cohort tree may
#   lend it, within borrowing and lending limits, as Kueue's scheduler computes it), or one
#   pod set needs more than the largest flavor. Warns when the
#   workload needs more than is free now, or requests a resource the queue has no
#   quota for. (A stopped queue is reported by kueue-guard's built-in queue checks.)
# schemas:
#   - input: schema.input
# custom:
#   enforcement: deny
#   match:
#     operations: [CREATE, UPDATE]
package kueue_guard.fits_cluster_queue

import data.kueue_guard.lib

cq := input.clusterQueue

cohort := cq.cohort

# excluded resources are ignored, as Kueue's resources.excludeResourcePrefixes.
excluded(r) if {
	some prefix in object.get(lib.settings, "excluded_resource_prefixes", [])
	startswith(r, prefix)
}

requested contains r if {
	some r, v in input.workload.totalRequests
	v > 0
	not excluded(r)
}

# flavors[r] are the queue's quotas of each requested resource. Rules keyed by
# resource, rather than functions, so that each is computed once per request.
flavors[r] := [q | some q in cq.quotas; q.resource == r] if {
	is_object(cq)
	some r in requested
}

# capacity[r][flavor] is the most a flavor can ever give this queue of r, over
# its cohort tree: computed by kueue-guard with Kueue's own scheduler code
# (input.clusterQueue.capacity), the same numbers --explain shows.
capacity[r][c.flavor] := c.max if {
	some c in cq.capacity
	r := c.resource
	r in requested
}

# capacities[r] are the flavors' capacities of r.
capacities[r] := [m | some m in caps] if some r, caps in capacity

# max_total[r] is the most the queue can ever give of r.
max_total[r] := sum(caps) if some r, caps in capacities

# free(q) is what a flavor can give now: its capacity minus the quota in use or
# reserved by its own workloads (other queues' use of the cohort is not known
# here, so this only warns).
free(q) := max([0, capacity[q.resource][q.flavor] - max([q.used, q.reserved])])

available[r] := sum([free(q) | some q in flavors[r]]) if capacities[r]

too_big contains r if {
	some r, cap in max_total
	input.workload.minUnitRequests[r] > cap
}

# at_least says, when Kueue may admit less than the whole workload, what the
# least it would admit needs.
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

explain(r) := sprintf("(nominal %s, and what cohort %q can lend it)", [lib.amount(r, q.nominal), cohort]) if {
	[q] := flavors[r]
	cohort != null
} else := sprintf("(nominal %s; no cohort to borrow from)", [lib.amount(r, q.nominal)]) if {
	[q] := flavors[r]
} else := sprintf("(across flavors %s)", [concat(", ", [q.flavor | some q in flavors[r]])])

deny contains msg if {
	lib.judged
	some r in too_big
	total := input.workload.totalRequests[r]
	msg := sprintf(
		"requests %s %s%s but ClusterQueue %q can provide at most %s %s",
		[lib.amount(r, total), r, at_least(r), cq.name, lib.amount(r, max_total[r]), explain(r)],
	)
}

# Kueue gives each pod set one flavor, so a pod set must fit the largest one.
deny contains msg if {
	lib.judged
	some r, caps in capacities
	count(caps) > 1
	not r in too_big
	largest := max(caps)
	some ps in input.workload.podSets
	need := unit_pods(ps) * object.get(ps.requests, r, 0)
	need > largest
	msg := sprintf(
		"pod set %q requests %s %s but no flavor of ClusterQueue %q provides more than %s",
		[ps.name, lib.amount(r, need), r, cq.name, lib.amount(r, largest)],
	)
}

warn contains msg if {
	lib.judged
	some r, free_now in available
	not r in too_big
	input.workload.minUnitRequests[r] > free_now
	msg := sprintf(
		"requests %s %s but ClusterQueue %q has %s free now: it may wait for quota",
		[lib.amount(r, input.workload.minUnitRequests[r]), r, cq.name, lib.amount(r, free_now)],
	)
}

warn contains msg if {
	lib.judged
	some r, qs in flavors
	count(qs) == 0
	msg := sprintf("requests %s, for which ClusterQueue %q has no quota: Kueue cannot admit it", [r, cq.name])
}
