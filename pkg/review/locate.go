package review

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// parseFieldPath splits a field path as violations render it
// (field.Path.String(): `spec.template.spec.containers[0].resources`,
// `metadata.labels["kueue.x-k8s.io/queue-name"]`) into keys and indexes. It is
// lenient: a path it cannot fully parse yields the segments it could read.
func parseFieldPath(p string) []string {
	var segs []string
	i := 0
	for i < len(p) {
		switch p[i] {
		case '.':
			i++
		case '[':
			end := -1
			if i+1 < len(p) && p[i+1] == '"' {
				// A quoted key: find the closing quote, honouring escapes.
				j := i + 2
				for j < len(p) && p[j] != '"' {
					if p[j] == '\\' {
						j++
					}
					j++
				}
				if j+1 < len(p) && p[j+1] == ']' {
					if key, err := strconv.Unquote(p[i+1 : j+1]); err == nil {
						segs = append(segs, key)
					}
					end = j + 2
				}
			} else if k := strings.IndexByte(p[i:], ']'); k > 0 {
				segs = append(segs, p[i+1:i+k])
				end = i + k + 1
			}
			if end < 0 {
				return segs
			}
			i = end
		default:
			j := i
			for j < len(p) && p[j] != '.' && p[j] != '[' {
				j++
			}
			segs = append(segs, p[i:j])
			i = j
		}
	}
	return segs
}

// Line returns the file line of a field of the manifest: the line of the deepest
// part of the path that exists in the file (so a label the webhook would add
// points at the labels map, or at metadata). It returns the object's own line
// when the path is empty or nothing of it is found.
func (m *Manifest) Line(fieldPath string) int {
	if m.node == nil || fieldPath == "" {
		return m.Source.Line
	}
	line := 0
	n := m.node
	for _, seg := range parseFieldPath(fieldPath) {
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
