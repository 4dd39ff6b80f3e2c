package review

import (
	"strconv"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kueue-guard/kueue-guard/pkg/fieldpath"
)

// Line returns the file line of a field of the manifest: the line of the deepest
// part of the path that exists in the file (so a label the webhook would add
// points at the labels map, or at metadata). It returns the object's own line
// when the path is empty or nothing of it is found.
func (m *Manifest) Line(path *field.Path) int {
	if m.node == nil || path == nil {
		return m.Source.Line
	}
	line := 0
	n := m.node
	for _, seg := range fieldpath.Segments(path) {
		switch n.Kind {
		case yaml.MappingNode:
			k, v := mappingEntry(n, seg)
			if k == nil {
				return m.lineOr(line)
			}
			line, n = k.Line, v
		case yaml.SequenceNode:
			idx, err := strconv.Atoi(seg)
			if err != nil || idx < 0 || idx >= len(n.Content) {
				return m.lineOr(line)
			}
			n = n.Content[idx]
			line = n.Line
		default:
			return m.lineOr(line)
		}
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
	}
	return m.lineOr(line)
}

func (m *Manifest) lineOr(nodeLine int) int {
	if nodeLine == 0 {
		return m.Source.Line
	}
	return nodeLine + m.lineOffset
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
