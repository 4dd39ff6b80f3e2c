package kueuestate_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestKueueState(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Kueue state Suite")
}
