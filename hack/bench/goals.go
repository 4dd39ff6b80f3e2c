package main

import (
	"fmt"
	"time"
)

// The targets of the performance issue, checked by every run.
const (
	validateRPSGoal     = 0.4  // × floor rps at the matrix concurrency
	validateP99Goal     = 3.0  // × floor p99
	mutateRPSGoal       = 0.6  // × floor rps
	cpuPerRequestGoal   = 0.15 // ms of server CPU per validated request
	allocsGoal          = 600  // allocations per request
	idleRSSGoalMiB      = 60
	scaleRSSGoalMiB     = 150
	allocsBenchmarkName = "BenchmarkHandler/validate/Job/CREATE/labeled"
	// policyScaleGoal bounds the cost of 1,000 policies of which a handful
	// match the request, as a multiple of one policy's.
	policyScaleGoal     = 1.3
	onePolicyBenchmark  = "BenchmarkEvaluateNPolicies/1"
	manyPolicyBenchmark = "BenchmarkEvaluateNPoliciesMatching/1000"
	// auditP99Goal bounds admission's p99 while the audit runs, as a
	// multiple of its p99 between runs.
	auditP99Goal = 1.5
	// streamOPAGoal is the validating webhook's least throughput on each
	// distinct-workload stream, as a multiple of OPA's on the same stream.
	streamOPAGoal = 3.0
	// openP99Goal bounds the validating webhook's p99 at every open-loop
	// point, as a multiple of the floor's at the same share of capacity.
	openP99Goal = 3.0
)

// goal is one target and how the run fared against it.
type goal struct {
	Target, Goal, Measured, Verdict string
}

// evaluateTargets checks the run against the targets. The rows are Job CREATE
// at the matrix concurrency; OPA is compared on every queued body.
func evaluateTargets(r *results, c int) []goal {
	validate := r.closed(epValidate, "Job CREATE +queue", c)
	var goals []goal
	goals = append(goals,
		floorRatioGoal(r, validate, "/validate-workloads, shipped policies: throughput", validateRPSGoal, true),
		floorRatioGoal(r, validate, "/validate-workloads, shipped policies: p99 latency", validateP99Goal, false),
		cpuGoal(validate),
		allocsGoalRow(r),
		policyScaleGoalRow(r),
		floorRatioGoal(r, r.closed(epMutate, "Job CREATE", c), "/mutate-workloads with a patch: throughput", mutateRPSGoal, true),
		floorRatioGoal(r, r.closed(epMutate, "Job CREATE +queue", c), "/mutate-workloads with nothing to do: throughput", mutateRPSGoal, true),
		idleRSSGoal(r),
	)
	for _, b := range r.Bodies {
		if guard, opa := r.closed(epValidate, b.Name, c), r.closed(epOPA, b.Name, c); guard != nil && opa != nil {
			goals = append(goals, opaGoal(guard, opa))
		}
	}
	goals = append(goals, streamGoals(r, c)...)
	goals = append(goals, openGoal(r))
	if a := r.Audit; a != nil && len(a.Runs) > 0 {
		goals = append(goals, auditGoals(a)...)
	}
	if r.Scale != nil {
		s := r.Scale
		goals = append(goals, goal{
			Target: fmt.Sprintf("RSS with %d Namespaces, %d LocalQueues, %d ClusterQueues, %d Deployments",
				s.Counts.Namespaces, s.Counts.LocalQueues, s.Counts.ClusterQueues, s.Counts.Deployments),
			Goal: fmt.Sprintf("≤ %d MiB", scaleRSSGoalMiB), Measured: fmt.Sprintf("%.1f MiB", mib(s.RSS)),
			Verdict: atMost(mib(s.RSS), scaleRSSGoalMiB),
		})
	}
	return goals
}

// floorRatioGoal checks a result's throughput (at least multiple × the floor's)
// or, when throughput is false, its p99 latency (at most multiple × the floor's).
func floorRatioGoal(r *results, x *closedResult, target string, multiple float64, throughput bool) goal {
	g := goal{Target: target, Goal: fmt.Sprintf("≤ %.1f× floor", multiple), Measured: "not measured", Verdict: "not measured"}
	if throughput {
		g.Goal = fmt.Sprintf("≥ %.1f× floor", multiple)
	}
	if x == nil {
		return g
	}
	f := r.floorOf(x)
	if f == nil || f.RPS <= 0 || f.Latency.P99 <= 0 {
		return g
	}
	g.Target = fmt.Sprintf("%s (%s, C=%d)", target, x.body.Name, x.c)
	if throughput {
		v := x.RPS / f.RPS
		g.Measured = fmt.Sprintf("%.2f× (%.0f vs %.0f rps)", v, x.RPS, f.RPS)
		g.Verdict = atLeast(v, multiple)
		return g
	}
	v := float64(x.Latency.P99) / float64(f.Latency.P99)
	g.Measured = fmt.Sprintf("%.2f× (%s vs %s ms)", v, msf(x.Latency.P99), msf(f.Latency.P99))
	g.Verdict = atMost(v, multiple)
	return g
}

