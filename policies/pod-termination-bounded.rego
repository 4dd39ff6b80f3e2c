# METADATA
# title: Pods end with their quota
# description: >-
#   Denies a queued workload whose pods could keep running on quota Kueue no longer
#   charges for them. Kueue charges a Job parallelism × requests, but with the Job
#   controller's default pod replacement (TerminatingOrFailed) a replacement starts
#   as soon as a pod begins terminating: pods that ignore SIGTERM, deleted in rounds,
#   run many times the charge. So every Job spec the object writes (a Job, a CronJob's
#   job template, a JobSet's replicated jobs, the Jobs an AppWrapper embeds) must set
#   podReplacementPolicy Failed, which a podFailurePolicy implies. And a pod Kueue
#   stops (preemption, kueue.x-k8s.io/max-exec-time-seconds) keeps its devices for
#   its terminationGracePeriodSeconds, which has no bound of its own: every pod
#   template's must be at most
#   data.kueue_guard.config.max_termination_grace_period_seconds (300 by default).
#   A new workload is judged, a growing update, and any update that brings either in.
# schemas:
#   - input: schema.input
# custom:
#   enforcement: deny
#   match:
#     operations: [CREATE, UPDATE]
#     updates: [grows, specs]
package kueue_guard.pod_termination_bounded

import data.kueue_guard.lib

max_grace := object.get(lib.settings, "max_termination_grace_period_seconds", 300)

# The API server's default for a pod's terminationGracePeriodSeconds.
default_grace := 30

# replacing(wl) are the paths of the Job specs of a workload that replace a
# pod before it has ended.
replacing(wl) := {path |
	some i, path in wl.jobSpecPaths
	not replaces_ended_pods(wl.jobSpecs[i])
}

replaces_ended_pods(spec) if spec.podReplacementPolicy == "Failed"

# A podFailurePolicy makes Failed the default, and the only value the API server
# accepts with it.
replaces_ended_pods(spec) if {
	is_object(spec.podFailurePolicy)
	not spec.podReplacementPolicy
}

# lingering(wl) are [path, seconds] for the pod specs of a workload whose
# grace period is over the bound.
lingering(wl) := {[path, secs] |
	some i, path in wl.podSpecPaths
	secs := object.get(wl.podSpecs[i], "terminationGracePeriodSeconds", default_grace)
	is_number(secs)
	secs > max_grace
}

# The old object's problems (lib.introduced).
old_replacing := replacing(input.oldWorkload) if is_object(input.oldWorkload)

else := set()

old_lingering := lingering(input.oldWorkload) if is_object(input.oldWorkload)

else := set()

deny contains {"msg": msg, "field": field} if {
	some i, path in input.workload.jobSpecPaths
	path in replacing(input.workload)
	lib.introduced(path, old_replacing)
	field := sprintf("%s.podReplacementPolicy", [lib.field_path(path)])
	policy := object.get(input.workload.jobSpecs[i], "podReplacementPolicy", "TerminatingOrFailed")
	msg := sprintf(
		"podReplacementPolicy is %s: a replacement pod starts while the pod it replaces is still terminating, so both run on quota Kueue charged once; set podReplacementPolicy: Failed",
		[policy],
	)
}

deny contains {"msg": msg, "field": field} if {
	some [path, secs] in lingering(input.workload)
	lib.introduced([path, secs], old_lingering)
	field := sprintf("%s.terminationGracePeriodSeconds", [lib.field_path(path)])
	msg := sprintf(
		"terminationGracePeriodSeconds is %v: a pod Kueue stops would keep its resources that long after Kueue gives its quota to another workload; set it to %v or less",
		[secs, max_grace],
	)
}
