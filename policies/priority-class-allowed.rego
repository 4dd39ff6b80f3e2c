# METADATA
# title: Restricted WorkloadPriorityClasses
# description: >-
#   Denies a workload whose priority comes from a class listed in
#   data.kueue_guard.config.priority_classes unless the requesting user, one of its
#   groups, or the namespace is allowed there. Classes not listed are open to all.
#   The class is the one Kueue takes the workload's priority from: its
#   WorkloadPriorityClass label, or else a Kubernetes PriorityClass (such as
#   system-cluster-critical, listed the same way): an MPIJob's or Kubeflow job's
#   runPolicy.schedulingPolicy.priorityClass, or the pods' priorityClassName.
#   Objects created by a controller (a CronJob's Jobs) are skipped: their owner was
#   judged, and the request's user is the controller.
# schemas:
#   - input: schema.input
# custom:
#   enforcement: deny
#   match:
#     operations: [CREATE, UPDATE]
#     updates: [priority]
package kueue_guard.priority_class_allowed

import data.kueue_guard.lib

restricted := object.get(lib.settings, "priority_classes", {})

permitted(rule) if input.request.userInfo.username in object.get(rule, "users", [])

permitted(rule) if {
	some g in input.request.userInfo.groups
	g in object.get(rule, "groups", [])
}

permitted(rule) if input.request.namespace in object.get(rule, "namespaces", [])

# who(rule) describes who may use a class.
who(rule) := concat("; ", parts) if {
	parts := [s |
		some k in ["users", "groups", "namespaces"]
		vs := object.get(rule, k, [])
		count(vs) > 0
		s := sprintf("%s %s", [k, concat(", ", vs)])
	]
	count(parts) > 0
} else := "nobody"

# applies: a new workload, or an update that changes the class or its source
# (a suspended Job's label, say).
applies if lib.creating == true

applies if {
	input.request.operation == "UPDATE"
	input.oldWorkload.priority != input.workload.priority
}

pod_source := "scheduling.k8s.io/priorityclass"

# named(priority) is how a message names the class, by its source.
named(priority) := sprintf("PriorityClass %q (which Kueue takes as the workload's priority without a %s label)", [priority.class, lib.priority_label]) if {
	priority.source == pod_source
} else := sprintf("WorkloadPriorityClass %q", [priority.class])

# field(priority) is where the class is set: the label, the first pod template
# that names it, or else an MPIJob's or Kubeflow job's scheduling policy.
field(priority) := lib.label_field(lib.priority_label) if {
	priority.source != pod_source
} else := f if {
	paths := [p | some i, p in input.workload.podSpecPaths; object.get(input.workload.podSpecs[i], "priorityClassName", "") == priority.class]
	f := sprintf("%s.priorityClassName", [lib.field_path(paths[0])])
} else := "spec.runPolicy.schedulingPolicy.priorityClass"

deny contains {"msg": msg, "field": field(priority)} if {
	applies == true
	not lib.owned == true
	priority := input.workload.priority
	rule := restricted[priority.class]
	not permitted(rule)
	msg := sprintf("%s is reserved for %s", [named(priority), who(rule)])
}
