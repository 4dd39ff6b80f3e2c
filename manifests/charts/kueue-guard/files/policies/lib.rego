# METADATA
# title: Shared helpers of the shipped policies
# description: >-
#   Not a policy (it defines neither deny nor warn): where labels live, when a policy
#   applies, field paths, settings from data.kueue_guard.config and quantity formatting.
package kueue_guard.lib

# Kueue's labels.
queue_label := "kueue.x-k8s.io/queue-name"

priority_label := "kueue.x-k8s.io/priority-class"

max_exec_time_label := "kueue.x-k8s.io/max-exec-time-seconds"

# settings is data.kueue_guard.config (data.yaml), or {} without data.
default settings := {}

settings := data.kueue_guard.config

# gpu_resources are the extended resources counted as GPUs.
gpu_resources := object.get(settings, "gpu_resources", ["nvidia.com/gpu"])

# creating is true for a new workload. The shipped policies judge a workload when it
# is created: denying UPDATEs of existing workloads would also block Kueue's own
# updates (suspend, node selectors) of workloads admitted before a policy changed.
creating if input.request.operation == "CREATE"

# owned is true for an object a controller created (a CronJob's Job): its owner
# was judged when it was created, and the request's user is the controller.
owned if {
	some ref in object.get(input.object, ["metadata", "ownerReferences"], [])
	ref.controller == true
}

# labels_path is where the object keeps the labels Kueue reads: a CronJob's job
# template, the metadata of every other kind.
labels_path := ["spec", "jobTemplate", "metadata", "labels"] if {
	input.request.kind.kind == "CronJob"
} else := ["metadata", "labels"]

labels := object.get(input.object, labels_path, {})

old_labels := object.get(input.oldObject, labels_path, {}) if is_object(input.oldObject)

# label_changed(key) is true for an UPDATE that sets, changes or removes the label.
label_changed(key) if {
	input.request.operation == "UPDATE"
	object.get(old_labels, key, "") != object.get(labels, key, "")
}

# label_applies(key): a policy about a label judges new workloads and updates of
# that label (a suspended Job may be moved to another queue).
label_applies(key) if creating

label_applies(key) if label_changed(key)

# label_field(key) is the field path of a label, e.g.
# metadata.labels["kueue.x-k8s.io/queue-name"].
label_field(key) := sprintf("%s[%q]", [concat(".", labels_path), key])

# field_path(path) renders a walk() path: ["spec", "containers", 0] →
# spec.containers[0].
field_path(path) := concat("", [seg | some i, p in path; seg := segment(i, p)])

segment(_, p) := sprintf("[%v]", [p]) if is_number(p)

segment(0, p) := p if is_string(p)

# Keys after the first get a dot, or brackets when they are not identifiers.
segment(i, p) := sprintf(".%s", [p]) if {
	i > 0
	is_string(p)
	identifier(p)
}

segment(i, p) := sprintf("[%q]", [p]) if {
	i > 0
	is_string(p)
	not identifier(p)
}

identifier(s) if regex.match(`^[A-Za-z_][A-Za-z0-9_]*$`, s)

# byte_resource(r) is true for resources measured in bytes.
byte_resource(r) if r in {"memory", "ephemeral-storage", "storage"}

byte_resource(r) if startswith(r, "hugepages-")

gi := 1073741824

mi := 1048576

# amount(r, v) renders a quantity of resource r for messages: whole Gi or Mi for
# byte resources, the number otherwise.
amount(r, v) := sprintf("%vGi", [v / gi]) if {
	byte_resource(r)
	whole(v)
	v >= gi
	v % gi == 0
} else := sprintf("%vMi", [v / mi]) if {
	byte_resource(r)
	whole(v)
	v >= mi
	v % mi == 0
} else := sprintf("%v", [v])

whole(v) if floor(v) == v
