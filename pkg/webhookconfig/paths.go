package webhookconfig

// Webhook paths. They are a contract between the webhook configurations built
// here (and the chart generated from them) and the server that serves them.
const (
	MutateWorkloadsPath          = "/mutate-workloads"
	ValidateWorkloadsPath        = "/validate-workloads"
	ValidateKueueControllersPath = "/validate-kueue-controllers"
)
