// Command etcd is the upstream etcd server, built from its Go modules for the test
// control plane.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
