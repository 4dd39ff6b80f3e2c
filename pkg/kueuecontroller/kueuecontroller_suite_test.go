package kueuecontroller_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestKueueController(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Kueue Controller Detection Suite")
}
