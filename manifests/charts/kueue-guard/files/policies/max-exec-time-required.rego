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

warn contains {"msg": msg, "field": lib.label_field(lib.max_exec_time_label)} if {
	lib.creating == true
	not lib.max_exec_time_labeled == true
	msg := sprintf("no %s label: an overrun would hold its quota", [lib.max_exec_time_label])
}
