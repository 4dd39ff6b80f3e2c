package policies

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing/fstest"
)

// Limits on what a policy directory may hold. The directory is usually a ConfigMap
// volume (at most 1 MiB), so these only stop a mistaken mount (a whole data volume)
// from exhausting the webhook's memory.
const (
	maxFileBytes  = 4 << 20
	maxTotalBytes = 64 << 20
	maxFiles      = 10000
	maxDirDepth   = 16
)

// dataFileNames are the only JSON/YAML files loaded, as data at their directory's
// path: any other YAML in the directory (fixtures, Helm values, a README example)
// is not mistaken for policy data.
var dataFileNames = []string{"data.json", "data.yaml", "data.yml"}

// snapshot is the policy directory's relevant files read into memory once, so that
// one load sees one consistent version of them (a ConfigMap update can land while
// we read) and so that an unchanged directory is recognised by its hash.
type snapshot struct {
	files fstest.MapFS
	// dirs are the directories visited, for the watcher.
	dirs []string
	hash string
}

// isPolicyFile decides which files a load reads.
func isPolicyFile(name string, withTests bool) bool {
	if strings.HasSuffix(name, ".rego") {
		return withTests || !strings.HasSuffix(name, "_test.rego")
	}
	return slices.Contains(dataFileNames, name)
}

// readSnapshot reads the policy files under root. Hidden entries (names starting
// with ".") are skipped: a ConfigMap volume keeps each version in a "..<timestamp>"
// directory behind a "..data" symlink, and the visible files are symlinks into it,
// so reading the hidden entries too would load everything twice. Symlinks are
// followed, which is how the visible files resolve.
func readSnapshot(root string, withTests bool) (*snapshot, error) {
	info, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("reading policy directory: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("policy directory %s is not a directory", root)
	}
	s := &snapshot{files: fstest.MapFS{}}
	var total int
	var walk func(dir, rel string, depth int) error
	walk = func(dir, rel string, depth int) error {
		if depth > maxDirDepth {
			return fmt.Errorf("%s: directories nested deeper than %d (a symlink loop?)", dir, maxDirDepth)
		}
		s.dirs = append(s.dirs, dir)
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") {
				continue
			}
			p := filepath.Join(dir, name)
			r := name
			if rel != "" {
				r = rel + "/" + name
			}
			fi, err := os.Stat(p)
			if err != nil {
				return err
			}
			if fi.IsDir() {
				if err := walk(p, r, depth+1); err != nil {
					return err
				}
				continue
			}
			if !fi.Mode().IsRegular() || !isPolicyFile(name, withTests) {
				continue
			}
			if fi.Size() > maxFileBytes {
				return fmt.Errorf("%s: file larger than %d bytes", p, maxFileBytes)
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			total += len(data)
			if total > maxTotalBytes || len(s.files) >= maxFiles {
				return fmt.Errorf("%s: policy directory holds more than %d files or %d bytes", root, maxFiles, maxTotalBytes)
			}
			s.files[r] = &fstest.MapFile{Data: data, Mode: 0o444}
		}
		return nil
	}
	if err := walk(root, "", 0); err != nil {
		return nil, err
	}
	h := sha256.New()
	names := make([]string, 0, len(s.files))
	for n := range s.files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(s.files[n].Data))
		h.Write(s.files[n].Data)
	}
	s.hash = hex.EncodeToString(h.Sum(nil))
	return s, nil
}
