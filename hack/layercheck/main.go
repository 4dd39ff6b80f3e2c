// Command layercheck fails when a package imports one of a higher (or the same)
// layer, following the layer table of docs/architecture.md, so that the layering
// the docs describe is the layering the code has. `make lint` runs it.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

const (
	module    = "github.com/kueue-guard/kueue-guard/"
	docFile   = "docs/architecture.md"
	beginMark = "<!-- layers"
	endMark   = "<!-- /layers -->"
)

func main() {
	doc := flag.String("doc", docFile, "The document holding the layer table")
	flag.Parse()
	if err := run(*doc); err != nil {
		fmt.Fprintln(os.Stderr, "layercheck:", err)
		os.Exit(1)
	}
}

func run(doc string) error {
	f, err := os.Open(doc)
	if err != nil {
		return err
	}
	layers, err := parseLayers(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", doc, err)
	}
	imports, err := listImports("./pkg/...", "./cmd/...")
	if err != nil {
		return err
	}
	problems := check(layers, imports)
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d layering problem(s): fix the import or the table in %s", len(problems), doc)
	}
	fmt.Printf("layers: %d packages follow %s\n", len(imports), doc)
	return nil
}

var row = regexp.MustCompile(`^\|\s*(\d+)\s*\|([^|]*)\|`)
var pkgName = regexp.MustCompile("`([^`]+)`")

// parseLayers reads the table between the layer marks: each row's first cell
// is the layer, its second the packages (in backquotes, relative to the module).
func parseLayers(r io.Reader) (map[string]int, error) {
	layers := map[string]int{}
	in := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, endMark):
			if len(layers) == 0 {
				return nil, errors.New("the layer table is empty")
			}
			return layers, nil
		case strings.HasPrefix(line, beginMark):
			in = true
		case in:
			m := row.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			n, _ := strconv.Atoi(m[1])
			for _, p := range pkgName.FindAllStringSubmatch(m[2], -1) {
				if prev, dup := layers[p[1]]; dup {
					return nil, fmt.Errorf("%s is in layers %d and %d", p[1], prev, n)
				}
				layers[p[1]] = n
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("no layer table between %q and %q", beginMark, endMark)
}

// listImports maps each package of the patterns (relative to the module) to
// the module's packages it imports, test files excluded.
func listImports(patterns ...string) (map[string][]string, error) {
	cmd := exec.Command("go", append([]string{"list", "-json=ImportPath,Imports"}, patterns...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, stderr.String())
	}
	imports := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		var ours []string
		for _, i := range p.Imports {
			if after, ok := strings.CutPrefix(i, module); ok {
				ours = append(ours, after)
			}
		}
		imports[strings.TrimPrefix(p.ImportPath, module)] = ours
	}
	return imports, nil
}

// check lists every import that does not go strictly down, and every package
// the table does not place.
func check(layers map[string]int, imports map[string][]string) []string {
	var problems []string
	pkgs := make([]string, 0, len(imports))
	for p := range imports {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	for _, p := range pkgs {
		lp, ok := layers[p]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s is not in the layer table", p))
			continue
		}
		for _, i := range imports[p] {
			li, ok := layers[i]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s imports %s, which is not in the layer table", p, i))
			case li >= lp:
				problems = append(problems, fmt.Sprintf("%s (layer %d) imports %s (layer %d): a package may import only lower layers", p, lp, i, li))
			}
		}
	}
	return problems
}
