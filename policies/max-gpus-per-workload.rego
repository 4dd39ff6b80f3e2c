# METADATA
# title: Maximum GPUs per workload
# description: >-
#   Denies a new workload (or an update that grows one) whose admission unit requests more GPUs in total than its
#   namespace allows in one workload: the whole workload at full size (every pod of every pod set), one pod of a
#   Deployment (Kueue admits it pod by pod), one group of a LeaderWorkerSet. The limit is the namespace label
#   kueue-guard.io/max-gpus, else data.kueue_guard.config.max_gpus.namespaces[namespace],
#   else data.kueue_guard.config.max_gpus.default; without any of them there is no
#   limit. GPU resources are data.kueue_guard.config.gpu_resources: names, or prefixes ending in "*"
#   (nvidia.com/mig-* counts every MIG profile); by default the common vendors' devices and MIG profiles.
#   A workload that requests no GPU is never denied, whatever the limit.
# schemas:
#   - input: schema.input
# custom:
#   enforcement: deny
#   match:
#     operations: [CREATE, UPDATE]
#     updates: [grows]
package kueue_guard.max_gpus_per_workload

import data.kueue_guard.lib

max_gpus_label := "kueue-guard.io/max-gpus"

# gpus are one admission unit's GPU resources with their amounts, at full size:
# Kueue may admit a partially admissible job whole when quota allows. A
# resource is counted once, however many entries of gpu_resources cover it.
# A GPU resource is one lib.gpu_resources names, or one a prefix it lists
# covers: a built-in and a comprehension, as a function call per resource would
# cost more than the match itself.
gpus := object.union(
	object.filter(input.workload.unitRequests, lib.gpu_resources),
	{r: n | some r, n in input.workload.unitRequests; strings.any_prefix_match(r, lib.gpu_prefixes)},
)

requested := sum([n | some n in gpus])

# kinds are the GPU resources the workload requests, for the message.
kinds := concat(", ", sort([r | some r, n in gpus; n > 0]))

# what names the unit in messages.
what := "requests" if input.workload.admissionUnit == "workload"

what := "each pod requests" if input.workload.admissionUnit == "pod"

what := "each group requests" if input.workload.admissionUnit == "group"

# The key is written out (max_gpus_label): a key from a rule reads every
# label of the namespace, and a decision is reused only for equal inputs.
label_value := input.namespace.labels["kueue-guard.io/max-gpus"]

valid_label if regex.match(`^[0-9]+$`, label_value)

limits := object.get(lib.settings, "max_gpus", {})

limit := to_number(label_value) if {
	valid_label == true
} else := n if {
	n := limits.namespaces[input.namespace.name]
} else := n if {
	n := limits["default"]
}

deny contains msg if {
	lib.judged == true
	requested > 0 # most workloads: the limit is never looked up
	requested > limit
	msg := sprintf(
		"%s %v GPUs (%s) but namespace %q allows at most %v per workload",
		[what, requested, kinds, input.namespace.name, limit],
	)
}

warn contains msg if {
	lib.judged == true
	input.namespace.labels["kueue-guard.io/max-gpus"] # label_value, without a rule's evaluation on every request
	not valid_label
	msg := sprintf("namespace label %s=%q is not a whole number and is ignored", [max_gpus_label, label_value])
}
