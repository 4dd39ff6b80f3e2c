package schedsim_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestSchedsim(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "schedsim Suite")
}
