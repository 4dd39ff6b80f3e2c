# METADATA
# title: Maximum execution time recommended
# description: >-
#   Warns about a new workload without the kueue.x-k8s.io/max-exec-time-seconds
#   label: without it Kueue never stops a workload that overruns, and it keeps its
#   quota until it ends.
# schemas:
#   - input: schema.input
# custom:
#   enforcement: warn
#   match:
#     operations: [CREATE]
package kueue_guard.max_exec_time_required

import data.kueue_guard.lib

# labeled: the object (a CronJob's job template) has the label, as
# lib.labels[lib.max_exec_time_label] says. The key is written out: lib.labels
# is read whole, and a decision is reused only for requests equal in what the
# policies read, so one label of a workload's own (a sweep's trial, say)
# would make every workload a new input.
labeled if {
	input.request.kind.kind == "CronJob"
	input.object.spec.jobTemplate.metadata.labels["kueue.x-k8s.io/max-exec-time-seconds"]
}

labeled if {
	not input.request.kind.kind == "CronJob"
	input.object.metadata.labels["kueue.x-k8s.io/max-exec-time-seconds"]
}

warn contains {"msg": msg, "field": lib.label_field(lib.max_exec_time_label)} if {
	lib.creating == true
	not labeled == true
	msg := sprintf("no %s label: an overrun would hold its quota", [lib.max_exec_time_label])
}
