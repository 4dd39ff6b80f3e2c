package main

import (
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
