package jsonmap

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"

	"github.com/kueue-guard/kueue-guard/test/fixtures"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestJSONMap(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "jsonmap Suite")
}

// reference is what sigs.k8s.io/json decodes data into, and whether it can.
func reference(data []byte) (map[string]any, bool) {
	var m map[string]any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

// agree fails unless Object and the reference agree on data: the same value
// when Object decodes it, and Object declines what the reference refuses.
func agree(data []byte) error {
	got, ok := Object(data)
	want, wantOK := reference(data)
	switch {
	case ok && !wantOK:
		return fmt.Errorf("decoded what sigs.k8s.io/json refuses: %q", data)
	case ok:
		if diff := cmp.Diff(want, got); diff != "" {
			return fmt.Errorf("decoded %q otherwise (-sigs.k8s.io/json +jsonmap):\n%s", data, diff)
		}
	}
	return nil
}

var _ = DescribeTable("decoding as sigs.k8s.io/json does, or declining",
	func(data string, decodes bool) {
		Expect(agree([]byte(data))).To(Succeed())
		_, ok := Object([]byte(data))
		Expect(ok).To(Equal(decodes))
	},
	Entry("an object with every kind of value", `{"s":"x","i":7,"n":-3,"f":1.5,"e":1e3,"z":-0,"t":true,"F":false,"u":null,"a":[1,"2",[]],"o":{}}`, true),
	Entry("whitespace everywhere", " \t\n\r{ \"a\" : [ 1 , 2 ] , \"b\" : { } } \n", true),
	Entry("the largest int64, and one more (a float64)", `{"a":9223372036854775807,"b":9223372036854775808,"c":-9223372036854775808}`, true),
	Entry("escapes, surrogate pairs, a lone surrogate", `{"a\"b":"\u00e9\n\t\\\/\ud83d\ude00\ud800x"}`, true),
	Entry("UTF-8 and invalid UTF-8", "{\"é\":\"\xff\xfe ok\"}", true),
	Entry("one-character escapes, as managed fields' keys have them", `{"k:{\"name\":\"main\"}":{"f:a\\b\/c":"\b\f\n\r\t"}}`, true),
	Entry("a UTF-8 sequence cut short, then an escape", "{\"a\":\"x\xe2\x82\\\"y\xed\xa0\x80\"}", true),
	Entry("an escape at the very end", `{"a":"x\`, false),
	Entry("a repeated key: the last", `{"a":1,"a":{"b":2}}`, true),
	Entry("an empty array is not null", `{"a":[]}`, true),
	Entry("a number too large for a float64", `{"a":1e999}`, false),
	Entry("a leading zero", `{"a":01}`, false),
	Entry("a trailing comma", `{"a":1,}`, false),
	Entry("a fraction without digits", `{"a":1.}`, false),
	Entry("an exponent without digits", `{"a":1e+}`, false),
	Entry("a control character in a string", "{\"a\":\"x\ny\"}", false),
	Entry("a bad escape", `{"a":"\x"}`, false),
	Entry("an unterminated string", `{"a":"x`, false),
	Entry("a literal cut short", `{"a":tru}`, false),
	Entry("a literal run on", `{"a":truex}`, false),
	Entry("data after the object", `{"a":1} {}`, false),
	Entry("not an object", `[1]`, false),
	Entry("null", `null`, false),
	Entry("nothing", ``, false),
	Entry("a key that is not a string", `{a:1}`, false),
	Entry("a missing colon", `{"a" 1}`, false),
)

var _ = It("declines a repeated key down to the depth it is asked to, and only there", func() {
	data := []byte(`{"a":{"b":{"c":1,"c":2}},"d":1}`)
	for depth, decodes := range []bool{true, true, true, false, false} {
		m, ok := ObjectUniqueTo(data, depth)
		Expect(ok).To(Equal(decodes), "depth %d", depth)
		if ok {
			Expect(m).To(HaveKeyWithValue("a", HaveKeyWithValue("b", HaveKeyWithValue("c", int64(2)))))
		}
	}
	_, ok := ObjectUniqueTo([]byte(`{"a":1,"a":1}`), 1)
	Expect(ok).To(BeFalse())
})

var _ = It("declines nesting deeper than its bound, which the reference decodes", func() {
	deep := strings.Repeat(`{"a":`, maxDepth+1) + "1" + strings.Repeat("}", maxDepth+1)
	_, ok := Object([]byte(deep))
	Expect(ok).To(BeFalse())
	Expect(agree([]byte(deep))).To(Succeed())
	within := strings.Repeat(`[`, maxDepth-1) + strings.Repeat("]", maxDepth-1)
	_, ok = Object([]byte(`{"a":` + within + `}`))
	Expect(ok).To(BeTrue())
})

// FuzzDecode holds Object to sigs.k8s.io/json on any bytes: the same value
// whenever it decodes, and declined whatever the reference refuses.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{`{"a":[1,2.5,"x",null,true,{"b":-0}]}`, `{"\u00e9":"\ud83d"}`, "{\"a\":\"\xff\"}", `{"a":1e400}`} {
		f.Add([]byte(seed))
	}
	f.Add(trainingReview(f, true))
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := agree(data); err != nil {
			t.Fatal(err)
		}
	})
}

