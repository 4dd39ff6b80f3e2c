// Command kube-controller-manager is the upstream controller manager, built from the
// k8s.io/kubernetes module so that integration tests run the real job, cronjob,
// replicaset, deployment and statefulset controllers, each under its own identity.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"

	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	_ "time/tzdata" // CronJob time zones
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
