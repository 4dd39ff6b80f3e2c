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
