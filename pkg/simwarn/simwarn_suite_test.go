package simwarn_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestSimwarn(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "simwarn Suite")
}
