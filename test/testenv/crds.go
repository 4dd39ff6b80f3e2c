// Package testenv starts the real test control plane (kube-apiserver and etcd built
// by `make testbin`) with the CRDs of Kueue and of every integrated framework, read
// from the Go module cache at the versions Kueue's go.mod requires.
package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// crdSource is a set of CRD files in one module.
type crdSource struct {
	module string
	globs  []string
	// skip lists base names not to install.
	skip []string
}

// crdSources lists where each framework's CRDs live. Training-operator v1.9 also
// ships a kubeflow.org/v1 MPIJob CRD that collides with the MPI operator's
// v2beta1 one; Kueue integrates the latter, so the former is skipped.
var crdSources = []crdSource{
	{module: "sigs.k8s.io/kueue", globs: []string{"config/components/crd/bases/*.yaml"}},
	{module: "sigs.k8s.io/jobset", globs: []string{"config/components/crd/bases/*.yaml"}},
	{module: "github.com/ray-project/kuberay/ray-operator", globs: []string{"config/crd/bases/*.yaml"}},
	{module: "github.com/kubeflow/mpi-operator", globs: []string{"manifests/base/kubeflow.org_mpijobs.yaml"}},
	{module: "github.com/kubeflow/training-operator", globs: []string{"manifests/base/crds/kubeflow.org_*.yaml"},
		skip: []string{"kubeflow.org_mpijobs.yaml"}},
	{module: "github.com/kubeflow/trainer/v2", globs: []string{"manifests/base/crds/trainer.kubeflow.org_*.yaml"}},
	{module: "github.com/project-codeflare/appwrapper", globs: []string{"config/crd/bases/*.yaml"}},
	{module: "sigs.k8s.io/lws", globs: []string{"config/crd/bases/*.yaml"}},
	{module: "github.com/kubeflow/spark-operator/v2", globs: []string{"config/crd/bases/*.yaml"}},
	// The audit's reports.
	{module: "github.com/openreports/reports-api", globs: []string{"config/crd/openreports.io_reports.yaml"}},
}

// CRDModules are the modules whose CRDs are installed; `make testdeps` downloads
// them.
func CRDModules() []string {
	out := make([]string, len(crdSources))
	for i, s := range crdSources {
		out[i] = s.module
	}
	return out
}

// CRDFiles resolves every CRD file from the module cache.
func CRDFiles() ([]string, error) {
	dirs, err := moduleDirs(CRDModules())
	if err != nil {
		return nil, err
	}
	var files []string
	for _, s := range crdSources {
		dir := dirs[s.module]
		n := 0
		for _, g := range s.globs {
			matches, err := filepath.Glob(filepath.Join(dir, g))
			if err != nil {
				return nil, err
			}
			for _, m := range matches {
				if contains(s.skip, filepath.Base(m)) {
					continue
				}
				files = append(files, m)
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("no CRDs found in %s (%s) for %v", s.module, dir, s.globs)
		}
	}
	slices.Sort(files)
	return files, nil
}

func contains(list []string, s string) bool {
	return slices.Contains(list, s)
}

// CRDFilesOf picks from files the CRDs of the given API groups (the files are
// named group_plural.yaml).
func CRDFilesOf(files []string, groups ...string) []string {
	var out []string
	for _, f := range files {
		for _, g := range groups {
			if strings.HasPrefix(filepath.Base(f), g+"_") {
				out = append(out, f)
			}
		}
	}
	return out
}

// ModuleDir is where one module's source is (at the version go.mod requires),
// for tests that install a project's own example objects.
func ModuleDir(module string) (string, error) {
	dirs, err := moduleDirs([]string{module})
	if err != nil {
		return "", err
	}
	return dirs[module], nil
}

// moduleDirs asks the go command where modules are, downloading them if needed.
func moduleDirs(modules []string) (map[string]string, error) {
	args := append([]string{"list", "-mod=mod", "-m", "-f", "{{.Path}} {{.Dir}}"}, modules...)
	cmd := exec.Command("go", args...)
	cmd.Dir = RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m %v: %w: %s", modules, err, stderr.String())
	}
	dirs := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		path, dir, ok := strings.Cut(line, " ")
		if !ok || dir == "" {
			return nil, fmt.Errorf("module %q is not in the module cache; run `make testdeps`", path)
		}
		dirs[path] = dir
	}
	return dirs, nil
}

// RepoRoot is the directory holding the main module's go.mod.
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if b, _ := os.ReadFile(filepath.Join(dir, "go.mod")); bytes.HasPrefix(b, []byte("module github.com/kueue-guard/kueue-guard\n")) {
				return dir
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			panic("kueue-guard go.mod not found above the working directory")
		}
		dir = parent
	}
}
