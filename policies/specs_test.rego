package kueue_guard.specs_test

# with_specs(inp) adds input.workload.podSpecs and jobSpecs (and oldWorkload's)
# as kueue-guard builds them: the values of the object at podSpecPaths and
# jobSpecPaths, in order.
with_specs(inp) := object.union(inp, {"workload": specs(inp.workload, inp.object)}) if {
	not is_object(object.get(inp, "oldWorkload", null))
}

with_specs(inp) := object.union(inp, {
	"workload": specs(inp.workload, inp.object),
	"oldWorkload": specs(inp.oldWorkload, inp.oldObject),
}) if {
	is_object(inp.oldWorkload)
}

specs(wl, obj) := object.union(wl, {
	"podSpecs": [object.get(obj, p, null) | some p in object.get(wl, "podSpecPaths", [])],
	"jobSpecs": [object.get(obj, p, null) | some p in object.get(wl, "jobSpecPaths", [])],
})
