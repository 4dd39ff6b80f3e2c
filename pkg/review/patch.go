package review

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	"gomodules.xyz/jsonpatch/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// sortedPatch orders a patch by path when its operations are independent (no
// path is a prefix of another), as the pipeline's are: they come from a diff of
// maps, whose iteration order is random, and reports must be reproducible.
func sortedPatch(patch []jsonpatch.Operation) []jsonpatch.Operation {
	out := append([]jsonpatch.Operation(nil), patch...)
	for i := range out {
		for j := range out {
			if i != j && strings.HasPrefix(out[j].Path, out[i].Path+"/") {
				return out
			}
		}
	}
	slices.SortStableFunc(out, func(a, b jsonpatch.Operation) int { return cmp.Compare(a.Path, b.Path) })
	return out
}

// applyPatch applies a JSON patch to the object as read.
func applyPatch(obj *unstructured.Unstructured, patch []jsonpatch.Operation) (map[string]any, error) {
	if len(patch) == 0 {
		return obj.Object, nil
	}
	doc, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, err
	}
	pj, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	p, err := jsonpatchapply.DecodePatch(pj)
	if err != nil {
		return nil, err
	}
	out, err := p.Apply(doc)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, err
	}
	return m, nil
}
