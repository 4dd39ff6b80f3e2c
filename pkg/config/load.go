package config

import (
	"bytes"
	"fmt"
	"io"
	"os"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// MaxFileSize bounds how much of a configuration file is read; a real file is a few KiB, so anything
// larger is a mistake (a wrong path, a binary) and is reported instead of being loaded into memory.
const MaxFileSize = 1 << 20

// Load reads, decodes, defaults and validates the configuration file at path. Every error names the
// file, so that a start-up failure points straight at what to fix.
func Load(path string) (*Configuration, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading configuration file %q: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading configuration file %q: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("configuration file %q: larger than %d bytes", path, MaxFileSize)
	}
	c, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("configuration file %q: %w", path, err)
	}
	return c, nil
}

// Decode parses a configuration document strictly, checks its apiVersion and kind, applies defaults
// and validates it. Decoding is strict because a misspelled key silently ignored would leave a
// security setting at its default without the user noticing.
//
// YAML is converted to JSON and decoded with sigs.k8s.io/json (as the Kubernetes API server does)
// rather than with yaml.UnmarshalStrict: its unknown-field errors carry the full field path
// (`unknown field "defaulting.rulez"`), and it matches keys case-sensitively, whereas encoding/json
// would accept `installprofile` for `installProfile`.
func Decode(data []byte) (*Configuration, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errEmpty()
	}
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("parsing configuration: %w", err)
	}
	if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
		return nil, errEmpty()
	}
	c := &Configuration{}
	strictErrs, err := kjson.UnmarshalStrict(j, c)
	if err != nil {
		return nil, fmt.Errorf("decoding configuration: %w", err)
	}
	if err := checkTypeMeta(c); err != nil {
		return nil, err
	}
	if len(strictErrs) > 0 {
		return nil, fmt.Errorf("decoding configuration: %w", utilerrors.NewAggregate(strictErrs))
	}
	c.SetDefaults()
	if errs := c.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("invalid configuration: %w", errs.ToAggregate())
	}
	return c, nil
}

func errEmpty() error {
	return fmt.Errorf("configuration is empty: expected a document with apiVersion %q and kind %q", GroupVersion, Kind)
}

// checkTypeMeta runs before defaulting, which would otherwise fill in a missing apiVersion or kind.
func checkTypeMeta(c *Configuration) error {
	var errs []error
	switch c.APIVersion {
	case GroupVersion:
	case "":
		errs = append(errs, fmt.Errorf("apiVersion is missing: expected %q", GroupVersion))
	default:
		errs = append(errs, fmt.Errorf("apiVersion %q is not supported: expected %q", c.APIVersion, GroupVersion))
	}
	switch c.Kind {
	case Kind:
	case "":
		errs = append(errs, fmt.Errorf("kind is missing: expected %q", Kind))
	default:
		errs = append(errs, fmt.Errorf("kind %q is not supported: expected %q", c.Kind, Kind))
	}
	return utilerrors.NewAggregate(errs)
}
