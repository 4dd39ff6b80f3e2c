# METADATA
# title: Restricted WorkloadPriorityClasses
# description: >-
#   Denies a workload that uses a WorkloadPriorityClass listed in
#   data.kueue_guard.config.priority_classes unless the requesting user, one of its
#   groups, or the namespace is allowed there. Classes not listed are open to all.
#   Objects created by a controller (a CronJob's Jobs) are skipped: their owner was
#   judged, and the request's user is the controller.
# schemas:
#   - input: schema.input
# custom:
#   enforcement: deny
#   match:
#     operations: [CREATE, UPDATE]
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

deny contains {"msg": msg, "field": lib.label_field(lib.priority_label)} if {
	lib.label_applies(lib.priority_label)
	not lib.owned
	class := input.workload.priorityClass
	rule := restricted[class]
	not permitted(rule)
	msg := sprintf("WorkloadPriorityClass %q is reserved for %s", [class, who(rule)])
}