// streamGoals check the validating webhook on each distinct-workload stream:
// against the floor sent the same stream, and against OPA sent its inputs.
func streamGoals(r *results, c int) []goal {
	var goals []goal
	for _, name := range streamNames() {
		v := r.closed(epValidate, name, c)
		goals = append(goals,
			floorRatioGoal(r, v, "/validate-workloads, distinct workloads: throughput", validateRPSGoal, true),
			floorRatioGoal(r, v, "/validate-workloads, distinct workloads: p99 latency", validateP99Goal, false),
			opaRPSGoal(v, r.closed(epOPA, name, c)))
	}
	return goals
}

// opaRPSGoal checks that the validating webhook's throughput is at least
// streamOPAGoal × OPA's on the same requests.
func opaRPSGoal(guard, opa *closedResult) goal {
	g := goal{Target: "/validate-workloads, distinct workloads: throughput against OPA's",
		Goal: fmt.Sprintf("≥ %.1f× OPA's rps", streamOPAGoal), Measured: "not measured", Verdict: "not measured"}
	if guard == nil || opa == nil || opa.RPS <= 0 {
		return g
	}
	v := guard.RPS / opa.RPS
	g.Target += fmt.Sprintf(" (%s, C=%d)", guard.body.Name, guard.c)
	g.Measured, g.Verdict = fmt.Sprintf("%.2f× (%.0f vs %.0f rps)", v, guard.RPS, opa.RPS), atLeast(v, streamOPAGoal)
	return g
}

// openGoal checks the validating webhook's worst open-loop point: every point's
// p99 is within openP99Goal × the floor's when the worst one is.
func openGoal(r *results) goal {
	g := goal{Target: "/validate-workloads p99 at every open-loop point",
		Goal:     fmt.Sprintf("≤ %.1f× floor's at the same share of capacity", openP99Goal),
		Measured: "not measured", Verdict: "not measured"}
	x, v := worstOpen(r)
	if x == nil {
		return g
	}
	g.Target += fmt.Sprintf(" (%s)", x.body.Name)
	g.Measured = "worst " + describeOpenRatio(r, x, v)
	g.Verdict = atMost(v, openP99Goal)
	return g
}

// worstOpen is the validating webhook's open-loop point whose p99 is the largest
// multiple of the floor's at the same share of capacity, and that multiple.
func worstOpen(r *results) (worst *openResult, ratio float64) {
	for i := range r.Open {
		x := &r.Open[i]
		f := r.floorOpen(x)
		if x.ep.Name != epValidate || f == nil || f.Latency.P99 <= 0 {
			continue
		}
		if v := float64(x.Latency.P99) / float64(f.Latency.P99); worst == nil || v > ratio {
			worst, ratio = x, v
		}
	}
	return worst, ratio
}

// describeOpenRatio renders an open-loop point's p99 against the floor's:
// "1.52× the floor's p99 at 75 % of capacity (0.812 vs 0.534 ms)".
func describeOpenRatio(r *results, x *openResult, v float64) string {
	f := r.floorOpen(x)
	return fmt.Sprintf("%.2f× the floor's p99 at %.0f %% of capacity (%s vs %s ms)",
		v, 100*x.fraction, msf(x.Latency.P99), msf(f.Latency.P99))
}

// auditGoals check the audit figure: every run within its interval, and
// admission's p99 during runs within auditP99Goal of its p99 between them.
func auditGoals(a *auditResult) []goal {
	longest := a.longestRun()
	v := float64(a.During.P99) / float64(max(1, a.Between.P99))
	return []goal{{
		Target: fmt.Sprintf("an audit run over %d workloads, longest of %d runs", a.Workloads, len(a.Runs)),
		Goal:   fmt.Sprintf("≤ audit.interval (%v)", a.Interval), Measured: longest.Round(time.Millisecond).String(),
		Verdict: atMost(longest.Seconds(), a.Interval.Seconds()),
	}, {
		Target:   fmt.Sprintf("/validate-workloads p99 while the audit runs (Job CREATE +queue, open loop %.0f/s)", a.Rate),
		Goal:     fmt.Sprintf("≤ %.1f× p99 between runs", auditP99Goal),
		Measured: fmt.Sprintf("%.2f× (%s vs %s ms)", v, msf(a.During.P99), msf(a.Between.P99)),
		Verdict:  atMost(v, auditP99Goal),
	}}
}

