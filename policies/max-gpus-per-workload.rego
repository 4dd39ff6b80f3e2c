# METADATA
# title: Maximum GPUs per workload
# description: >-
#   Denies a new workload (or an update that grows one) that requests more GPUs in total (every pod of every pod
#   set) than its namespace allows in one workload. The limit is the namespace label
#   kueue-guard.io/max-gpus, else data.kueue_guard.config.max_gpus.namespaces[namespace],
#   else data.kueue_guard.config.max_gpus.default; without any of them there is no
#   limit. GPU resources are data.kueue_guard.config.gpu_resources.
# schemas:
#   - input: schema.input
# custom:
#   enforcement: deny
package kueue_guard.max_gpus_per_workload

import data.kueue_guard.lib

max_gpus_label := "kueue-guard.io/max-gpus"

# requested is the workload's total over every GPU resource.
requested := sum([n | some r in lib.gpu_resources; n := object.get(input.workload.totalRequests, r, 0)])

# kinds are the GPU resources the workload requests, for the message.
kinds := concat(", ", [r | some r in lib.gpu_resources; object.get(input.workload.totalRequests, r, 0) > 0])

label_value := input.namespace.labels[max_gpus_label]

valid_label if regex.match(`^[0-9]+$`, label_value)

limits := object.get(lib.settings, "max_gpus", {})

limit := to_number(label_value) if {
	valid_label
} else := n if {
	n := limits.namespaces[input.namespace.name]
} else := n if {
	n := limits["default"]
}

deny contains msg if {
	lib.judged
	requested > limit
	msg := sprintf(
		"requests %v GPUs (%s) but namespace %q allows at most %v per workload",
		[requested, kinds, input.namespace.name, limit],
	)
}

warn contains msg if {
	lib.judged
	label_value
	not valid_label
	msg := sprintf("namespace label %s=%q is not a whole number and is ignored", [max_gpus_label, label_value])
}
