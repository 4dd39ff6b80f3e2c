package review

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Limits on what the reviewer reads. Manifests come from pull requests, which
// anyone may open, so a mistaken path (a whole data volume, a binary) or a hostile
// file must produce an error, not exhaust the CI runner's memory.
const (
	// MaxFileBytes bounds one file (or standard input).
	MaxFileBytes = 32 << 20
	// MaxDocuments bounds the documents of one file.
	MaxDocuments = 10000
	// MaxFiles bounds the files found under the given paths.
	MaxFiles = 10000
)

// StdinPath is the path that stands for standard input, as in kubectl.
const StdinPath = "-"

// stdinName is how standard input is named in reports.
const stdinName = "<stdin>"

// Source says where an object was read, so every finding and error points at the
// line a user has to edit.
type Source struct {
	// File is the path as given (or found under a given directory); "<stdin>" for
	// standard input.
	File string `json:"file"`
	// Document is the 1-based index of the YAML document (or JSON value) in the file.
	Document int `json:"document"`
	// Line is the 1-based line where the object starts.
	Line int `json:"line"`
	// Item is the 0-based index of the object in a List document's items, or nil
	// for an object that is a document of its own.
	Item *int `json:"item,omitempty"`
}

// String renders "file: document 2, line 14" (with "items[3]" for List items).
func (s Source) String() string {
	return s.File + ": " + s.Position()
}

// Position renders "document 2, line 14" without the file.
func (s Source) Position() string {
	pos := "document " + strconv.Itoa(s.Document)
	if s.Item != nil {
		pos += ", items[" + strconv.Itoa(*s.Item) + "]"
	}
	if s.Line > 0 {
		pos += ", line " + strconv.Itoa(s.Line)
	}
	return pos
}

// Manifest is one object read from the input, with what is needed to point back
// into its file.
type Manifest struct {
	// Source is where the object was read.
	Source Source
	// Object is the object as read: not defaulted, not namespaced by the reviewer.
	Object *unstructured.Unstructured
	// node is the object's YAML node, for locating fields; nil when unavailable.
	node *yaml.Node
	// lineOffset is added to the node's lines (the document's first line - 1).
	lineOffset int
	// fileSeq is the file's position among the files read, for report order.
	fileSeq int
}

// InputError is a path, file or document the reviewer could not read. It names
// the file and, for a document, its index and line, so the author can fix it.
type InputError struct {
	// File is the path (or "<stdin>").
	File string `json:"file"`
	// Document is the 1-based document index, or 0 for an error about the whole file.
	Document int `json:"document,omitempty"`
	// Line is the 1-based line, or 0 when unknown.
	Line int `json:"line,omitempty"`
	// Message says what is wrong, without the location.
	Message string `json:"message"`
	// fileSeq is the file's position among the files read, for report order.
	fileSeq int
}

// Error implements error: "file: document 2, line 5: message".
func (e *InputError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Document > 0 {
		b.WriteString(": document ")
		b.WriteString(strconv.Itoa(e.Document))
	}
	if e.Line > 0 {
		b.WriteString(", line ")
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	b.WriteString(e.Message)
	return b.String()
}

// Read reads every object under the given paths: files, directories (recursively,
// their .yaml, .yml and .json files in lexical order, hidden directories skipped)
// and "-" for stdin. Documents that cannot be read are returned as errors and the
// rest is still read, so that one broken document does not hide the findings of
// the others. Empty documents (helm template emits some) are skipped.
func Read(paths []string, stdin io.Reader) ([]*Manifest, []*InputError) {
	var out []*Manifest
	var errs []*InputError
	files, ferrs := expand(paths)
	errs = append(errs, ferrs...)
	for i, f := range files {
		var data []byte
		var err error
		name := f
		if f == StdinPath {
			name = stdinName
			if stdin == nil {
				errs = append(errs, &InputError{File: name, Message: "no standard input", fileSeq: i + 1})
				continue
			}
			data, err = readLimited(stdin)
		} else {
			data, err = readFile(f)
		}
		if err != nil {
			errs = append(errs, &InputError{File: name, Message: err.Error(), fileSeq: i + 1})
			continue
		}
		ms, des := Parse(name, data)
		for _, m := range ms {
			m.fileSeq = i + 1
		}
		for _, e := range des {
			e.fileSeq = i + 1
		}
		out = append(out, ms...)
		errs = append(errs, des...)
	}
	return out, errs
}

// Parse reads the objects of one file's content; name is used in sources and
// errors. It never panics, whatever the input.
func Parse(name string, data []byte) (ms []*Manifest, errs []*InputError) {
	defer func() {
		if r := recover(); r != nil {
			errs = append(errs, &InputError{File: name, Message: fmt.Sprintf("internal error reading this file: %v", r)})
		}
	}()
	docs := splitDocuments(data)
	if len(docs) > MaxDocuments {
		return nil, []*InputError{{File: name, Message: fmt.Sprintf("more than %d documents", MaxDocuments)}}
	}
	for _, d := range docs {
		if isBlankDocument(d.text) {
			continue
		}
		// Comments are blanked only to recognize and parse JSON: in YAML, a "#"
		// line may be content (a script in a block scalar).
		blanked := blankComments(d.text)
		trimmed := bytes.TrimSpace(blanked)
		var dm []*Manifest
		var derrs []*InputError
		if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
			d.text = blanked
			dm, derrs = parseJSONDocument(name, d)
		} else {
			dm, derrs = parseYAMLDocument(name, d)
		}
		ms = append(ms, dm...)
		errs = append(errs, derrs...)
	}
	return ms, errs
}
