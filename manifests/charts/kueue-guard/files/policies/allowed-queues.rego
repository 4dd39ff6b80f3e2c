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

# applies to a new workload, and to an update that moves it to another queue
# (as Kueue reads the queue, pod templates included): lib.label_applies, but
# reading only the queue, not the object's labels (for a label that is no
# workload field, lib.label_changed compares them all). A decision is reused
# only for requests equal in what the policies read.
applies if lib.creating == true

applies if {
	input.request.operation == "UPDATE"
	not input.oldWorkload.queueName == input.workload.queueName # not lib.same_as_before("queueName")
}

deny contains {"msg": msg, "field": lib.label_field(lib.queue_label)} if {
	applies == true
	input.namespace.annotations[annotation]
	not input.workload.queueName in allowed
	msg := sprintf(
		"LocalQueue %q is not allowed in namespace %q (allowed: %s)",
		[input.workload.queueName, input.namespace.name, listed],
	)
}
