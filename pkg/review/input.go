package review

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kueue-guard/kueue-guard/pkg/integrations"
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

// manifestExtensions are the files a directory walk reads; a file named
// explicitly is read whatever its name.
var manifestExtensions = map[string]bool{".yaml": true, ".yml": true, ".json": true}

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
	var pe *fs.PathError
	if errors.As(err, &pe) {
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

// document is one YAML document of a file: its text and the line it starts on.
type document struct {
	index int
	// firstLine is the file line of text's first line.
	firstLine int
	text      []byte
}

// splitDocuments splits a YAML stream at "---" separator lines (as kubectl does),
// keeping each document's starting line. A "..." line ends a document.
func splitDocuments(data []byte) []document {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var docs []document
	cur := document{index: 1, firstLine: 1}
	var buf bytes.Buffer
	flush := func(nextLine int) {
		cur.text = append([]byte(nil), buf.Bytes()...)
		docs = append(docs, cur)
		buf.Reset()
		cur = document{index: cur.index + 1, firstLine: nextLine}
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), MaxFileBytes+1)
	line := 0
	ended := false
	for sc.Scan() {
		line++
		text := sc.Text()
		trimmed := strings.TrimRight(text, " \t\r")
		if rest, ok := strings.CutPrefix(trimmed, "---"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			flush(line + 1)
			ended = false
			rest = strings.TrimSpace(rest)
			if rest != "" && !strings.HasPrefix(rest, "#") {
				// "--- value": the document starts on the separator line.
				cur.firstLine = line
				buf.WriteString(rest)
				buf.WriteByte('\n')
			}
			continue
		}
		if trimmed == "..." {
			ended = true
			continue
		}
		if ended {
			// Only comments and blank lines may follow "..." before the next "---".
			if t := strings.TrimSpace(text); t != "" && !strings.HasPrefix(t, "#") {
				flush(line)
				ended = false
			} else {
				continue
			}
		}
		// Every line is kept, comments and blank lines included, so that line
		// n of a document is line firstLine+n-1 of the file.
		buf.WriteString(text)
		buf.WriteByte('\n')
	}
	flush(line + 1)
	return docs
}

// isBlankDocument reports a document holding only comments and whitespace.
func isBlankDocument(text []byte) bool {
	for _, l := range strings.Split(string(text), "\n") {
		t := strings.TrimSpace(l)
		if t != "" && !strings.HasPrefix(t, "#") {
			return false
		}
	}
	return true
}

// firstContentLine is the line of a document's first non-blank, non-comment line.
func firstContentLine(d document) int {
	for i, l := range strings.Split(string(d.text), "\n") {
		t := strings.TrimSpace(l)
		if t != "" && !strings.HasPrefix(t, "#") {
			return d.firstLine + i
		}
	}
	return d.firstLine
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

// blankComments empties whole-line comments, keeping the line count, so that a
// JSON document after helm's "# Source:" line is recognized and parsed as JSON.
func blankComments(text []byte) []byte {
	lines := strings.Split(string(text), "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			lines[i] = ""
		}
	}
	return []byte(strings.Join(lines, "\n"))
}

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
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return se.Offset
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
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

// isList reports a List document: kind "List", or any "*List" kind with an items
// array, as kubectl accepts.
func isList(obj *unstructured.Unstructured) bool {
	if !strings.HasSuffix(obj.GetKind(), "List") {
		return false
	}
	_, ok := obj.Object["items"].([]any)
	return ok || obj.GetKind() == "List"
}

func listItems(name string, index, line int, list *unstructured.Unstructured, root *yaml.Node, lineOffset int) ([]*Manifest, []*InputError) {
	items, _ := list.Object["items"].([]any)
	var itemNodes []*yaml.Node
	if root != nil {
		if n := mappingValue(root, "items"); n != nil && n.Kind == yaml.SequenceNode {
			itemNodes = n.Content
		}
	}
	var out []*Manifest
	var errs []*InputError
	for i, it := range items {
		i := i
		src := Source{File: name, Document: index, Line: line, Item: &i}
		var node *yaml.Node
		if i < len(itemNodes) {
			node = itemNodes[i]
			src.Line = node.Line + lineOffset
		}
		m, ok := it.(map[string]any)
		if !ok {
			errs = append(errs, &InputError{File: name, Document: index, Line: src.Line,
				Message: fmt.Sprintf("items[%d] must be an object, not %s", i, describeValue(it))})
			continue
		}
		obj, err := checkObject(m)
		if err != nil {
			errs = append(errs, &InputError{File: name, Document: index, Line: src.Line, Message: fmt.Sprintf("items[%d]: %v", i, err)})
			continue
		}
		if isList(obj) {
			errs = append(errs, &InputError{File: name, Document: index, Line: src.Line, Message: fmt.Sprintf("items[%d]: nested lists are not supported", i)})
			continue
		}
		out = append(out, &Manifest{Source: src, Object: obj, node: node, lineOffset: lineOffset})
	}
	return out, errs
}

// mappingValue returns the value node of key in a mapping node.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	k, v := mappingEntry(n, key)
	if k == nil {
		return nil
	}
	return v
}

func mappingEntry(n *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}