func cpuGoal(x *closedResult) goal {
	g := goal{Target: "server CPU per request, /validate-workloads", Goal: fmt.Sprintf("≤ %.2f ms", cpuPerRequestGoal),
		Measured: "not measured", Verdict: "not measured"}
	if x == nil || x.Requests == 0 {
		return g
	}
	v := float64(x.CPUPerRequest) / float64(time.Millisecond)
	g.Target += fmt.Sprintf(" (%s, C=%d)", x.body.Name, x.c)
	g.Measured, g.Verdict = fmt.Sprintf("%.3f ms", v), atMost(v, cpuPerRequestGoal)
	return g
}

func allocsGoalRow(r *results) goal {
	g := goal{Target: "allocations per request (" + allocsBenchmarkName + ")", Goal: fmt.Sprintf("≤ %d", allocsGoal),
		Measured: "not measured", Verdict: "not measured"}
	if b := r.goBenchmark(allocsBenchmarkName); b != nil {
		if v, ok := b.Metrics["allocs/op"]; ok {
			g.Measured, g.Verdict = fmt.Sprintf("%.0f", v), atMost(v, allocsGoal)
		}
	}
	return g
}

// policyScaleGoalRow compares the policy step's time with 1,000 policies, 3 of
// them matching the request by custom.match, to its time with one policy.
func policyScaleGoalRow(r *results) goal {
	g := goal{Target: "1 → 1,000 policies, 3 matching (" + manyPolicyBenchmark + " ÷ " + onePolicyBenchmark + ", ns/op)",
		Goal: fmt.Sprintf("≤ %.1f×", policyScaleGoal), Measured: "not measured", Verdict: "not measured"}
	one, many := r.goBenchmark(onePolicyBenchmark), r.goBenchmark(manyPolicyBenchmark)
	if one == nil || many == nil || one.Metrics["ns/op"] == 0 {
		return g
	}
	v := many.Metrics["ns/op"] / one.Metrics["ns/op"]
	g.Measured = fmt.Sprintf("%.2f× (%.0f vs %.0f ns%s)", v, many.Metrics["ns/op"], one.Metrics["ns/op"], mediansOf(one, many))
	g.Verdict = atMost(v, policyScaleGoal)
	return g
}

// mediansOf says how many runs each figure is the median of, when more than one.
func mediansOf(one, many *goBenchmark) string {
	if one.Runs <= 1 || one.Runs != many.Runs {
		return ""
	}
	return fmt.Sprintf(", medians of %d runs", one.Runs)
}

func idleRSSGoal(r *results) goal {
	g := goal{Target: "kueue-guard RSS, idle", Goal: fmt.Sprintf("≤ %d MiB", idleRSSGoalMiB), Measured: "not measured", Verdict: "not measured"}
	for _, m := range r.Memory {
		if m.Name == "kueue-guard" {
			v := mib(m.Idle.RSS)
			g.Measured, g.Verdict = fmt.Sprintf("%.1f MiB", v), atMost(v, idleRSSGoalMiB)
		}
	}
	return g
}

// opaGoal checks that kueue-guard's validating webhook is faster than OPA on the
// same policies and input: more throughput and a lower p99.
func opaGoal(guard, opa *closedResult) goal {
	rps := guard.RPS / opa.RPS
	p99 := float64(guard.Latency.P99) / float64(opa.Latency.P99)
	g := goal{Target: fmt.Sprintf("faster than OPA (%s, C=%d)", guard.body.Name, guard.c), Goal: "rps > OPA's, p99 < OPA's",
		Measured: fmt.Sprintf("%.2f× OPA's rps, %.2f× its p99", rps, p99)}
	switch {
	case rps > 1 && p99 < 1:
		g.Verdict = "met"
	case rps <= 1 && p99 >= 1:
		g.Verdict = fmt.Sprintf("missed: throughput %.0f%% below OPA's, p99 %.0f%% above", 100*(1-rps), 100*(p99-1))
	case rps <= 1:
		g.Verdict = fmt.Sprintf("missed: throughput %.0f%% below OPA's", 100*(1-rps))
	default:
		g.Verdict = fmt.Sprintf("missed: p99 %.0f%% above OPA's", 100*(p99-1))
	}
	return g
}

// atLeast and atMost are a verdict: "met", or by how much it was missed.
func atLeast(v, goal float64) string {
	if v >= goal {
		return "met"
	}
	return fmt.Sprintf("missed by %.0f%%", 100*(goal-v)/goal)
}

func atMost(v, goal float64) string {
	if v <= goal {
		return "met"
	}
	return fmt.Sprintf("missed by %.0f%%", 100*(v-goal)/goal)
}

func targetsTable(goals []goal) *table {
	t := newTable("target", "goal", "measured", "verdict")
	for _, g := range goals {
		t.add(g.Target, g.Goal, g.Measured, g.Verdict)
	}
	return t
}
