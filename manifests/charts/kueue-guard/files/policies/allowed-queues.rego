# METADATA
# title: Allowed LocalQueues per namespace
# description: >-
#   Denies a workload whose LocalQueue is not listed in its namespace's annotation
#   kueue-guard.io/allowed-queues (comma-separated LocalQueue names), on creation and
#   when the queue label changes. Namespaces without the annotation may use any queue.
# schemas:
#   - input: schema.input
# custom:
#   enforcement: deny
#   match:
#     operations: [CREATE, UPDATE]
#     updates: [queueName]
package kueue_guard.allowed_queues

import data.kueue_guard.lib

annotation := "kueue-guard.io/allowed-queues"

allowed contains q if {
	some part in split(input.namespace.annotations[annotation], ",")
	q := trim_space(part)
	q != ""
}

listed := concat(", ", sort(allowed)) if count(allowed) > 0

else := "none"

deny contains {"msg": msg, "field": lib.label_field(lib.queue_label)} if {
	lib.queue_applies == true
	input.namespace.annotations[annotation]
	not input.workload.queueName in allowed
	msg := sprintf(
		"LocalQueue %q is not allowed in namespace %q (allowed: %s)",
		[input.workload.queueName, input.namespace.name, listed],
	)
}
