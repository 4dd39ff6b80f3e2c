package review

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

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
