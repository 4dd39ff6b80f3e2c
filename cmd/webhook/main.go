// Command kueue-guard is the admission webhook and policy enforcer for Kueue.
package main

import (
	"os"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		os.Exit(exitCode(err))
	}
}
