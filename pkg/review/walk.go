package review

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// manifestExtensions are the files a directory walk reads; a file named
// explicitly is read whatever its name.
var manifestExtensions = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// expand turns the given paths into files, in order, each at most once.
func expand(paths []string) ([]string, []*InputError) {
	var files []string
	var errs []*InputError
	seen := map[string]bool{}
	add := func(f string) {
		if !seen[f] {
			seen[f] = true
			files = append(files, f)
		}
	}
	for _, p := range paths {
		if p == StdinPath {
			if seen[StdinPath] {
				errs = append(errs, &InputError{File: stdinName, Message: `standard input ("-") given more than once`})
				continue
			}
			add(p)
			continue
		}
		info, err := os.Stat(p)
		if err != nil {
			errs = append(errs, &InputError{File: p, Message: describeFSError(err)})
			continue
		}
		if !info.IsDir() {
			add(p)
			continue
		}
		n := 0
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				errs = append(errs, &InputError{File: path, Message: describeFSError(err)})
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				if path != p && strings.HasPrefix(d.Name(), ".") {
					return fs.SkipDir
				}
				return nil
			}
			if !manifestExtensions[strings.ToLower(filepath.Ext(path))] || !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 {
				return nil
			}
			if n++; n+len(files) > MaxFiles {
				return fmt.Errorf("more than %d manifest files", MaxFiles)
			}
			add(path)
			return nil
		})
		if err != nil {
			errs = append(errs, &InputError{File: p, Message: err.Error()})
		} else if n == 0 {
			errs = append(errs, &InputError{File: p, Message: "directory holds no .yaml, .yml or .json file"})
		}
	}
	return files, errs
}

func describeFSError(err error) string {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		err = pe.Err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file or directory"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	return err.Error()
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.New(describeFSError(err))
	}
	defer func() { _ = f.Close() }()
	if info, err := f.Stat(); err == nil && info.IsDir() {
		return nil, errors.New("is a directory")
	}
	return readLimited(f)
}

func readLimited(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("larger than %d MiB", MaxFileBytes>>20)
	}
	return data, nil
}
