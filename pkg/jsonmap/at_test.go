package jsonmap

import (
	"fmt"
	"reflect"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// labelsPath is the path the specs read, as the mutating path reads an
// object's own labels.
var labelsPath = []string{"metadata", "labels"}

// atAgrees fails unless At declines what Object declines, and what it reads is
// the value at path in Object's map.
func atAgrees(data []byte, path []string) error {
	m, objectOK := Object(data)
	v, found, ok := At(data, path)
	if !objectOK {
		if ok {
			return fmt.Errorf("At reads %q, which Object declines", data)
		}
		return nil
	}
	var want any = m
	wantFound, onTheWay := true, false
	for _, k := range path {
		obj, isObject := want.(map[string]any)
		if !isObject {
			wantFound, onTheWay = false, want != nil
			break
		}
		if want, wantFound = obj[k]; !wantFound {
			break
		}
	}
	if !ok {
		// Only for a key repeated (along the path) or something on the way
		// that is neither an object nor null.
		if _, unique := ObjectUniqueTo(data, len(path)); unique && !onTheWay {
			return fmt.Errorf("At declines %q, which Object reads", data)
		}
		return nil
	}
	if found != wantFound || (found && !reflect.DeepEqual(v, want)) {
		return fmt.Errorf("At %v of %q: %v (found %t), Object's map: %v (found %t)", path, data, v, found, want, wantFound)
	}
	return nil
}

var _ = DescribeTable("reading one value of an object, skipping the rest",
	func(data string, ok, found bool, want any) {
		Expect(atAgrees([]byte(data), labelsPath)).To(Succeed())
		v, gotFound, gotOK := At([]byte(data), labelsPath)
		Expect(gotOK).To(Equal(ok))
		Expect(gotFound).To(Equal(found))
		if want == nil {
			Expect(v).To(BeNil())
		} else {
			Expect(v).To(Equal(want))
		}
	},
	Entry("labels", `{"kind":"Job","metadata":{"name":"j","labels":{"a":"1","b":"2"}},"spec":{"x":[1,{"y":null}]}}`,
		true, true, map[string]any{"a": "1", "b": "2"}),
	Entry("a label repeated: the last", `{"metadata":{"labels":{"a":"1","a":"2"}}}`, true, true, map[string]any{"a": "2"}),
	Entry("keys repeated elsewhere", `{"spec":{"a":1,"a":2},"metadata":{"name":"x","name":"y","labels":{}}}`, true, true, map[string]any{}),
	Entry("no labels", `{"metadata":{"name":"j"}}`, true, false, nil),
	Entry("no metadata", `{"spec":{}}`, true, false, nil),
	Entry("null metadata", `{"metadata":null}`, true, false, nil),
	Entry("null labels", `{"metadata":{"labels":null}}`, true, true, nil),
	Entry("labels that are not an object, read as they are", `{"metadata":{"labels":[1]}}`, true, true, []any{int64(1)}),
	Entry("metadata repeated", `{"metadata":{"labels":{"a":"1"}},"metadata":{}}`, false, false, nil),
	Entry("labels repeated", `{"metadata":{"labels":{},"labels":{}}}`, false, false, nil),
	Entry("metadata that is a string", `{"metadata":"x"}`, false, false, nil),
	Entry("invalid JSON after the labels", `{"metadata":{"labels":{}},"spec":{"a":tru}}`, false, false, nil),
	Entry("a number too large elsewhere", `{"spec":[1e999],"metadata":{"labels":{}}}`, false, false, nil),
	Entry("data after the object", `{"metadata":{}} x`, false, false, nil),
	Entry("not an object", `[]`, false, false, nil),
)

var _ = It("refuses an empty path", func() {
	Expect(func() { At([]byte(`{}`), nil) }).To(Panic())
})

// FuzzAt holds At to Object on any bytes.
func FuzzAt(f *testing.F) {
	f.Add([]byte(`{"kind":"Job","metadata":{"name":"j","labels":{"a":"1"}},"spec":{"x":[1,{"y":null}]}}`))
	f.Add([]byte(`{"spec":{"jobTemplate":{"metadata":{"labels":{"a":"\u00e9"}}}}}`))
	f.Add([]byte(`{"metadata":{"labels":{"a":"1"}},"metadata":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, path := range [][]string{labelsPath, {"spec", "jobTemplate", "metadata", "labels"}} {
			if err := atAgrees(data, path); err != nil {
				t.Fatal(err)
			}
		}
	})
}