// trainingReview is the UPDATE review of a 20 KB training JobSet; with
// managed fields, as the API server sends an object kubectl applied, it holds
// its fields' tree too, whose keys quote list items' names, and the applied
// manifest in an annotation.
func trainingReview(tb testing.TB, managed bool) []byte {
	obj := fixtures.TrainingJobSet("ml", "train").Queue("q").Held().Obj()
	if managed {
		// kubectl's client-side apply keeps the applied manifest in an
		// annotation: a string as large as the object, of escaped quotes.
		applied, err := json.Marshal(obj.Object)
		if err != nil {
			tb.Fatal(err)
		}
		obj.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(applied)})
		obj.Object["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{
			"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "jobset.x-k8s.io/v1alpha2",
			"time": "2026-12-04T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fieldsTree(obj.Object["spec"]),
		}}
	}
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		tb.Fatal(err)
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Update,
			Object: runtime.RawExtension{Raw: raw}, OldObject: runtime.RawExtension{Raw: raw}}})
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

// fieldsTree is a managed fields tree of v: "f:" keys for an object's fields,
// and "k:" keys naming a list's items by their name.
func fieldsTree(v any) map[string]any {
	out := map[string]any{}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			out["f:"+k] = fieldsTree(e)
		}
	case []any:
		for _, e := range x {
			if m, ok := e.(map[string]any); ok && m["name"] != nil {
				out[fmt.Sprintf(`k:{"name":%q}`, m["name"])] = fieldsTree(m)
			}
		}
	}
	return out
}

// BenchmarkDecode decodes a 40 KB AdmissionReview (a training JobSet's UPDATE),
// and the same with managed fields, with Object, with ObjectDeferring (as the
// webhook decodes it) and with sigs.k8s.io/json, the floor it is measured
// against.
func BenchmarkDecode(b *testing.B) {
	for _, managed := range []bool{false, true} {
		body := trainingReview(b, managed)
		name := "training"
		if managed {
			name += "/managed-fields"
		}
		b.Run(name+"/jsonmap", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := Object(body); !ok {
					b.Fatal("declined")
				}
			}
		})
		// The webhook's decode: the objects' managedFields deferred.
		b.Run(name+"/jsonmap-deferring", func(b *testing.B) {
			paths := [][]string{{"request", "object", "metadata", "managedFields"}, {"request", "oldObject", "metadata", "managedFields"}}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, ok := ObjectDeferring(body, 4, paths); !ok {
					b.Fatal("declined")
				}
			}
		})
		b.Run(name+"/sigs.k8s.io-json", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := reference(body); !ok {
					b.Fatal("refused")
				}
			}
		})
	}
}
