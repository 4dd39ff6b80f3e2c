package main

import (
	"fmt"

	"github.com/google/go-cmp/cmp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("a stream's passes", func() {
	// A request of shape 101m: its requests and limits, and an update's old object.
	review := []byte(`{"cpu":"101000000n","limit":{"cpu":"101000000n"},"other":"1101000000n","old":{"cpu":"101000000n"}}`)

	It("finds every place the unique cpu request is written, and only it", func() {
		marks, err := passMarks(review, 101)
		Expect(err).NotTo(HaveOccurred())
		for _, m := range marks {
			Expect(string(review[m : m+passDigits])).To(Equal("000000"))
			Expect(string(review[m-4 : m])).To(Equal(`"101`))
		}
		Expect(marks).To(HaveLen(3))
		_, err = passMarks(review, 103)
		Expect(err).To(MatchError(ContainSubstring("no cpu request 103000000n")))
	})

	DescribeTable("each pass sends the unique shapes with its own digits",
		func(pass uint64, want string) {
			marks, err := passMarks(review, 101)
			Expect(err).NotTo(HaveOccurred())
			if d := cmp.Diff(want, string(passVariant(nil, review, marks, pass))); d != "" {
				Fail(d)
			}
		},
		Entry("the first pass as built", uint64(0), string(review)),
		Entry("the second", uint64(1),
			`{"cpu":"101000001n","limit":{"cpu":"101000001n"},"other":"1101000000n","old":{"cpu":"101000001n"}}`),
		Entry("the last one checked", uint64(maxPass),
			`{"cpu":"101999999n","limit":{"cpu":"101999999n"},"other":"1101000000n","old":{"cpu":"101999999n"}}`),
		Entry("past it, they start over", uint64(maxPass+1),
			`{"cpu":"101000001n","limit":{"cpu":"101000001n"},"other":"1101000000n","old":{"cpu":"101000001n"}}`),
	)

	It("never writes into the stream's own request", func() {
		marks, _ := passMarks(review, 101)
		before := string(review)
		buf := passVariant(nil, review, marks, 7)
		_ = passVariant(buf, review, marks, 8)
		Expect(string(review)).To(Equal(before))
	})
})

var _ = Describe("the measurement order", func() {
	It("measures each floor point, then the points compared with it, in the plan's order, closed and open loop", func() {
		eps := map[string]*endpoint{}
		for _, n := range []string{epFloor, epMutate, epValidate, epOPA} {
			eps[n] = &endpoint{Name: n}
		}
		job := &body{Name: "Job CREATE", Kind: "Job", Op: "CREATE"}
		queued := &body{Name: "Job CREATE +queue", Kind: "Job", Op: "CREATE", Queued: true}
		update := &body{Name: "Job UPDATE", Kind: "Job", Op: "UPDATE"}
		stream := &body{Name: "Job CREATE stream", Kind: "Job", Op: "CREATE", Queued: true, Stream: &stream{}}
		p := makePlan(&options{matrixConcurrency: 8, concurrency: []int{1, 8}, openFractions: []float64{0.25, 0.5, 0.75}},
			[]*endpoint{eps[epFloor], eps[epMutate], eps[epValidate], eps[epOPA]}, []*body{job, queued, update, stream})
		var got []string
		for _, i := range measurementOrder(p.closed) {
			pt := p.closed[i]
			got = append(got, fmt.Sprintf("%d %s %s", pt.c, pt.ep.Name, pt.body.Name))
		}
		want := []string{
			"8 floor Job CREATE", "8 mutate Job CREATE", "8 mutate Job CREATE +queue",
			"8 validate Job CREATE", "8 validate Job CREATE +queue", "8 opa Job CREATE +queue",
			"8 floor Job UPDATE", "8 mutate Job UPDATE", "8 validate Job UPDATE",
			"8 floor Job CREATE stream", "8 validate Job CREATE stream", "8 opa Job CREATE stream",
			"1 floor Job CREATE", "1 mutate Job CREATE", "1 mutate Job CREATE +queue",
			"1 validate Job CREATE +queue", "1 opa Job CREATE +queue",
		}
		if d := cmp.Diff(want, got); d != "" {
			Fail(d)
		}
		got = nil
		for _, i := range openMeasurementOrder(p.open) {
			op := p.open[i]
			got = append(got, fmt.Sprintf("%.2f %s %s", op.fraction, op.ep.Name, op.body.Name))
		}
		want = nil
		for _, f := range []string{"0.25", "0.50", "0.75"} {
			want = append(want, f+" floor Job CREATE", f+" mutate Job CREATE", f+" mutate Job CREATE +queue",
				f+" validate Job CREATE +queue", f+" opa Job CREATE +queue")
		}
		if d := cmp.Diff(want, got); d != "" {
			Fail(d)
		}
	})
})
