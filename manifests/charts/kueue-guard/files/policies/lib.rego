# METADATA
# title: Shared helpers of the shipped policies
# description: >-
#   Not a policy (it defines neither deny nor warn): where labels live, when a policy
#   applies, field paths, settings from data.kueue_guard.config and quantity formatting.
# schemas:
#   - input: schema.input
package kueue_guard.lib

# Kueue's labels.
queue_label := "kueue.x-k8s.io/queue-name"

priority_label := "kueue.x-k8s.io/priority-class"

max_exec_time_label := "kueue.x-k8s.io/max-exec-time-seconds"

# settings is data.kueue_guard.config (data.yaml), or {} without data.
default settings := {}

settings := data.kueue_guard.config

# gpu_resources are the extended resources counted as GPUs: names, or prefixes
# ending in "*" (nvidia.com/mig-* for every MIG profile).
gpu_resources := object.get(settings, "gpu_resources", default_gpu_resources)

default_gpu_resources := [
	"nvidia.com/gpu", "nvidia.com/mig-*", "amd.com/gpu", "gpu.intel.com/*",
	"habana.ai/gaudi", "aws.amazon.com/neuron", "google.com/tpu",
]

# gpu_prefixes are the prefixes gpu_resources names ("nvidia.com/mig-*"), once
# per evaluation: one built-in call per resource then matches them all.
gpu_prefixes := [trim_suffix(p, "*") | some p in gpu_resources; endswith(p, "*")]

# quantity(q) is the value of a Kubernetes quantity as an object keeps it (a
# container's requests as written: "500m", "1Gi", 2), in base units.
# units.parse knows every suffix but n and u, which the API server accepts and
# keeps in a custom resource ("1n"): a policy that failed on them would be
# skipped under policies.onError: allow. One chain of else: a call stops at
# the form that matches rather than trying every one.
quantity(q) := q if {
	is_number(q)
} else := units.parse(trim_suffix(q, "n")) / 1000000000 if {
	is_string(q)
	endswith(q, "n")
} else := units.parse(trim_suffix(q, "u")) / 1000000 if {
	is_string(q)
	endswith(q, "u")
} else := units.parse(q) if is_string(q)

# at_most_zero(q) is true for a quantity of zero or below. A string that
# begins with a nonzero digit is above zero whatever follows (its mantissa is
# at least 1): only the others are parsed. A parse per container and resource
# was a quarter of require-resource-requests' allocations.
at_most_zero(q) if {
	is_number(q)
	q <= 0
}

at_most_zero(q) if {
	is_string(q)
	not strings.any_prefix_match(q, nonzero_digits)
	quantity(q) <= 0
}

nonzero_digits := ["1", "2", "3", "4", "5", "6", "7", "8", "9"]

# creating is true for a new workload. Conditions compare a boolean rule with
# true (judged == true) rather than name it alone: OPA evaluates a bare
# reference through a variable it generates, four allocations more per use than
# the comparison (BenchmarkShippedPolicyEvaluation: 688 allocations without, 609
# with).
creating if input.request.operation == "CREATE"

# judged is true for a request a quota policy must judge: a new workload, or an
# update that asks Kueue for more than before (input.workload.grows: a pod set
# with more pods, a larger request, a request removed). Updates that do not grow
# the workload (Kueue suspending or unsuspending it, node selectors, partial
# admission) are not judged: a policy added after a workload was admitted must
# not block the updates that run it. kueue-guard itself never sends a policy a
# trusted controller's update that does not grow the workload.
judged if creating == true

judged if input.workload.grows == true

# introduced(p, old) is true for a problem p a policy reports: on a request it
# judges, or on any update whose old object did not have it (old is the set of
# the old object's problems). A problem the old object already had stays out
# of the updates that run an admitted workload.
introduced(_, _) if judged == true

introduced(p, old) if not p in old

