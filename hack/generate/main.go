// Command generate writes the generated parts of the Helm chart (the webhook
// names, paths and rules from pkg/webhookconfig, the RBAC rules from what the
// server reads, the built-in rules' CEL twins, and copies of the shipped
// policies) and the docs' rule table, so that neither retypes a list that Go
// owns. `make generate` runs it; `make verify-generate`
// runs it with -verify, which changes nothing and fails on drift.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/kueue-guard/kueue-guard/pkg/chart"
	"github.com/kueue-guard/kueue-guard/pkg/rulesdoc"
)

func main() {
	verify := flag.Bool("verify", false, "Only check: exit 1 if the chart's generated files are out of date")
	root := flag.String("root", ".", "Any directory inside the kueue-guard repository")
	flag.Parse()
	if err := run(*root, *verify); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

func run(dir string, verify bool) error {
	root, err := chart.RepoRoot(dir)
	if err != nil {
		return err
	}
	if verify {
		drift, err := chart.Drift(root)
		if err != nil {
			return err
		}
		docsDrift, err := rulesdoc.Drift(root)
		if err != nil {
			return err
		}
		if docsDrift {
			fmt.Fprintln(os.Stderr, "out of date:", rulesdoc.File)
			return fmt.Errorf("%s out of date: run `make generate`", rulesdoc.File)
		}
		if len(drift) > 0 {
			for _, d := range drift {
				fmt.Fprintln(os.Stderr, "out of date:", chart.Dir+"/"+d)
			}
			return fmt.Errorf("%d generated chart file(s) out of date: run `make generate`", len(drift))
		}
		fmt.Println("generated chart files are up to date")
		return nil
	}
	changed, err := chart.Write(root)
	if err != nil {
		return err
	}
	docs, err := rulesdoc.Write(root)
	if err != nil {
		return err
	}
	if docs {
		fmt.Println("wrote", rulesdoc.File)
	}
	for _, c := range changed {
		fmt.Println("wrote", chart.Dir+"/"+c)
	}
	if len(changed) == 0 && !docs {
		fmt.Println("generated chart files are up to date")
	}
	return nil
}
