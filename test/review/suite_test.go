// Package review tests `kueue-guard review` end to end, offline: the review of a
// corpus of realistic manifests in every output format against golden files,
// the SARIF output against the SARIF 2.1.0 JSON schema, and the JUnit output
// parsed back. (The equivalence with the webhook is proven in ./equivalence,
// against a real API server.)
//
// Run `go test ./test/review/ -update` to rewrite the golden files, then review
// the diff: it is the user-visible change.
package review

import (
	"flag"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

func TestReview(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Review end-to-end Suite")
}