# owned is true for an object a trusted controller created on behalf of a
# controller owner (the CronJob controller creating a CronJob's Job): the owner
# was judged when it was created, and the request's user is the controller.
# Anyone else's owner references are fields they wrote, and prove nothing.
owned if {
	input.request.trustedController == true
	some ref in input.object.metadata.ownerReferences
	ref.controller == true
}

# labels_path is where the object keeps the labels Kueue reads: a CronJob's job
# template, the metadata of every other kind.
labels_path := ["spec", "jobTemplate", "metadata", "labels"] if {
	input.request.kind.kind == "CronJob"
} else := ["metadata", "labels"]

# labels and old_labels read the object by fixed references, not object.get
# with labels_path: kueue-guard builds only the parts of the input policies
# name, and reuses a decision for objects that differ only where none reads.
labels := template_labels if {
	input.request.kind.kind == "CronJob"
} else := own_labels

# An UPDATE always has its old object (input.oldObject is not read whole here,
# for the same reason).
old_labels := old_template_labels if {
	input.request.operation == "UPDATE"
	input.request.kind.kind == "CronJob"
} else := old_own_labels if input.request.operation == "UPDATE"

default template_labels := {}

template_labels := input.object.spec.jobTemplate.metadata.labels

default own_labels := {}

own_labels := input.object.metadata.labels

default old_template_labels := {}

old_template_labels := input.oldObject.spec.jobTemplate.metadata.labels

default old_own_labels := {}

old_own_labels := input.oldObject.metadata.labels

# effective_fields maps Kueue's labels to the input.workload fields that hold
# them as Kueue reads them (pod templates included).
effective_fields := {queue_label: "queueName", priority_label: "priorityClass"}

# label_changed(key) is true for an UPDATE that sets, changes or removes the label.
label_changed(key) if {
	input.request.operation == "UPDATE"
	f := effective_fields[key]
	not same_as_before(f)
}

label_changed(key) if {
	input.request.operation == "UPDATE"
	not effective_fields[key]
	object.get(old_labels, key, "") != object.get(labels, key, "")
}

# Each field by name: a computed key would make every policy read the whole
# workload (kueue-guard builds only the input its policies read).
same_as_before("queueName") if same_queue == true

same_as_before("priorityClass") if input.oldWorkload.priorityClass == input.workload.priorityClass

# same_queue: the update keeps the queue (a rule of its own: calling
# same_as_before reads every field it compares).
same_queue if input.oldWorkload.queueName == input.workload.queueName

# label_applies(key): a policy about a label judges new workloads and updates of
# that label (a suspended Job may be moved to another queue).
label_applies(key) if creating == true

label_applies(key) if label_changed(key)

# queue_applies: label_applies(queue_label), reading only what it needs of
# the input: a new workload, or an update that moves it to another queue (as
# Kueue reads the queue, pod templates included). label_applies takes any key,
# so it may compare every label of the object and the old object; a decision
# is reused only for requests equal in what the policies read, and a label of
# a workload's own (a sweep's trial number) would make every workload new.
queue_applies if creating == true

queue_applies if {
	input.request.operation == "UPDATE"
	not same_queue == true
}

# max_exec_time_labeled: the object carries max_exec_time_label where Kueue
# reads it (a CronJob's job template, else the object itself), as
# labels[max_exec_time_label] says; the key is written out, for the same
# reason: labels is read whole.
max_exec_time_labeled if {
	input.request.kind.kind == "CronJob"
	input.object.spec.jobTemplate.metadata.labels["kueue.x-k8s.io/max-exec-time-seconds"]
}

max_exec_time_labeled if {
	not input.request.kind.kind == "CronJob"
	input.object.metadata.labels["kueue.x-k8s.io/max-exec-time-seconds"]
}

# label_field(key) is the field path of a label in the form the API server
# prints field paths (apimachinery's field.Path), e.g.
# metadata.labels[kueue.x-k8s.io/queue-name].
label_field(key) := sprintf("%s[%s]", [concat(".", labels_path), key])

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

segment(i, p) := sprintf("[%s]", [p]) if {
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
