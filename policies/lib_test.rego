package kueue_guard.lib_test

import data.kueue_guard.lib

# Every form a Kubernetes quantity is written in, as an object keeps it.
quantities := [
	["2", 2], [2, 2], ["0", 0], ["500m", 0.5], ["1.5", 1.5], ["1k", 1000], ["1Ki", 1024],
	["1Gi", 1073741824], ["1e3", 1000], ["250000u", 0.25], ["500000000n", 0.5],
	["1n", 0.000000001], ["0n", 0], ["0u", 0],
]

test_quantity_reads_every_suffix if {
	every pair in quantities {
		lib.quantity(pair[0]) == pair[1]
	}
}

test_a_value_that_is_no_quantity_is_undefined if {
	not lib.quantity(null)
	not lib.quantity({"cpu": 1})
}

# at_most_zero parses only what does not begin with a nonzero digit; it says
# what the parsed value says for every form, signs and leading zeros included.
test_at_most_zero_agrees_with_the_parsed_value if {
	forms := array.concat([p[0] | some p in quantities], [
		"-1", "-500m", "+0", "+1", "0.0", ".0", ".5", "0.5", "0e3", "1e-3",
		"0.000001", "-0", 0, -1, 0.5,
	])
	every q in forms {
		said(q) == lib.quantity(q) <= 0
	}
	lib.at_most_zero("-500m")
	not lib.at_most_zero("0.5")
}

said(q) if lib.at_most_zero(q)

else := false

test_at_most_zero_of_no_quantity_is_false if {
	not lib.at_most_zero(null)
	not lib.at_most_zero({"cpu": 0})
}

test_queue_applies_to_new_workloads_and_queue_moves if {
	lib.queue_applies with input as {"request": {"operation": "CREATE"}, "workload": {"queueName": "a"}}
	lib.queue_applies with input as {"request": {"operation": "UPDATE"}, "workload": {"queueName": "b"}, "oldWorkload": {"queueName": "a"}}
	not lib.queue_applies with input as {"request": {"operation": "UPDATE"}, "workload": {"queueName": "a"}, "oldWorkload": {"queueName": "a"}}

	# An old object that could not be summarized: judged as new.
	lib.queue_applies with input as {"request": {"operation": "UPDATE"}, "workload": {"queueName": "a"}, "oldWorkload": null}
}

test_max_exec_time_labeled_where_kueue_reads_the_label if {
	labeled := {lib.max_exec_time_label: "600"}
	lib.max_exec_time_labeled with input as {"request": {"kind": {"kind": "Job"}}, "object": {"metadata": {"labels": labeled}}}
	not lib.max_exec_time_labeled with input as {"request": {"kind": {"kind": "Job"}}, "object": {"metadata": {"labels": {"team": "a"}}}}
	cron := {"metadata": {}, "spec": {"jobTemplate": {"metadata": {"labels": labeled}}}}
	lib.max_exec_time_labeled with input as {"request": {"kind": {"kind": "CronJob"}}, "object": cron}

	# A CronJob's own labels are not its Jobs'.
	not lib.max_exec_time_labeled with input as {"request": {"kind": {"kind": "CronJob"}}, "object": {"metadata": {"labels": labeled}, "spec": {"jobTemplate": {}}}}
}
