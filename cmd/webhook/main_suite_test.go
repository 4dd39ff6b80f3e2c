package main

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestWebhookCommand(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "kueue-guard command Suite")
}
