// Command kube-apiserver is the upstream API server, built from the k8s.io/kubernetes
// module so that tests and `make run` need no downloaded binaries.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"

	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	_ "time/tzdata" // CronJob time zones
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
