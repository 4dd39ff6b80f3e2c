package review

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
)

// yamlLine finds "line N" in a YAML library error.
var yamlLine = regexp.MustCompile(`line (\d+)`)

// yamlErrorPrefix is what sigs.k8s.io/yaml and the YAML parser put before the
// message itself.
var yamlErrorPrefix = regexp.MustCompile(`^(error converting YAML to JSON: )?(yaml: )?(line \d+: )?`)

func parseYAMLDocument(name string, d document) ([]*Manifest, []*InputError) {
	start := firstContentLine(d)
	j, err := sigsyaml.YAMLToJSON(d.text)
	if err != nil {
		line := start
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			if n, convErr := strconv.Atoi(m[1]); convErr == nil {
				line = d.firstLine + n - 1
			}
		}
		msg := yamlErrorPrefix.ReplaceAllString(err.Error(), "")
		return nil, []*InputError{{File: name, Document: d.index, Line: line, Message: "invalid YAML: " + msg}}
	}
	var node yaml.Node
	var root *yaml.Node
	if yaml.Unmarshal(d.text, &node) == nil && node.Kind == yaml.DocumentNode && len(node.Content) == 1 {
		root = node.Content[0]
	}
	return decodeObject(name, d.index, start, j, root, d.firstLine-1)
}

func parseJSONDocument(name string, d document) ([]*Manifest, []*InputError) {
	var out []*Manifest
	var errs []*InputError
	dec := json.NewDecoder(bytes.NewReader(d.text))
	index := d.index
	for n := 0; ; n++ {
		// The offset after whitespace is where the value starts.
		var raw json.RawMessage
		before := dec.InputOffset()
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			offset := jsonErrorOffset(err, before)
			if errors.Is(err, io.ErrUnexpectedEOF) {
				// Truncated: point at the last line there is.
				offset = int64(len(bytes.TrimRight(d.text, " \t\r\n")))
			}
			line := d.firstLine + lineOf(d.text, offset)
			return out, append(errs, &InputError{File: name, Document: index, Line: line, Message: "invalid JSON: " + err.Error()})
		}
		offset := before + int64(len(d.text[before:])-len(bytes.TrimLeft(d.text[before:], " \t\r\n")))
		start := d.firstLine + lineOf(d.text, offset)
		var node yaml.Node
		var root *yaml.Node
		if yaml.Unmarshal(raw, &node) == nil && node.Kind == yaml.DocumentNode && len(node.Content) == 1 {
			root = node.Content[0]
		}
		ms, es := decodeObject(name, index, start, raw, root, start-1)
		out = append(out, ms...)
		errs = append(errs, es...)
		if n+1 >= MaxDocuments {
			return out, append(errs, &InputError{File: name, Document: index, Message: fmt.Sprintf("more than %d JSON values", MaxDocuments)})
		}
		index++
	}
	return out, errs
}

func jsonErrorOffset(err error, fallback int64) int64 {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return se.Offset
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return te.Offset
	}
	return fallback
}

// lineOf is the 0-based line of a byte offset.
func lineOf(text []byte, offset int64) int {
	if offset > int64(len(text)) {
		offset = int64(len(text))
	}
	if offset < 0 {
		offset = 0
	}
	return bytes.Count(text[:offset], []byte("\n"))
}

// decodeObject turns one document's JSON into objects: the object itself, or a
// List's items.
func decodeObject(name string, index, line int, j []byte, root *yaml.Node, lineOffset int) ([]*Manifest, []*InputError) {
	bad := func(msg string) []*InputError {
		return []*InputError{{File: name, Document: index, Line: line, Message: msg}}
	}
	var v any
	if err := utiljson.Unmarshal(j, &v); err != nil {
		return nil, bad("cannot decode: " + err.Error())
	}
	switch val := v.(type) {
	case nil:
		return nil, nil // an empty document
	case map[string]any:
		obj, err := checkObject(val)
		if err != nil {
			return nil, bad(err.Error())
		}
		if !isList(obj) {
			return []*Manifest{{Source: Source{File: name, Document: index, Line: line}, Object: obj, node: root, lineOffset: lineOffset}}, nil
		}
		return listItems(name, index, line, obj, root, lineOffset)
	case []any:
		return nil, bad("a document must be an object with apiVersion and kind, not a list; use kind: List with items")
	default:
		return nil, bad(fmt.Sprintf("a document must be an object with apiVersion and kind, not %s", describeValue(val)))
	}
}

func describeValue(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, float64:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// checkObject checks the fields every Kubernetes object needs, with messages
// shorter than unstructured's (which quote the whole object).
func checkObject(m map[string]any) (*unstructured.Unstructured, error) {
	apiVersion, ok := m["apiVersion"].(string)
	if !ok || apiVersion == "" {
		if _, present := m["apiVersion"]; present {
			return nil, errors.New("apiVersion must be a non-empty string")
		}
		return nil, errors.New("object has no apiVersion")
	}
	kind, ok := m["kind"].(string)
	if !ok || kind == "" {
		if _, present := m["kind"]; present {
			return nil, errors.New("kind must be a non-empty string")
		}
		return nil, errors.New("object has no kind")
	}
	if md, present := m["metadata"]; present && md != nil {
		if _, ok := md.(map[string]any); !ok {
			return nil, errors.New("metadata must be an object")
		}
	}
	obj := &unstructured.Unstructured{Object: m}
	if !isList(obj) && obj.GetName() == "" && obj.GetGenerateName() == "" && reviewedKind(obj.GroupVersionKind().GroupKind()) {
		return nil, fmt.Errorf("%s has no metadata.name", kind)
	}
	return obj, nil
}

// reviewedKind reports kinds the review checks or adds to the cluster state:
// they must be named. Other documents (a kueue-guard Configuration, a kind the
// review skips) are reported as skipped, whatever their metadata.
func reviewedKind(gk schema.GroupKind) bool {
	_, catalog := integrations.Lookup(gk)
	return catalog || controllerKinds[gk] || manifestStateKinds[gk]
}
