// Package handlers adapts the admission pipeline to controller-runtime's webhook
// server: decode the AdmissionRequest, run the pipeline against the informer-backed
// cluster view, and build the response with controller-runtime's helpers.
package handlers

// Webhook paths. They are a contract with the chart, which generates its webhook
// configurations from this package, and with the tests.
const (
	MutateWorkloadsPath          = "/mutate-workloads"
	ValidateWorkloadsPath        = "/validate-workloads"
	ValidateKueueControllersPath = "/validate-kueue-controllers"
)
