package main

import (
	"github.com/google/go-cmp/cmp"

	. "github.com/onsi/ginkgo/v2"
)

var _ = Describe("the package benchmarks", func() {
	// Two packages' output of go test -count=3: one benchmark run three
	// times, another twice, and a same-named one in the other package.
	const out = `goos: linux
pkg: example.com/a
BenchmarkOne/1-2   	   100	     300 ns/op	  10 B/op	  2 allocs/op
BenchmarkOne/1-2   	   100	     100 ns/op	  10 B/op	  2 allocs/op
BenchmarkOne/1-2   	   100	     200 ns/op	  12 B/op	  2 allocs/op
BenchmarkTwo-2     	   100	      50 ns/op	   0 B/op	  0 allocs/op
BenchmarkTwo-2     	   100	      70 ns/op	   0 B/op	  0 allocs/op
PASS
pkg: example.com/b
BenchmarkOne/1-2   	   100	       9 ns/op
ok  	example.com/b	1.0s
`

	It("gives each benchmark the median of its runs, in the order they first ran", func() {
		want := []goBenchmark{
			{Package: "example.com/a", Name: "BenchmarkOne/1", Runs: 3,
				Metrics: map[string]float64{"ns/op": 200, "B/op": 10, "allocs/op": 2}},
			{Package: "example.com/a", Name: "BenchmarkTwo", Runs: 2,
				Metrics: map[string]float64{"ns/op": 60, "B/op": 0, "allocs/op": 0}},
			{Package: "example.com/b", Name: "BenchmarkOne/1", Runs: 1, Metrics: map[string]float64{"ns/op": 9}},
		}
		if d := cmp.Diff(want, medians(parseGoBenchmarks(out))); d != "" {
			Fail(d)
		}
	})

	DescribeTable("a pattern selects one benchmark at each level of its name",
		func(name, want string) {
			if d := cmp.Diff(want, exactBenchPattern(name)); d != "" {
				Fail(d)
			}
		},
		Entry("a top-level benchmark", "BenchmarkWorkload", "^BenchmarkWorkload$"),
		Entry("a sub-benchmark: /1 and not /10 or /100", "BenchmarkEvaluateNPolicies/1",
			"^BenchmarkEvaluateNPolicies$/^1$"),
		Entry("characters a regexp would read", "BenchmarkShippedPolicy/max-gpus+x.y",
			`^BenchmarkShippedPolicy$/^max-gpus\+x\.y$`),
	)
})
